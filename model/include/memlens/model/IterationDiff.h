#pragma once
// The iteration diff: allocations made in a range of iterations that are still alive at a later
// moment, grouped by allocation stack. Memory that a training loop should have given back by then
// and did not: the evidence of every leak.
#include "memlens/model/Iterations.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <vector>

namespace memlens::model {

// One `alloc` entry of a trace and the entry that freed it (free_requested, or an old trace's
// free); free == -1: still allocated when the trace ends.
// 8 bytes: entry indices in 32 bits (allocationLives refuses a trace of 2^31 entries or more).
struct AllocationLife {
    int32_t alloc = 0;
    int32_t free = -1;
    bool aliveAfter(int64_t entry) const { return free < 0 || free > entry; }
};
// One per `alloc` entry, in trace order. Throws std::length_error for a trace of more than
// 2^31 - 1 entries.
std::vector<AllocationLife> allocationLives(const TraceColumns& trace);

struct SurvivorGroup {
    StackId stack = 0;
    uint64_t bytes = 0;
    uint64_t count = 0;
    int64_t firstIteration = 0;     // number of the first iteration that left a survivor
    int64_t lastIteration = 0;
    uint32_t iterationsWith = 0;    // iterations that left at least one
    std::vector<uint64_t> perIteration;  // bytes left by each iteration of the range, in order
    double bytesPerIteration() const {
        return perIteration.empty() ? 0.0 : static_cast<double>(bytes) / static_cast<double>(perIteration.size());
    }
};

struct Survivors {
    size_t from = 0, to = 0;   // iteration indices (into the split), inclusive
    int64_t aliveAfter = -1;   // survivors: still allocated right after this entry
    uint64_t bytes = 0;
    uint64_t count = 0;
    std::vector<SurvivorGroup> groups;  // by bytes, largest first
};

// Allocations made in iterations [from, to] that are still allocated right after entry
// `aliveAfter`, grouped by stack (bytes: what the alloc entries asked for).
Survivors survivorsOf(const TraceColumns& trace, const std::vector<AllocationLife>& lives,
                      const std::vector<Iteration>& iterations, size_t from, size_t to, int64_t aliveAfter);

} // namespace memlens::model
