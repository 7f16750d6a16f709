#include "memlens/model/SnapshotStats.h"

#include <algorithm>

namespace memlens::model {

std::vector<DeviceStats> computeStats(const Snapshot& snapshot) {
    std::vector<DeviceStats> out;
    for (const DeviceData& dd : snapshot.devices) {
        if (dd.segments.empty() && dd.trace.rows() == 0) continue;
        DeviceStats s;
        s.device = dd.device;
        s.segments = dd.segments.size();
        s.blocks = dd.blocks.size();
        std::map<PoolId, DeviceStats::Pool> pools;
        for (const Segment& seg : dd.segments) {
            s.reservedBytes += seg.totalSize;
            DeviceStats::Pool& p = pools[seg.pool()];
            p.pool = seg.pool();
            ++p.segments;
            p.reservedBytes += seg.totalSize;
            for (uint32_t b = seg.firstBlock; b < seg.firstBlock + seg.blockCount; ++b)
                if (dd.blocks[b].state != BlockState::Inactive) p.allocatedBytes += dd.blocks[b].size;
        }
        for (auto& [id, p] : pools) s.pools.push_back(p);
        for (const Block& b : dd.blocks) {
            if (b.state == BlockState::Inactive) {
                s.freeBytes += b.size;
                s.largestFreeBlock = std::max(s.largestFreeBlock, b.size);
            } else {
                s.allocatedBytes += b.size;
                s.requestedBytes += b.requestedSize;
            }
        }
        s.traceEvents = dd.trace.rows();
        uint64_t counts[kActionCount] = {};
        std::map<StringId, uint64_t> other;
        for (size_t i = 0; i < dd.trace.rows(); ++i) {
            Action a = dd.trace.action[i];
            if (a == Action::Other)
                ++other[dd.trace.actionName[i]];
            else
                ++counts[static_cast<int>(a)];
        }
        for (int a = 0; a < kActionCount; ++a)
            if (counts[a]) s.actions[actionName(static_cast<Action>(a))] += counts[a];
        for (auto [name, n] : other) s.actions[std::string(snapshot.str(name))] += n;
        out.push_back(std::move(s));
    }
    return out;
}

} // namespace memlens::model
