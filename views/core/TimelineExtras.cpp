#include "core/TimelineExtras.h"

#include "core/EntryAxis.h"

namespace memlens::views {

TimelineExtras TimelineExtras::compute(const model::Snapshot& snapshot, int device, const model::DeviceTimeline& timeline) {
    TimelineExtras x;
    x.live = SeriesPyramid(timeline.liveBytes);
    x.reserved = SeriesPyramid(timeline.reservedBytes);
    x.markers = TimelineMarkers::compute(snapshot, device);
    if (const model::DeviceData* d = snapshot.device(device); d && d->trace.rows() > 0) {
        x.timeAxis = true;
        for (uint8_t f : d->trace.flags)
            if (!(f & model::TraceColumns::HasTime)) {
                x.timeAxis = false;
                break;
            }
        x.timeAxis = x.timeAxis && EntryAxis::isNonDecreasing(d->trace.timeUs);
    }
    return x;
}

} // namespace memlens::views
