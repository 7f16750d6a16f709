// whatIf's recording half, on every real snapshot's every device and the bundled example (which
// dies of an out-of-memory error): its figures are those of the state history's states at the
// entries the timeline names (the history is checked against the Python oracle in
// test_allocator_state.cpp), found here by scanning the timeline entry by entry. whatIf takes
// them on a second thread, from one rewind that hands the state before the trace over first
// (the simulation waits for it alone); the TSan build runs this too.
#include "RealSnapshots.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/Timeline.h"
#include "memlens/model/WhatIf.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace memlens::model;

TEST(WhatIf, TheRecordingsFiguresAreTheHistorysStates) {
    std::vector<std::filesystem::path> files = realSnapshots();
    files.push_back(std::filesystem::path(MEMLENS_SOURCE_DIR) / "resources" / "example.pickle");
    size_t devices = 0, ooms = 0;
    for (const auto& file : files) {
        const Snapshot snap = readSnapshotFile(file.string());
        for (const DeviceData& d : snap.devices) {
            SCOPED_TRACE(file.filename().string() + " device " + std::to_string(d.device));
            const WhatIfResult r = whatIf(snap, d.device, SimulatorSettings::fromSnapshot(snap), WorkloadEdits{});
            const DeviceTimeline tl = computeTimeline(d);
            const auto n = static_cast<int64_t>(d.trace.rows());
            // the peak of reserved bytes, the first entry there with the most live bytes
            int64_t best = -1, peak = tl.reservedBefore, live = tl.liveBefore;
            for (int64_t i = 0; i < n; ++i)
                if (tl.reservedBytes[i] > peak || (tl.reservedBytes[i] == peak && tl.liveBytes[i] > live)) {
                    peak = tl.reservedBytes[i];
                    live = tl.liveBytes[i];
                    best = i;
                }
            const StateHistory history(snap, d.device);
            const Outcome& rec = r.recording;
            EXPECT_EQ(rec.peakReservedEntry, best);
            EXPECT_EQ(rec.peakReserved, static_cast<uint64_t>(std::max<int64_t>(0, peak)));
            const DeviceState atPeak = history.stateAfter(best);
            EXPECT_EQ(rec.freeAtPeak, atPeak.freeBytes);
            EXPECT_EQ(rec.largestFreeAtPeak, atPeak.largestFreeBlock);
            EXPECT_DOUBLE_EQ(rec.fragmentationAtPeak, atPeak.fragmentation());
            const int64_t peakLiveAt = n ? static_cast<int64_t>(tl.peakLiveIndex) : -1;
            EXPECT_EQ(rec.peakAllocated, history.stateAfter(peakLiveAt).allocatedBytes);
            int64_t firstOom = -1;
            uint64_t count = 0;
            for (int64_t i = 0; i < n; ++i)
                if (d.trace.action[i] == Action::Oom) {
                    ++count;
                    if (firstOom < 0) firstOom = i;
                }
            EXPECT_EQ(rec.ooms, count);
            ASSERT_EQ(rec.firstOom.has_value(), firstOom >= 0);
            if (firstOom >= 0) {
                const DeviceState there = history.stateAfter(firstOom);
                EXPECT_EQ(rec.firstOom->entry, firstOom);
                EXPECT_EQ(rec.firstOom->sizeAsked, d.trace.size[firstOom]);
                EXPECT_EQ(rec.firstOom->totalFree, there.freeBytes);
                EXPECT_EQ(rec.firstOom->largestFreeBlock, there.largestFreeBlock);
                ++ooms;
            }
            for (const SeriesPoint& p : rec.series) {
                EXPECT_EQ(static_cast<int64_t>(p.reserved),
                          std::max<int64_t>(0, p.entry >= 0 ? tl.reservedBytes[p.entry] : tl.reservedBefore));
                EXPECT_EQ(static_cast<int64_t>(p.live),
                          std::max<int64_t>(0, p.entry >= 0 ? tl.liveBytes[p.entry] : tl.liveBefore));
            }
            ++devices;
        }
    }
    EXPECT_GT(devices, 1u);
    EXPECT_GT(ooms, 0u) << "no device with an oom entry";
}
