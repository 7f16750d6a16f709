#pragma once
// What the timeline draws besides a device's DeviceTimeline: the min/max pyramids of its live
// and reserved curves, its markers, and whether it can be drawn against time. Computed with the
// timeline while the file loads, off the GUI thread (on a 600 MB trace: about 75 ms the window
// no longer spends before its first picture).
#include "memlens/model/Snapshot.h"
#include "memlens/model/Timeline.h"
#include "core/SeriesPyramid.h"
#include "core/TimelineMarkers.h"

namespace memlens::views {

struct TimelineExtras {
    SeriesPyramid live;      // of DeviceTimeline::liveBytes
    SeriesPyramid reserved;  // of DeviceTimeline::reservedBytes
    TimelineMarkers markers;
    bool timeAxis = false;  // every entry has a time and times never go back

    static TimelineExtras compute(const model::Snapshot& snapshot, int device, const model::DeviceTimeline& timeline);
};

} // namespace memlens::views
