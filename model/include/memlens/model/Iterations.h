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

} // namespace memlens::model
