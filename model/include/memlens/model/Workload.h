#pragma once
// What a program asked of the allocator on one device, taken from a snapshot's trace, as the
// input of a replay (AllocatorSimulator): the allocator state before the trace's first entry
// (the rewound state), then in trace order every malloc (the trace's alloc size is the size
// asked; the simulator rounds it), every free (free_completed), every empty_cache (a burst of
// segment_free / segment_unmap not caused by an out-of-memory retry) and every oom. The
// recording's segment addresses go with it, for the simulator to reuse (AddressSpace).
#include "memlens/model/AllocatorSimulator.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace memlens::model {

struct DeviceState;

// An op accounts for the trace entries after the op before it, up to its own position (the replay
// reports the simulator's events against them). 16 bytes: a long trace has millions of them. The
// size a malloc asks and its stream are its allocation's; the device_free of a recorded oom is kept
// aside (Workload::deviceFreeOf). Trace positions are 32-bit: buildWorkload refuses a device trace
// of 2^31 entries or more (a snapshot file of some hundred GB).
struct WorkloadOp {
    enum class Kind : uint8_t { Malloc, Free, EmptyCache };
    Kind kind = Kind::Malloc;
    DeviceRefusal refusal = DeviceRefusal::None;  // Malloc: what the recording's device answered
    uint32_t id = 0;                               // Malloc, Free: the allocation
    uint32_t releases = 0;                         // Malloc with UntilFlush: segments released before its retry
    int32_t position = 0;                          // the trace entry it comes from
};

// 32 bytes, one per allocation of the trace and of the state before it.
struct WorkloadAllocation {
    uint64_t size = 0;          // size asked (a recorded oom: the rounded size; edits may change it)
    uint64_t address = 0;       // recorded address
    int32_t allocEntry = -1;    // its alloc entry; -1: allocated before the trace
    int32_t freeEntry = -1;     // its free_completed entry; -1: never freed in the trace
    StackId stack = 0;
    uint16_t streamIndex = 0;   // into Workload::streamValues
    bool oom = false;           // the malloc of a recorded oom (never got memory)
};

struct InitialSegment {
    uint64_t address = 0, size = 0, stream = 0;
    bool small = false, expandable = false;
    std::vector<InitialBlock> blocks;  // in address order, covering the segment
};

struct Workload {
    int device = 0;
    int64_t traceEntries = 0;
    std::vector<InitialSegment> initial;
    std::vector<WorkloadOp> ops;                 // in trace order
    std::vector<WorkloadAllocation> allocations;  // by id
    std::vector<uint64_t> streamValues;           // the allocations' streams (WorkloadAllocation::streamIndex), at most 65,536
    std::vector<std::pair<uint64_t, uint64_t>> recordedSegments;  // segment_alloc: size, address
    struct Map {
        uint64_t stream, address;
        int64_t position;
    };
    std::vector<Map> recordedMaps;               // segment_map, in trace order
    std::vector<std::pair<uint32_t, uint64_t>> oomDeviceFree;  // recorded ooms: allocation id, device_free; by id
    uint64_t unmatchedFrees = 0;                 // free_completed of no known allocation
    uint64_t estimatedInitialBlocks = 0;         // initial blocks whose size was rebuilt from a free
    uint64_t emptyCacheCalls = 0;
    uint64_t oomRetries = 0;                     // segment_free bursts of a malloc whose retry succeeded
    uint64_t recordedOoms = 0;
    uint64_t streams = 0;
    // What the replay cannot know, as sentences (private pools, settings the snapshot lacks, ...):
    // where the simulation differs from the recording, the reason is likely among them.
    std::vector<std::string> caveats;

    // A fresh address space holding the recording's addresses.
    AddressSpace addressSpace() const;
    // The device_free a recorded oom reported (the malloc of allocation id); 0 for any other.
    uint64_t deviceFreeOf(uint32_t id) const;
    uint64_t streamOf(const WorkloadAllocation& a) const { return streamValues[a.streamIndex]; }
};

// settings: used to rebuild the size of blocks freed during the trace but allocated before it.
// The state before the first entry is rewound from the snapshot's on a second thread while the
// trace is read. Allocation ids: the trace's allocations from 0 in trace order, then the blocks
// allocated before the trace (allocEntry -1).
Workload buildWorkload(const Snapshot& snapshot, int device, const SimulatorSettings& settings);
// The same, the state before the first entry from stateBefore (e.g. a state history's), called on
// this thread once the trace is read: it may wait there for work done meanwhile on another thread.
Workload buildWorkload(const Snapshot& snapshot, int device, const SimulatorSettings& settings,
                       const std::function<DeviceState()>& stateBefore);

} // namespace memlens::model
