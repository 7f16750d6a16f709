#pragma once
// "What if": the recording replayed with other allocator settings, another device capacity or
// an edited workload, side by side with what the recording shows: peak reserved and allocated,
// the first out-of-memory error, fragmentation at the peak, reserved and live bytes over the trace.
#include "memlens/model/Replay.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/WorkloadEdits.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace memlens::model {

struct OomOutcome {
    int64_t entry = -1;            // trace entry
    uint64_t sizeAsked = 0;        // the recording's oom entry holds the rounded size
    uint64_t largestFreeBlock = 0;
    uint64_t totalFree = 0;        // reserved but unallocated
    uint64_t deviceFree = 0;
};

struct SeriesPoint {
    int64_t entry = 0;
    uint64_t reserved = 0;
    uint64_t live = 0;  // bytes asked by live allocations
};

struct Outcome {
    uint64_t peakReserved = 0;
    int64_t peakReservedEntry = -1;
    uint64_t peakAllocated = 0;  // block bytes (recording: at the peak of live bytes)
    uint64_t peakLive = 0;       // bytes asked
    uint64_t freeAtPeak = 0;     // reserved - allocated when reserved peaked
    uint64_t largestFreeAtPeak = 0;
    double fragmentationAtPeak = 0.0;  // 1 - largest free block / free bytes
    std::optional<OomOutcome> firstOom;
    uint64_t ooms = 0;
    std::vector<SeriesPoint> series;
};

struct WhatIfResult {
    SimulatorSettings settings;      // as simulated (capacity included)
    std::string capacitySource;      // "given", "inferred from the recorded oom at entry N", "unlimited"
    EditSummary edits;
    Outcome recording;
    Outcome simulation;
    bool estimated = false;
};

// Throws std::invalid_argument (one line) when a fraction is asked without a capacity to take it of.
WhatIfResult whatIf(const Snapshot& snapshot, int device, const SimulatorSettings& settings,
                    const WorkloadEdits& edits, size_t seriesPoints = 200);

} // namespace memlens::model
