#pragma once
// The doctor's rules on a plain snapshot: what its trace and final state show without an agent.
// Iterations come from annotations or the trace's pattern (or a session's times); the rules read
// the survivors of each iteration, the roles of the allocation stacks, per-iteration peaks and
// the out-of-memory entries. Everything here is estimated from stacks (Finding::estimated).
#include "memlens/model/AllocatorState.h"
#include "memlens/model/Finding.h"
#include "memlens/model/Snapshot.h"

#include <atomic>
#include <optional>
#include <vector>

namespace memlens::model {

struct DoctorOptions {
    // The device to diagnose; -1: the device with the longest trace (else the most reserved).
    int device = -1;
    // A session's iterations, used instead of annotations and patterns when given.
    std::optional<std::vector<TimedIteration>> iterations;
    const std::atomic<bool>* cancel = nullptr;  // checked between rules; throws Cancelled
    // The device's state history when the caller has one already (the window's document); null
    // (or another device's): built here.
    const StateHistory* history = nullptr;
    // The device's state after its last entry when the caller has it (the window's document:
    // finalDeviceState); null: taken from the history.
    const DeviceState* finalState = nullptr;
};

// The device diagnose() picks when options.device is -1; -1 when the snapshot has none. Never
// the pinned host memory (kHostDevice): the doctor reads GPU memory.
int doctorDevice(const Snapshot& snapshot);

DoctorReport diagnoseSnapshot(const Snapshot& snapshot, const DoctorOptions& options = {});

} // namespace memlens::model
