#include "memlens/model/Timeline.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>

namespace memlens::model {

namespace {

DeviceTimeline::PoolSeries poolSeries(const DeviceData& device, PoolId pool) {
    DeviceTimeline::PoolSeries p;
    p.pool = pool;
    std::map<uint64_t, uint64_t> ranges;  // the pool's segments still standing: address -> size
    int64_t reserved = 0;
    for (const Segment& s : device.segments)
        if (s.pool() == pool) {
            ranges[s.address] = s.totalSize;
            reserved += static_cast<int64_t>(s.totalSize);
        }
    auto inside = [&](uint64_t a, uint64_t size) {
        auto it = ranges.upper_bound(a);
        if (it == ranges.begin()) return false;
        --it;
        return a + size <= it->first + it->second;
    };
    const TraceColumns& tr = device.trace;
    const size_t n = tr.rows();
    p.reservedBytes.resize(n);
    for (size_t i = n; i-- > 0;) {
        p.reservedBytes[i] = reserved;
        const auto size = static_cast<int64_t>(tr.size[i]);
        switch (tr.action[i]) {
        case Action::SegmentAlloc:
            if (auto it = ranges.find(tr.addr[i]); it != ranges.end()) {
                reserved -= size;
                ranges.erase(it);
            }
            break;
        case Action::SegmentMap:
            if (inside(tr.addr[i], tr.size[i])) reserved -= size;
            break;
        case Action::SegmentUnmap:
            if (inside(tr.addr[i], tr.size[i])) reserved += size;
            break;
        default: break;
        }
    }
    p.reservedBefore = reserved;
    p.peakReserved = reserved;
    for (int64_t v : p.reservedBytes) p.peakReserved = std::max(p.peakReserved, v);
    return p;
}

} // namespace

DeviceTimeline computeTimeline(const DeviceData& device) {
    DeviceTimeline t;
    int64_t live = 0, reserved = 0;
    for (const Block& b : device.blocks)
        if (b.state != BlockState::Inactive) live += static_cast<int64_t>(b.requestedSize);
    for (const Segment& s : device.segments) reserved += static_cast<int64_t>(s.totalSize);
    const TraceColumns& tr = device.trace;
    size_t n = tr.rows();
    PackedSeries::BackwardWriter liveOut(n), reservedOut(n);
    // the peaks on the way (no second pass over the packed series): the greatest value after an
    // entry, the first entry where it is reached (>=, going backwards)
    int64_t topLive = INT64_MIN, topReserved = INT64_MIN, liveAtTopReserved = INT64_MIN;
    size_t topLiveIndex = 0, topReservedIndex = 0;
    for (size_t i = n; i-- > 0;) {
        liveOut.push(live);
        reservedOut.push(reserved);
        if (live >= topLive) {
            topLive = live;
            topLiveIndex = i;
        }
        if (reserved > topReserved || (reserved == topReserved && live >= liveAtTopReserved)) {
            topReserved = reserved;
            liveAtTopReserved = live;
            topReservedIndex = i;
        }
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
    t.liveBytes = liveOut.take();
    t.reservedBytes = reservedOut.take();
    t.liveBefore = live;
    t.reservedBefore = reserved;
    // the peak is the state before the first entry unless an entry goes above it (index 0 then)
    t.peakLive = live;
    if (n > 0 && topLive > live) {
        t.peakLive = topLive;
        t.peakLiveIndex = topLiveIndex;
    }
    t.peakReserved = std::max(reserved, topReserved);
    if (n > 0 && (topReserved > reserved || (topReserved == reserved && liveAtTopReserved > live)))
        t.peakReservedAt = static_cast<int64_t>(topReservedIndex);
    std::map<PoolId, bool> pools;
    for (const Segment& s : device.segments)
        if (!s.pool().isDefault()) pools[s.pool()] = true;
    for (const auto& [pool, _] : pools) t.privatePools.push_back(poolSeries(device, pool));
    return t;
}

} // namespace memlens::model
