#pragma once
// Changes to a recorded workload, to ask "what if the program did this instead":
// - free the survivors of a set of allocations (those whose stack has a frame matching a
//   substring, or given stacks: a doctor's finding) at the end of the iteration they were made
//   in (annotated iterations, else the trace's pattern: splitIterations): a leak fixed;
// - drop the allocations asked above a size;
// - scale the allocations made under a forward or backward pass by a factor (a smaller batch):
//   an estimate, since not every such tensor scales with the batch;
// the last two in every iteration, or in one (by its number).
#include "memlens/model/Iterations.h"
#include "memlens/model/Workload.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memlens::model {

struct WorkloadEdits {
    std::vector<std::string> freeStacks;  // frame substrings (function or file name)
    std::vector<StackId> freeStackIds;    // whole stacks (a doctor's finding), sorted
    uint64_t dropAbove = 0;               // 0: drop nothing
    double scale = 1.0;                   // 1: unchanged
    std::optional<int64_t> iteration;     // drop / scale only the allocations of this iteration (its number)
    bool any() const { return !freeStacks.empty() || !freeStackIds.empty() || dropAbove != 0 || scale != 1.0; }
};

struct EditSummary {
    uint64_t iterations = 0;     // detected in the snapshot (0: the trace counts as one)
    uint64_t matched = 0;        // allocations whose stack matched freeStacks
    uint64_t freedEarly = 0;     // ... that outlived their iteration and are now freed at its end
    uint64_t bytesFreedEarly = 0;
    uint64_t dropped = 0;
    uint64_t bytesDropped = 0;
    uint64_t scaled = 0;
    bool estimated = false;      // the result is an estimate (scaling)
};

// Whether a stack runs under a forward or backward pass: a frame named forward / backward /
// _forward / run_backward, or the autograd engine.
bool isForwardBackwardStack(const Snapshot& snapshot, StackId stack);
// Whether a stack has a frame whose function or file name contains `needle`.
bool stackMatches(const Snapshot& snapshot, StackId stack, const std::string& needle);

// Edits the workload in place: ops dropped or moved, and a scaled allocation's size (what its
// malloc asks) changed.
EditSummary applyEdits(Workload& workload, const Snapshot& snapshot, const WorkloadEdits& edits);

} // namespace memlens::model
