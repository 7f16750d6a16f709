#pragma once
// The allocator's segments and blocks of one device right after any trace entry.
//
// Built like PyTorch's viewer: start from the snapshot's final state and undo entries backwards,
// but with checkpoints taken on the way, so reaching any entry replays at most one interval.
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace memlens::model {

enum class StateBlockKind : uint8_t {
    Allocated,          // active_allocated
    PendingFree,        // active_pending_free: freed, waiting on other streams
    Free,               // inactive: cached by the allocator
    BeforeRecording,    // allocated before the trace begins (its alloc was never recorded)
};
const char* stateBlockKindName(StateBlockKind k);

struct StateBlock {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requestedSize = 0;
    StateBlockKind kind = StateBlockKind::Free;
    StackId stack = 0;
    int64_t allocIndex = -1;  // trace entry that allocated it; -1 if not in the trace
    bool sizeEstimated = false;  // size rebuilt from a trace entry (rounded up), not read from a block
};

struct StateSegment {
    uint64_t address = 0;
    uint64_t totalSize = 0;
    uint64_t stream = 0;
    bool isExpandable = false;
    bool isLarge = true;
    PoolId pool;  // the snapshot's segment_pool_id; a segment only the trace knows: the default pool
    std::vector<StateBlock> blocks;  // in address order, free gaps included, covering the segment
};

struct DeviceState {
    int device = 0;
    int64_t at = -1;  // right after this trace entry (-1: before the first)
    std::vector<StateSegment> segments;
    uint64_t reservedBytes = 0;
    uint64_t allocatedBytes = 0;  // size of allocated, pending-free and before-recording blocks
    uint64_t requestedBytes = 0;
    uint64_t pendingFreeBytes = 0;
    uint64_t freeBytes = 0;
    uint64_t largestFreeBlock = 0;
    double fragmentation() const {
        return freeBytes ? 1.0 - static_cast<double>(largestFreeBlock) / static_cast<double>(freeBytes) : 0.0;
    }
};

// What a state's blocks say of the trace entry that allocated each.
enum class BlockAllocs {
    // each live block's alloc entry (StateBlock::allocIndex, -1: before the trace) and its stack:
    // the frees of the trace paired with their allocs, a pass over the trace
    Named,
    // none looked up (no such pass): allocIndex -1, a block the trace frees later has the free's
    // stack and size and is BeforeRecording. The bytes, the blocks' places and sizes are the same;
    // so is every field of the state before the first entry (none of its blocks was allocated in
    // the trace).
    Unnamed,
};

// The state right after the last trace entry: the snapshot's own segments and blocks, each live
// block with the trace entry that allocated it. Equal to StateHistory::stateAfter(entries - 1),
// for the cost of one pass over the trace instead of the history's rewinding.
DeviceState finalDeviceState(const Snapshot& snapshot, int device);
// The state before the first trace entry: StateHistory::stateAfter(-1), every field, for the
// cost of the history's one rewind without the checkpoints it keeps on the way, nor its pairs
// (BlockAllocs::Unnamed, which changes nothing there).
DeviceState initialDeviceState(const Snapshot& snapshot, int device);
// The states right after each of `entries` (as stateAfter: -1 before the first entry, clamped to
// the trace), in the order given, from the history's one rewind without its checkpoints: for a
// few states, where a history would rewind as much and then keep checkpoints for any entry.
// Unnamed: without the pass that names the blocks' allocs (for their bytes only).
std::vector<DeviceState> deviceStatesAfter(const Snapshot& snapshot, int device, const std::vector<int64_t>& entries,
                                           BlockAllocs allocs = BlockAllocs::Named);
// deviceStatesAfter's states, each handed to take (its place in entries, the state) on the
// calling thread as soon as it is there, earliest entry first: the state before the first entry
// as soon as the rewind ends, before the rewind materialises the others (what-if's simulation
// waits for it alone), the snapshot's own last. A state asked for twice is handed over twice.
void takeDeviceStatesAfter(const Snapshot& snapshot, int device, const std::vector<int64_t>& entries, BlockAllocs allocs,
                           const std::function<void(size_t, DeviceState)>& take);

class StateHistory {
public:
    // interval: entries between checkpoints; 0 picks one from the trace length and state size.
    StateHistory(const Snapshot& snapshot, int device, size_t interval = 0);
    ~StateHistory();
    StateHistory(StateHistory&&) noexcept;
    StateHistory& operator=(StateHistory&&) noexcept;

    int device() const;
    int64_t entries() const;
    // State right after entry `at` (-1: before the first entry; entries()-1: the snapshot itself).
    DeviceState stateAfter(int64_t at) const;
    size_t checkpointCount() const;
    size_t memoryBytes() const;

private:
    friend void takeDeviceStatesAfter(const Snapshot&, int, const std::vector<int64_t>&, BlockAllocs,
                                      const std::function<void(size_t, DeviceState)>&);
    using StateTaker = std::function<void(int64_t at, DeviceState&&)>;
    // The states after `capture` (sorted, descending, within the trace, none its last entry)
    // handed to `take` after the rewind, earliest first; such a history keeps no checkpoint
    // (stateAfter answers only for the last entry).
    StateHistory(const Snapshot& snapshot, int device, size_t interval, const std::vector<int64_t>& capture,
                 const StateTaker* take, BlockAllocs allocs = BlockAllocs::Named);
    struct Impl;
    std::unique_ptr<Impl> d_;
};

} // namespace memlens::model
