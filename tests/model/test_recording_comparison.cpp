// RecordingComparison: the simulator's events against the recorded trace as they come. The
// recordings are small and the expected answers are worked out by hand from the rule: entries
// other than alloc, free_completed / free, segment_* and oom are skipped; an event matches the next
// compared entry by action (free matches free_completed), size and address (not for oom).
#include "memlens/model/RecordingComparison.h"
#include "memlens/model/Replay.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/Workload.h"

#include "Synthetic.h"

#include <gtest/gtest.h>

#include <vector>

using namespace memlens::model;

namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t S = 0x7f0000000000;

//   0 segment_alloc S 2 MiB   1 alloc S 500   2 alloc S+512 1000   3 free_requested S 500
//   4 free_completed S 500    5 snapshot      6 oom 4 GiB (addr: device_free)   7 free S+512 1000
Snapshot recording() {
    using namespace synth;
    P seg = segment(0, S, {{S, 2 * MiB, 0, "inactive", nullptr}});
    return read(snapshot({seg}, {{entry("segment_alloc", S, 2 * MiB), entry("alloc", S, 500),
                                  entry("alloc", S + 512, 1000), entry("free_requested", S, 500),
                                  entry("free_completed", S, 500), entry("snapshot", 0, 0),
                                  entry("oom", 123, 4096 * MiB), entry("free", S + 512, 1000)}}));
}

SimEvent ev(Action a, uint64_t addr, uint64_t size) { return SimEvent{a, 0, addr, size, 0}; }

std::vector<SimEvent> theRecordedEvents() {
    return {ev(Action::SegmentAlloc, S, 2 * MiB), ev(Action::Alloc, S, 500), ev(Action::Alloc, S + 512, 1000),
            ev(Action::FreeCompleted, S, 500),
            ev(Action::Oom, 999, 4096 * MiB),  // oom: the address (device_free) is not compared
            ev(Action::FreeCompleted, S + 512, 1000)};
}

Fidelity compare(const Snapshot& snap, const std::vector<SimEvent>& events) {
    RecordingComparison c(*snap.device(0));
    for (const SimEvent& e : events) c.onEvent(e);
    return c.finish(7);
}

} // namespace

TEST(RecordingComparison, EveryEventMatches) {
    const Snapshot snap = recording();
    const Fidelity f = compare(snap, theRecordedEvents());
    EXPECT_TRUE(f.exact());
    EXPECT_EQ(f.first.entry, -1);
    EXPECT_EQ(f.allocations, 2u);
    EXPECT_EQ(f.comparedEntries, 6u);  // not free_requested, not snapshot
    EXPECT_EQ(f.matchingEntries, 6u);
    EXPECT_EQ(f.extraSimulatedEvents, 0u);
    EXPECT_EQ(f.atRecordedAddress, 7u);
}

TEST(RecordingComparison, TheFirstDifferenceAndNothingAfterIt) {
    const Snapshot snap = recording();
    std::vector<SimEvent> events = theRecordedEvents();
    events[2].addr = S + 1024;  // the second alloc elsewhere
    events[3].size = 1;         // a later difference is not the first
    const Fidelity f = compare(snap, events);
    EXPECT_FALSE(f.exact());
    EXPECT_EQ(f.first.entry, 2);
    EXPECT_EQ(f.first.recordedAction, Action::Alloc);
    EXPECT_EQ(f.first.recordedAddr, S + 512);
    EXPECT_EQ(f.first.recordedSize, 1000u);
    EXPECT_TRUE(f.first.simulated);
    EXPECT_EQ(f.first.simulatedAddr, S + 1024);
    EXPECT_EQ(f.first.simulatedIndex, 2);
    EXPECT_EQ(f.matchingEntries, 2u);
    EXPECT_EQ(f.comparedEntries, 6u);
}

TEST(RecordingComparison, OomSizeIsCompared) {
    const Snapshot snap = recording();
    std::vector<SimEvent> events = theRecordedEvents();
    events[4].size = 2048 * MiB;
    const Fidelity f = compare(snap, events);
    EXPECT_EQ(f.first.entry, 6);  // the oom entry: free_requested and snapshot are skipped
    EXPECT_EQ(f.first.recordedAction, Action::Oom);
    EXPECT_EQ(f.first.simulatedIndex, 4);
    EXPECT_EQ(f.matchingEntries, 4u);
}

TEST(RecordingComparison, TheEventsRunOut) {
    const Snapshot snap = recording();
    std::vector<SimEvent> events = theRecordedEvents();
    events.resize(4);
    const Fidelity f = compare(snap, events);
    EXPECT_FALSE(f.exact());
    EXPECT_EQ(f.first.entry, 6);  // the next compared entry after free_completed at 4
    EXPECT_EQ(f.first.recordedAction, Action::Oom);
    EXPECT_EQ(f.first.recordedSize, 4096 * MiB);
    EXPECT_FALSE(f.first.simulated);
    EXPECT_EQ(f.first.simulatedIndex, -1);
    EXPECT_EQ(f.matchingEntries, 4u);
}

TEST(RecordingComparison, EventsAfterTheRecordingsLast) {
    const Snapshot snap = recording();
    std::vector<SimEvent> events = theRecordedEvents();
    events.push_back(ev(Action::SegmentFree, S, 2 * MiB));
    events.push_back(ev(Action::Alloc, S, 512));
    const Fidelity f = compare(snap, events);
    EXPECT_FALSE(f.exact());
    EXPECT_EQ(f.first.entry, -1);
    EXPECT_EQ(f.extraSimulatedEvents, 2u);
    EXPECT_TRUE(f.first.simulated);
    EXPECT_EQ(f.first.simulatedAction, Action::SegmentFree);
    EXPECT_EQ(f.first.simulatedIndex, 6);
    EXPECT_EQ(f.matchingEntries, 6u);
}

// A replay that hands its events to the comparison keeps none of them, and its figures are those
// of the recording: segment_alloc, two allocs, a free (4 events; the trace has no oom here).
TEST(RecordingComparison, AsTheSinkOfAReplay) {
    using namespace synth;
    P seg = segment(0, S,
                    {{S, 512, 0, "inactive", nullptr},
                     {S + 512, 1024, 1000, "active_allocated", nullptr},
                     {S + 1536, 2 * MiB - 1536, 0, "inactive", nullptr}});
    const Snapshot snap = read(snapshot({seg}, {{entry("segment_alloc", S, 2 * MiB), entry("alloc", S, 500),
                                                 entry("alloc", S + 512, 1000), entry("free_requested", S, 500),
                                                 entry("free_completed", S, 500)}}));
    const SimulatorSettings settings = SimulatorSettings::fromSnapshot(snap);
    const Workload w = buildWorkload(snap, 0, settings);
    RecordingComparison comparison(*snap.device(0));
    ReplayOptions options;
    options.sink = &comparison;
    const ReplayResult r = replay(w, settings, options);
    EXPECT_TRUE(r.events.empty());
    EXPECT_EQ(r.eventCount, 4u);
    const Fidelity f = comparison.finish(r.atRecordedAddress);
    EXPECT_TRUE(f.exact());
    EXPECT_EQ(f.matchingEntries, 4u);
    EXPECT_EQ(f.allocations, 2u);
    EXPECT_EQ(f.atRecordedAddress, 2u);
}
