#pragma once
// Live (requested) and reserved bytes right after each trace entry of a device, rewound from
// the snapshot's final state.
#include "memlens/model/PackedSeries.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <vector>

namespace memlens::model {

struct DeviceTimeline {
    // Totals right after entry i. At the end, live is the sum of requested_size of active blocks and
    // reserved the sum of segments' total_size; going back, each entry's effect is undone:
    // alloc +size, free_completed -size to live; segment_alloc/segment_map +size, segment_free/
    // segment_unmap -size to reserved. These are exact; they can dip below zero only where the
    // snapshot and its trace disagree (see clampedLive). Packed (PackedSeries): about 4 bytes an
    // entry for the live bytes, a fraction of a byte for the reserved (they change with segments only).
    PackedSeries liveBytes;
    PackedSeries reservedBytes;
    int64_t liveBefore = 0;      // before the first entry
    int64_t reservedBefore = 0;
    int64_t peakLive = 0;
    int64_t peakReserved = 0;
    size_t peakLiveIndex = 0;
    // The first entry at the peak of reserved bytes that has the most live bytes of those; -1: no
    // entry is above the state before the first (reserved, then live bytes).
    int64_t peakReservedAt = -1;

    // The reserved bytes of each private pool (CUDA graphs, MemPool: segment_pool_id other than
    // (0, 0)) right after each entry. Trace entries do not name a pool: a pool's memory is that of
    // its segments in the snapshot, rewound through the segment_alloc / segment_map / segment_unmap
    // entries at their addresses. A pool's segment freed before the snapshot is not attributed.
    struct PoolSeries {
        PoolId pool;
        std::vector<int64_t> reservedBytes;
        int64_t reservedBefore = 0;
        int64_t peakReserved = 0;
    };
    std::vector<PoolSeries> privatePools;  // sorted by pool; empty when every segment is in the default pool
};

DeviceTimeline computeTimeline(const DeviceData& device);

} // namespace memlens::model
