#include "memlens/model/Timeline.h"

namespace memlens::model {

DeviceTimeline computeTimeline(const DeviceData& device) {
    DeviceTimeline t;
    int64_t live = 0, reserved = 0;
    for (const Block& b : device.blocks)
        if (b.state != BlockState::Inactive) live += static_cast<int64_t>(b.requestedSize);
    for (const Segment& s : device.segments) reserved += static_cast<int64_t>(s.totalSize);
    const TraceColumns& tr = device.trace;
    size_t n = tr.rows();
    t.liveBytes.resize(n);
    t.reservedBytes.resize(n);
    for (size_t i = n; i-- > 0;) {
        t.liveBytes[i] = live;
        t.reservedBytes[i] = reserved;
        auto size = static_cast<int64_t>(tr.size[i]);
        switch (tr.action[i]) {
        case Action::Alloc: live -= size; break;
        case Action::FreeCompleted:
        case Action::Free: live += size; break;  // old traces: free_requested + free_completed in one
        case Action::SegmentAlloc:
        case Action::SegmentMap: reserved -= size; break;
        case Action::SegmentFree:
        case Action::SegmentUnmap: reserved += size; break;
        default: break;
        }
    }
    t.liveBefore = live;
    t.reservedBefore = reserved;
    t.peakLive = live;
    t.peakReserved = reserved;
    for (size_t i = 0; i < n; ++i) {
        if (t.liveBytes[i] > t.peakLive) {
            t.peakLive = t.liveBytes[i];
            t.peakLiveIndex = i;
        }
        if (t.reservedBytes[i] > t.peakReserved) t.peakReserved = t.reservedBytes[i];
    }
    return t;
}

} // namespace memlens::model
