#pragma once
// The allocator state that a what-if simulation reaches right after a trace entry, in the form
// the views draw (DeviceState): the block map can show the simulated state beside the recorded.
#include "memlens/model/AllocatorState.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/WorkloadEdits.h"

#include <cstdint>

namespace memlens::model {

class Snapshot;

// settings: as simulated (WhatIfResult::settings, the capacity included); entry -1: before the
// first entry. Blocks are Allocated or Free (the simulator keeps no stacks: stack 0), each
// segment a cudaMalloc'ed segment or a mapped run of an expandable reservation.
DeviceState simulatedStateAfter(const Snapshot& snapshot, int device, const SimulatorSettings& settings,
                                const WorkloadEdits& edits, int64_t entry);

} // namespace memlens::model
