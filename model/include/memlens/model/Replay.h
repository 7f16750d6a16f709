#pragma once
// Replays a Workload through AllocatorSimulator, and compares the simulated trace with the
// recorded one (the fidelity of the model: with the recording's own settings every allocation
// should land at its recorded address, with the same segment events).
#include "memlens/model/AllocatorSimulator.h"
#include "memlens/model/Workload.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace memlens::model {

struct ReplayOptions {
    // true: a malloc that ran out of memory in the recording is refused by the device there (the
    // capacity is unknown); false: only the settings' capacity / fraction decide.
    bool recordedRefusals = true;
    // keep the reserved / requested bytes after every op (for series)
    bool series = true;
    // with series: after these ops only (indices into Workload::ops, ascending), not after every op
    const std::vector<size_t>* seriesOps = nullptr;
    // stop before the first op of a later trace entry (the state right after that entry)
    int64_t stopAfterEntry = std::numeric_limits<int64_t>::max();
    // keep the simulator's segments and blocks as they are at the end (ReplayResult::segments)
    bool keepSegments = false;
    // keep the simulator's events (ReplayResult::events; what-if and the simulated state need none)
    bool events = true;
    // hand each event to this sink as it is made instead (ReplayResult::events stays empty): a
    // comparison with the recording (RecordingComparison) or a writer needs none kept
    SimEventSink* sink = nullptr;
};

struct ReplayResult {
    std::vector<SimEvent> events;          // with ReplayOptions::events and no sink
    uint64_t eventCount = 0;               // events made, kept or not
    std::vector<SimOom> ooms;
    PeakState peak;                        // when reserved was highest
    uint64_t peakAllocated = 0;            // block bytes
    uint64_t peakRequested = 0;            // bytes asked (live)
    uint64_t finalReserved = 0;
    uint64_t initialReserved = 0;           // before the first op
    uint64_t initialRequested = 0;
    std::vector<uint64_t> reservedAfter;   // per op (series), or per op of ReplayOptions::seriesOps
    std::vector<uint64_t> requestedAfter;  // per op (series), or per op of ReplayOptions::seriesOps
    uint64_t allocations = 0;              // mallocs of the trace that got memory
    uint64_t atRecordedAddress = 0;        // ... at the address the recording has
    uint64_t segmentAddressesRecorded = 0; // new segments / reservations at a recorded address
    uint64_t segmentAddressesInvented = 0;
    uint64_t unknownFrees = 0;             // frees of allocations the simulation never made
    std::vector<AllocatorSimulator::SegmentView> segments;  // with ReplayOptions::keepSegments
};

ReplayResult replay(const Workload& workload, const SimulatorSettings& settings, const ReplayOptions& options = {});

// The first recorded trace entry the simulation does not reproduce. Compared: alloc,
// free_completed (and the old 'free'), segment_alloc, segment_free, segment_map, segment_unmap
// (action, address, size) and oom (size); free_requested, snapshot and annotations are not the
// allocator's decisions.
struct FirstDifference {
    int64_t entry = -1;  // recorded trace index; -1: none
    Action recordedAction = Action::Other;
    uint64_t recordedAddr = 0, recordedSize = 0;
    bool simulated = false;  // false: the simulation had no more events
    Action simulatedAction = Action::Other;
    uint64_t simulatedAddr = 0, simulatedSize = 0;
    int64_t simulatedIndex = -1;  // index into the simulated events
};

struct Fidelity {
    uint64_t allocations = 0;         // alloc entries of the recording
    uint64_t atRecordedAddress = 0;   // simulated at the same address
    uint64_t comparedEntries = 0;     // recorded entries compared
    uint64_t matchingEntries = 0;     // ... before the first difference
    uint64_t extraSimulatedEvents = 0;  // simulated events after the recording's last
    FirstDifference first;
    bool exact() const { return first.entry < 0 && extraSimulatedEvents == 0; }
};

// The replay's kept events against the recording (RecordingComparison does the same as they come).
Fidelity compareWithRecording(const ReplayResult& result, const DeviceData& device);

} // namespace memlens::model
