#pragma once
// Per-device figures of a snapshot's final state, as `memlens-cli stats` prints them.
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace memlens::model {

struct DeviceStats {
    int device = 0;
    uint64_t segments = 0;
    uint64_t blocks = 0;
    uint64_t reservedBytes = 0;     // sum of segments' total_size
    uint64_t allocatedBytes = 0;    // sum of size of active_allocated and active_pending_free blocks
    uint64_t requestedBytes = 0;    // sum of requested_size of those blocks
    uint64_t freeBytes = 0;         // sum of size of inactive blocks
    uint64_t largestFreeBlock = 0;  // largest inactive block
    uint64_t traceEvents = 0;
    std::map<std::string, uint64_t> actions;  // action name -> count, only those that occur
    struct Pool {
        PoolId pool;
        uint64_t segments = 0;
        uint64_t reservedBytes = 0;
        uint64_t allocatedBytes = 0;  // as allocatedBytes above, within the pool's segments
    };
    std::vector<Pool> pools;  // every pool with a segment, sorted by pool
};

// One entry per device that owns a segment or has at least one trace entry, sorted by device.
std::vector<DeviceStats> computeStats(const Snapshot& snapshot);

} // namespace memlens::model
