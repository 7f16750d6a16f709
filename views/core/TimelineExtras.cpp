#include "core/TimelineExtras.h"

#include "core/EntryAxis.h"

namespace memlens::views {

TimelineExtras TimelineExtras::compute(const model::Snapshot& snapshot, int device, const model::DeviceTimeline& timeline) {
    TimelineExtras x;
    x.live = SeriesPyramid(timeline.liveBytes);
    x.reserved = SeriesPyramid(timeline.reservedBytes);
    const model::DeviceData* d = snapshot.device(device);
    x.timeAxis = d && EntryAxis::timesUsable(d->trace);
    x.markers = TimelineMarkers::compute(snapshot, device, x.timeAxis);
    return x;
}

} // namespace memlens::views
