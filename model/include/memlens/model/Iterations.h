#pragma once
// The training iterations of a plain snapshot, from its external_annotations: ranges named like
// "ProfilerStep#12", "iteration 12", "## iteration 12 ##", "iter_12", "step 12", mapped onto one
// device's trace entries by time (annotations and trace entries share the clock).
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::model {

struct Iteration {
    int64_t number = 0;
    std::string name;
    int64_t firstEntry = 0;  // first trace entry inside it
    int64_t lastEntry = -1;  // last trace entry inside it (lastEntry < firstEntry: none)
};

// The iteration number an annotation name stands for, or nothing when it names no iteration.
std::optional<int64_t> iterationNumber(std::string_view name);

// In trace order; empty when the snapshot has no iteration annotations or its trace no times.
std::vector<Iteration> detectIterations(const Snapshot& snapshot, int device);

// The iteration holding trace entry `entry` (index into `iterations`), or -1.
int64_t iterationOf(const std::vector<Iteration>& iterations, int64_t entry);

// Where a split into iterations came from.
enum class IterationSource : uint8_t {
    None,         // no iterations found: the trace is one stretch
    Annotations,  // external_annotations (detectIterations)
    Pattern,      // the trace's repeating pattern: one allocation stack recurring once per iteration
    Session,      // a session's iterations, mapped onto the trace by time
};
const char* iterationSourceName(IterationSource s);

struct IterationSplit {
    std::vector<Iteration> iterations;  // in trace order
    IterationSource source = IterationSource::None;
    // The trace ends inside the last iteration (dumped mid-step or at an out-of-memory error):
    // its unfreed memory is work in progress, not growth.
    bool lastIncomplete = false;
    StackId anchor = 0;  // Pattern: the stack whose allocation opens each iteration
    std::string note;    // how the split was found, one sentence

    // Iterations that ran to their end (all but an incomplete last one).
    size_t complete() const { return iterations.size() - (lastIncomplete && !iterations.empty() ? 1 : 0); }
};

// The iterations of one device's trace: from annotations when it has them, else from its
// repeating pattern (at least two repeats).
IterationSplit splitIterations(const Snapshot& snapshot, int device);
// The pattern alone (tests, and snapshots whose annotations mark something else).
IterationSplit iterationsFromPattern(const Snapshot& snapshot, int device);
// Iterations given by time ranges [startUs, endUs] (a session's), mapped onto the trace.
struct TimedIteration {
    int64_t number = 0;
    std::string name;
    int64_t startUs = 0, endUs = 0;
};
IterationSplit iterationsFromTimes(const Snapshot& snapshot, int device, const std::vector<TimedIteration>& timed);

} // namespace memlens::model
