// Allocator state at any entry: synthetic traces with states worked out by hand, expandable
// segments, traces that start mid-stream, and checkpoints against plain rewinding on real files.
#include "Oracle.h"
#include "RealSnapshots.h"
#include "Synthetic.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/Timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>

using namespace memlens::model;
using namespace synth;

namespace {

constexpr uint64_t S = 0x100000;     // segment start
constexpr uint64_t MiB2 = 2u << 20;  // segment size

// "kind@offset+size" for each block, offsets from the segment start
std::vector<std::string> layout(const DeviceState& st, size_t seg = 0) {
    std::vector<std::string> out;
    if (seg >= st.segments.size()) return out;
    const auto& s = st.segments[seg];
    for (const auto& b : s.blocks)
        out.push_back(std::string(stateBlockKindName(b.kind)) + "@" + std::to_string(b.address - s.address) + "+" +
                      std::to_string(b.size));
    return out;
}

Snapshot smallTrace() {
    P fa = list({frame("a", "t.py", 1)});
    P fb = list({frame("b", "t.py", 2)});
    // final: A freed, B (5000 -> 5120) and C (512) alive
    P seg = segment(0, S,
                    {{S, 1024, 1000, "inactive", nullptr},
                     {S + 1024, 5120, 5000, "active_allocated", fb},
                     {S + 6144, 512, 512, "active_allocated", nullptr},
                     {S + 6656, MiB2 - 6656, 0, "inactive", nullptr}});
    return read(snapshot({seg}, {{entry("segment_alloc", S, MiB2),   // 0
                                  entry("alloc", S, 1000, fa),         // 1
                                  entry("alloc", S + 1024, 5000, fb),  // 2
                                  entry("free_requested", S, 1000, fa),  // 3
                                  entry("free_completed", S, 1000, fa),  // 4
                                  entry("alloc", S + 6144, 512)}}));   // 5
}

} // namespace

TEST(AllocatorState, EveryEntryOfASmallTrace) {
    Snapshot snap = smallTrace();
    for (size_t interval : {size_t(1), size_t(2), size_t(1000)}) {
        SCOPED_TRACE(interval);
        StateHistory h(snap, 0, interval);
        ASSERT_EQ(h.entries(), 6);
        EXPECT_TRUE(h.stateAfter(-1).segments.empty());
        EXPECT_EQ(h.stateAfter(-1).reservedBytes, 0u);
        EXPECT_EQ(layout(h.stateAfter(0)), (std::vector<std::string>{"inactive@0+2097152"}));
        EXPECT_EQ(layout(h.stateAfter(1)),
                  (std::vector<std::string>{"active_allocated@0+1024", "inactive@1024+2096128"}));
        EXPECT_EQ(h.stateAfter(1).requestedBytes, 1000u);
        EXPECT_EQ(layout(h.stateAfter(2)), (std::vector<std::string>{"active_allocated@0+1024", "active_allocated@1024+5120",
                                                                     "inactive@6144+2091008"}));
        EXPECT_EQ(layout(h.stateAfter(3)), (std::vector<std::string>{"active_pending_free@0+1024",
                                                                     "active_allocated@1024+5120", "inactive@6144+2091008"}));
        EXPECT_EQ(h.stateAfter(3).pendingFreeBytes, 1024u);
        EXPECT_EQ(layout(h.stateAfter(4)),
                  (std::vector<std::string>{"inactive@0+1024", "active_allocated@1024+5120", "inactive@6144+2091008"}));
        DeviceState last = h.stateAfter(5);
        EXPECT_EQ(layout(last), (std::vector<std::string>{"inactive@0+1024", "active_allocated@1024+5120",
                                                          "active_allocated@6144+512", "inactive@6656+2090496"}));
        EXPECT_EQ(last.allocatedBytes, 5632u);
        EXPECT_EQ(last.requestedBytes, 5512u);
        EXPECT_EQ(last.freeBytes, MiB2 - 5632);
        EXPECT_EQ(last.largestFreeBlock, 2090496u);
        EXPECT_NEAR(last.fragmentation(), 1.0 - 2090496.0 / (MiB2 - 5632.0), 1e-12);
        // who allocated what
        const DeviceState after2 = h.stateAfter(2);  // by value: a reference into it must not outlive it
        const auto& b = after2.segments[0].blocks[0];
        EXPECT_EQ(b.allocIndex, 1);
        EXPECT_EQ(snap.str(snap.frames[snap.stackBegin(b.stack)[0]].name), "a");
        EXPECT_EQ(h.stateAfter(5).segments[0].blocks[1].allocIndex, 2);
    }
}

TEST(AllocatorState, FreesOfBlocksNeverSeenAllocatedWereAllocatedBeforeRecording) {
    P seg = segment(0, S, {{S, MiB2, 0, "inactive", nullptr}});
    Snapshot snap = read(snapshot({seg}, {{entry("free_requested", S + 4096, 3000), entry("free_completed", S + 4096, 3000)}}));
    StateHistory h(snap, 0);
    auto before = h.stateAfter(-1);
    EXPECT_EQ(layout(before), (std::vector<std::string>{"inactive@0+4096", "allocated_before_recording@4096+3072",
                                                        "inactive@7168+2089984"}));
    EXPECT_TRUE(before.segments[0].blocks[1].sizeEstimated);
    EXPECT_EQ(before.segments[0].blocks[1].allocIndex, -1);
    EXPECT_EQ(layout(h.stateAfter(0))[1], "active_pending_free@4096+3072");
    EXPECT_EQ(layout(h.stateAfter(1)), (std::vector<std::string>{"inactive@0+2097152"}));
}

// Old traces merge free_requested and free_completed into one `free` entry: the block goes back
// to the cache and live bytes fall by its size (worked out by hand: 1000 + 5000 requested, then
// 1000 freed).
TEST(AllocatorState, OldMergedFreeEntries) {
    P seg = segment(0, S,
                    {{S, 1024, 1000, "inactive", nullptr},
                     {S + 1024, 5120, 5000, "active_allocated", nullptr},
                     {S + 6144, MiB2 - 6144, 0, "inactive", nullptr}});
    Snapshot snap = read(snapshot({seg}, {{entry("segment_alloc", S, MiB2), entry("alloc", S, 1000),
                                          entry("alloc", S + 1024, 5000), entry("free", S, 1000)}}));
    StateHistory h(snap, 0, 1);
    EXPECT_EQ(layout(h.stateAfter(2)), (std::vector<std::string>{"active_allocated@0+1024", "active_allocated@1024+5120",
                                                                 "inactive@6144+2091008"}));
    EXPECT_EQ(layout(h.stateAfter(3)),
              (std::vector<std::string>{"inactive@0+1024", "active_allocated@1024+5120", "inactive@6144+2091008"}));
    auto tl = computeTimeline(*snap.device(0));
    EXPECT_EQ(tl.liveBytes.toVector(), (std::vector<int64_t>{0, 1000, 6000, 5000}));
    EXPECT_EQ(tl.reservedBytes.toVector(), (std::vector<int64_t>{int64_t(MiB2), int64_t(MiB2), int64_t(MiB2), int64_t(MiB2)}));
}

TEST(AllocatorState, ExpandableSegmentsMapAndUnmap) {
    constexpr uint64_t E = 0x10000000;
    // final: pages [E, E+2M) and [E+4M, E+6M) mapped; [E+2M, E+4M) was unmapped at the end
    P s1 = segment(0, E, {{E, MiB2, 0, "inactive", nullptr}}, true);
    P s2 = segment(0, E + 2 * MiB2, {{E + 2 * MiB2, MiB2, 0, "inactive", nullptr}}, true);
    Snapshot snap = read(snapshot({s1, s2}, {{entry("segment_map", E, MiB2), entry("segment_map", E + MiB2, MiB2),
                                              entry("segment_map", E + 2 * MiB2, MiB2),
                                              entry("segment_unmap", E + MiB2, MiB2)}}));
    StateHistory h(snap, 0, 1);
    auto sizes = [](const DeviceState& st) {
        std::vector<std::pair<uint64_t, uint64_t>> v;
        for (const auto& s : st.segments) v.push_back({s.address - E, s.totalSize});
        return v;
    };
    using V = std::vector<std::pair<uint64_t, uint64_t>>;
    EXPECT_EQ(sizes(h.stateAfter(3)), (V{{0, MiB2}, {2 * MiB2, MiB2}}));
    EXPECT_EQ(sizes(h.stateAfter(2)), (V{{0, 3 * MiB2}}));
    EXPECT_EQ(sizes(h.stateAfter(1)), (V{{0, 2 * MiB2}}));
    EXPECT_EQ(sizes(h.stateAfter(0)), (V{{0, MiB2}}));
    EXPECT_EQ(sizes(h.stateAfter(-1)), V{});
    // the timeline's reserved bytes agree at every entry
    auto tl = computeTimeline(*snap.device(0));
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(static_cast<int64_t>(h.stateAfter(i).reservedBytes), tl.reservedBytes[i]);
}

namespace {

// Every field of every segment and block: what the checkpoints keep (coded) must come back.
std::vector<std::string> fullLayout(const DeviceState& st) {
    std::vector<std::string> out;
    for (const auto& s : st.segments) {
        out.push_back("segment " + std::to_string(s.address) + "+" + std::to_string(s.totalSize) + " stream " +
                      std::to_string(s.stream) + (s.isExpandable ? " expandable" : "") + (s.isLarge ? " large" : "") +
                      " " + poolName(s.pool));
        for (const auto& b : s.blocks)
            out.push_back(std::string(stateBlockKindName(b.kind)) + "@" + std::to_string(b.address - s.address) + "+" +
                          std::to_string(b.size) + " requested " + std::to_string(b.requestedSize) + " stack " +
                          std::to_string(b.stack) + " alloc " + std::to_string(b.allocIndex) +
                          (b.sizeEstimated ? " estimated" : ""));
    }
    return out;
}

// Calls f(file, snapshot, device) for every device of every real snapshot, under a trace naming
// both; false when there are none (the test then skips).
template <class F>
bool forEachRealDevice(F&& f) {
    const auto files = realSnapshots();
    for (const auto& file : files) {
        const Snapshot snap = readSnapshotFile(file.string());
        for (const auto& d : snap.devices) {
            SCOPED_TRACE(file.filename().string() + " device " + std::to_string(d.device));
            f(file, snap, d);
        }
    }
    return !files.empty();
}
} // namespace

TEST(AllocatorState, CheckpointsGiveTheSameStatesAsPlainRewinding) {
    auto files = realSnapshots();
    if (files.empty()) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    std::mt19937_64 rng(42);
    for (const auto& f : files) {
        Snapshot snap = readSnapshotFile(f.string());
        for (const auto& d : snap.devices) {
            if (d.trace.rows() < 2) continue;
            SCOPED_TRACE(f.filename().string() + " device " + std::to_string(d.device));
            StateHistory dense(snap, d.device, 256);
            StateHistory plain(snap, d.device, size_t(1) << 30);  // only the two ends
            auto tl = computeTimeline(d);
            std::uniform_int_distribution<int64_t> pick(-1, dense.entries() - 1);
            for (int k = 0; k < 25; ++k) {
                int64_t i = pick(rng);
                DeviceState a = dense.stateAfter(i);
                DeviceState b = plain.stateAfter(i);
                ASSERT_EQ(fullLayout(a), fullLayout(b)) << "at " << i;
                int64_t reservedTimeline = i < 0 ? tl.reservedBefore : tl.reservedBytes[i];
                EXPECT_EQ(static_cast<int64_t>(a.reservedBytes), reservedTimeline) << "at " << i;
            }
        }
    }
}

TEST(AllocatorState, TimelinePeaksAreThoseOfTheOraclesCurves) {
    const bool any = forEachRealDevice([](const std::filesystem::path& file, const Snapshot&, const DeviceData& d) {
        const DeviceTimeline tl = computeTimeline(d);
        // the totals after each entry as Python's pickle reads the file, rewound from its state
        const auto expected = oracle::run({"peaks", file.string(), "--device", std::to_string(d.device)});
        ASSERT_TRUE(expected) << "the oracle failed";
        EXPECT_EQ(tl.liveBefore, expected->at("live_before").get<int64_t>());
        EXPECT_EQ(tl.reservedBefore, expected->at("reserved_before").get<int64_t>());
        EXPECT_EQ(tl.peakLive, expected->at("peak_live").get<int64_t>());
        EXPECT_EQ(tl.peakLiveIndex, expected->at("peak_live_index").get<size_t>());
        EXPECT_EQ(tl.peakReserved, expected->at("peak_reserved").get<int64_t>());
        EXPECT_EQ(tl.peakReservedAt, expected->at("peak_reserved_at").get<int64_t>());
    });
    if (!any) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
}

TEST(AllocatorState, FinalDeviceStateOfASmallTrace) {
    // by construction: B allocated by entry 2, C by entry 5; A freed
    Snapshot snap = smallTrace();
    DeviceState st = finalDeviceState(snap, 0);
    EXPECT_EQ(st.at, 5);
    EXPECT_EQ(layout(st), (std::vector<std::string>{"inactive@0+1024", "active_allocated@1024+5120",
                                                    "active_allocated@6144+512", "inactive@6656+2090496"}));
    ASSERT_EQ(st.segments.size(), 1u);
    EXPECT_EQ(st.segments[0].blocks[0].allocIndex, -1);
    EXPECT_EQ(st.segments[0].blocks[1].allocIndex, 2);
    EXPECT_EQ(st.segments[0].blocks[2].allocIndex, 5);
    EXPECT_EQ(st.reservedBytes, MiB2);
    EXPECT_EQ(st.allocatedBytes, 5120u + 512u);
    EXPECT_EQ(st.requestedBytes, 5000u + 512u);
    // a device the file does not have: nothing
    EXPECT_TRUE(finalDeviceState(snap, 3).segments.empty());
}

TEST(AllocatorState, FinalDeviceStateIsTheFilesOwnStateWithEachBlocksAlloc) {
    const bool any = forEachRealDevice([](const std::filesystem::path& file, const Snapshot& snap, const DeviceData& d) {
        const DeviceState st = finalDeviceState(snap, d.device);
        // the blocks and totals as Python's pickle reads the file (tests/tools/snapshot_oracle.py)
        auto expected = oracle::run({"state", file.string(), "--device", std::to_string(d.device)});
        ASSERT_TRUE(expected) << "the oracle failed";
        EXPECT_EQ(st.reservedBytes, expected->at("reserved_bytes").get<uint64_t>());
        EXPECT_EQ(st.allocatedBytes, expected->at("allocated_bytes").get<uint64_t>());
        EXPECT_EQ(st.largestFreeBlock, expected->at("largest_free_block").get<uint64_t>());
        const auto& segs = expected->at("segments");
        ASSERT_EQ(st.segments.size(), segs.size());
        const TraceColumns& t = d.trace;
        for (size_t i = 0; i < segs.size(); ++i) {
            const auto& blocks = segs[i].at("blocks");
            ASSERT_EQ(st.segments[i].blocks.size(), blocks.size()) << "segment " << i;
            for (size_t j = 0; j < blocks.size(); ++j) {
                const StateBlock& b = st.segments[i].blocks[j];
                ASSERT_EQ(b.address, blocks[j].at("address").get<uint64_t>());
                ASSERT_EQ(b.size, blocks[j].at("size").get<uint64_t>());
                if (b.kind == StateBlockKind::Free) continue;
                // the alloc entry: the last alloc at the address with no free after it
                int64_t alloc = -1;
                for (int64_t k = static_cast<int64_t>(t.rows()) - 1; k >= 0; --k) {
                    if (t.addr[k] != b.address) continue;
                    if (t.action[k] == Action::Free || t.action[k] == Action::FreeCompleted) break;
                    if (t.action[k] == Action::Alloc) {
                        alloc = k;
                        break;
                    }
                }
                ASSERT_EQ(b.allocIndex, alloc) << "block at " << b.address;
            }
        }
        // and it is the history's last state
        if (d.trace.rows() > 0) {
            const StateHistory h(snap, d.device);
            EXPECT_EQ(fullLayout(st), fullLayout(h.stateAfter(h.entries() - 1)));
        }
    });
    if (!any) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
}

TEST(AllocatorState, TheDefaultSpacingGivesTheSameStatesAsPlainRewinding) {
    auto files = realSnapshots();
    if (files.empty()) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    std::mt19937_64 rng(7);
    for (const auto& f : files) {
        Snapshot snap = readSnapshotFile(f.string());
        for (const auto& d : snap.devices) {
            if (d.trace.rows() < 2) continue;
            SCOPED_TRACE(f.filename().string() + " device " + std::to_string(d.device));
            StateHistory chosen(snap, d.device);
            StateHistory plain(snap, d.device, size_t(1) << 30);
            std::uniform_int_distribution<int64_t> pick(-1, chosen.entries() - 1);
            for (int k = 0; k < 10; ++k) {
                const int64_t i = pick(rng);
                ASSERT_EQ(fullLayout(chosen.stateAfter(i)), fullLayout(plain.stateAfter(i))) << "at " << i;
            }
        }
    }
}

// Each live block's alloc entry, checked against the trace itself: an alloc at the block's
// address, at or before the state's entry, with no free of that address in between; a block
// recreated from a free whose alloc the trace has names that alloc.
TEST(AllocatorState, EveryLiveBlocksAllocIsTheTracesOwn) {
    auto files = realSnapshots();
    if (files.empty()) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    std::mt19937_64 rng(99);
    for (const auto& f : files) {
        Snapshot snap = readSnapshotFile(f.string());
        for (const auto& d : snap.devices) {
            if (d.trace.rows() < 2) continue;
            SCOPED_TRACE(f.filename().string() + " device " + std::to_string(d.device));
            const TraceColumns& t = d.trace;
            // per address, its allocs and frees in entry order
            std::map<uint64_t, std::vector<int64_t>> byAddress;
            for (size_t i = 0; i < t.rows(); ++i)
                if (t.action[i] == Action::Alloc || t.action[i] == Action::FreeCompleted || t.action[i] == Action::Free)
                    byAddress[t.addr[i]].push_back(static_cast<int64_t>(i));
            StateHistory h(snap, d.device);
            std::uniform_int_distribution<int64_t> pick(0, h.entries() - 2);
            size_t checked = 0;
            for (int k = 0; k < 10; ++k) {
                const int64_t at = pick(rng);
                for (const auto& s : h.stateAfter(at).segments)
                    for (const auto& b : s.blocks) {
                        if (b.kind == StateBlockKind::Free || b.allocIndex < 0) continue;
                        const auto a = static_cast<size_t>(b.allocIndex);
                        ASSERT_LE(b.allocIndex, at);
                        ASSERT_EQ(t.action[a], Action::Alloc) << "block at " << b.address << " after " << at;
                        ASSERT_EQ(t.addr[a], b.address);
                        EXPECT_EQ(b.stack, t.stack[a]);
                        // the last alloc or free at that address up to `at` is this alloc
                        const auto& events = byAddress[b.address];
                        auto last = std::upper_bound(events.begin(), events.end(), at);
                        ASSERT_TRUE(last != events.begin());
                        EXPECT_EQ(*std::prev(last), b.allocIndex) << "block at " << b.address << " after " << at;
                        ++checked;
                    }
            }
            EXPECT_GT(checked, 0u);
        }
    }
}

// The state before the first entry without the history's checkpoints is the history's own, every
// field of it, on every real snapshot's every device (their histories are checked against plain
// rewinding above).
TEST(AllocatorState, InitialDeviceStateIsTheHistorysFirst) {
    const bool any = forEachRealDevice([](const std::filesystem::path&, const Snapshot& snap, const DeviceData& d) {
        const DeviceState a = initialDeviceState(snap, d.device);
        const DeviceState b = StateHistory(snap, d.device).stateAfter(-1);
        EXPECT_EQ(a.at, -1);
        EXPECT_EQ(a.reservedBytes, b.reservedBytes);
        EXPECT_EQ(a.allocatedBytes, b.allocatedBytes);
        EXPECT_EQ(a.requestedBytes, b.requestedBytes);
        EXPECT_EQ(a.freeBytes, b.freeBytes);
        ASSERT_EQ(fullLayout(a), fullLayout(b));
    });
    if (!any) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    EXPECT_TRUE(initialDeviceState(readSnapshotFile(realSnapshots().front().string()), 7).segments.empty());
}

// deviceStatesAfter (one rewind, the states asked for taken on the way: what-if's recording) gives
// the history's states, in the order asked, for entries repeated, out of range, the first and the
// last; the reserved bytes are the timeline's.
TEST(AllocatorState, StatesTakenOnOneRewindAreTheHistorysStates) {
    std::mt19937_64 rng(7);
    const bool any = forEachRealDevice([&](const std::filesystem::path&, const Snapshot& snap, const DeviceData& d) {
        const StateHistory history(snap, d.device);
        const auto tl = computeTimeline(d);
        const int64_t n = history.entries();
        std::uniform_int_distribution<int64_t> pick(-1, std::max<int64_t>(n - 1, -1));
        std::vector<int64_t> asked = {n - 1, -1, pick(rng), pick(rng), -5, n + 3};
        asked.push_back(asked[2]);  // asked twice
        const std::vector<DeviceState> states = deviceStatesAfter(snap, d.device, asked);
        ASSERT_EQ(states.size(), asked.size());
        for (size_t k = 0; k < asked.size(); ++k) {
            const int64_t at = std::clamp<int64_t>(asked[k], -1, std::max<int64_t>(n - 1, -1));
            SCOPED_TRACE("asked " + std::to_string(asked[k]));
            const DeviceState expected = history.stateAfter(at);
            EXPECT_EQ(states[k].at, at);
            EXPECT_EQ(states[k].allocatedBytes, expected.allocatedBytes);
            EXPECT_EQ(states[k].freeBytes, expected.freeBytes);
            ASSERT_EQ(fullLayout(states[k]), fullLayout(expected));
            EXPECT_EQ(static_cast<int64_t>(states[k].reservedBytes), at < 0 ? tl.reservedBefore : tl.reservedBytes[at]);
        }
    });
    if (!any) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    EXPECT_TRUE(deviceStatesAfter(readSnapshotFile(realSnapshots().front().string()), 7, {-1, 3}).at(1).segments.empty());
}

// takeDeviceStatesAfter hands each state over as it comes, earliest entry first (the state
// before the first entry first: what-if's simulation waits for it alone), every place asked for
// once, a state asked twice to both places; the states are deviceStatesAfter's.
TEST(AllocatorState, StatesHandedOverEarliestFirst) {
    std::mt19937_64 rng(5);
    const bool any = forEachRealDevice([&](const std::filesystem::path&, const Snapshot& snap, const DeviceData& d) {
        const auto n = static_cast<int64_t>(d.trace.rows());
        std::uniform_int_distribution<int64_t> pick(-1, std::max<int64_t>(n - 1, -1));
        std::vector<int64_t> asked = {pick(rng), n - 1, pick(rng), -1, n + 7};
        asked.push_back(asked[0]);  // asked twice
        for (const BlockAllocs allocs : {BlockAllocs::Named, BlockAllocs::Unnamed}) {
            const std::vector<DeviceState> expected = deviceStatesAfter(snap, d.device, asked, allocs);
            std::vector<size_t> places;
            std::vector<int64_t> ats;
            takeDeviceStatesAfter(snap, d.device, asked, allocs, [&](size_t k, DeviceState st) {
                ASSERT_LT(k, asked.size());
                EXPECT_EQ(fullLayout(st), fullLayout(expected[k])) << "place " << k;
                EXPECT_EQ(st.at, expected[k].at);
                places.push_back(k);
                ats.push_back(st.at);
            });
            std::vector<size_t> sorted = places;
            std::sort(sorted.begin(), sorted.end());
            std::vector<size_t> all(asked.size());
            std::iota(all.begin(), all.end(), size_t(0));
            EXPECT_EQ(sorted, all) << "every place once";
            EXPECT_TRUE(std::is_sorted(ats.begin(), ats.end())) << "earliest first";
            ASSERT_FALSE(ats.empty());
            EXPECT_EQ(ats.front(), -1);
        }
    });
    if (!any) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
}

// Without the pass naming the blocks' allocs (BlockAllocs::Unnamed: what-if's recording, the
// state before the trace) the states have the named ones' bytes and blocks, each block where and
// as large as the named state has it, pending or not alike; none names an alloc, and a block the
// named state says was allocated in the trace is one allocated before it (or an allocation of the
// snapshot itself). The history's states, the oracle's above, are the named ones.
TEST(AllocatorState, UnnamedStatesHaveTheNamedStatesBlocks) {
    std::mt19937_64 rng(11);
    size_t renamed = 0;
    const bool any = forEachRealDevice([&](const std::filesystem::path&, const Snapshot& snap, const DeviceData& d) {
        const auto n = static_cast<int64_t>(d.trace.rows());
        std::uniform_int_distribution<int64_t> pick(-1, std::max<int64_t>(n - 1, -1));
        const std::vector<int64_t> asked = {n - 1, -1, pick(rng), pick(rng), pick(rng), n / 2};
        const std::vector<DeviceState> named = deviceStatesAfter(snap, d.device, asked);
        const std::vector<DeviceState> unnamed = deviceStatesAfter(snap, d.device, asked, BlockAllocs::Unnamed);
        ASSERT_EQ(unnamed.size(), asked.size());
        for (size_t k = 0; k < asked.size(); ++k) {
            SCOPED_TRACE("asked " + std::to_string(asked[k]));
            const DeviceState& a = named[k];
            const DeviceState& b = unnamed[k];
            EXPECT_EQ(b.at, a.at);
            EXPECT_EQ(b.reservedBytes, a.reservedBytes);
            EXPECT_EQ(b.allocatedBytes, a.allocatedBytes);
            EXPECT_EQ(b.pendingFreeBytes, a.pendingFreeBytes);
            EXPECT_EQ(b.freeBytes, a.freeBytes);
            EXPECT_EQ(b.largestFreeBlock, a.largestFreeBlock);
            ASSERT_EQ(b.segments.size(), a.segments.size());
            for (size_t s = 0; s < a.segments.size(); ++s) {
                ASSERT_EQ(b.segments[s].address, a.segments[s].address);
                ASSERT_EQ(b.segments[s].totalSize, a.segments[s].totalSize);
                ASSERT_EQ(b.segments[s].blocks.size(), a.segments[s].blocks.size());
                for (size_t i = 0; i < a.segments[s].blocks.size(); ++i) {
                    const StateBlock& x = a.segments[s].blocks[i];
                    const StateBlock& y = b.segments[s].blocks[i];
                    EXPECT_EQ(y.address, x.address);
                    EXPECT_EQ(y.size, x.size);
                    EXPECT_EQ(y.sizeEstimated, x.sizeEstimated);
                    EXPECT_EQ(y.allocIndex, -1);
                    if (x.kind == StateBlockKind::Allocated && y.kind == StateBlockKind::BeforeRecording) {
                        EXPECT_GE(x.allocIndex, 0);
                        ++renamed;
                    } else {
                        EXPECT_EQ(stateBlockKindName(y.kind), stateBlockKindName(x.kind)) << "block at " << x.address;
                    }
                }
            }
            if (asked[k] == -1) {
                EXPECT_EQ(fullLayout(b), fullLayout(a));
            }
        }
    });
    if (!any) GTEST_SKIP() << "real snapshots not found in " << MEMLENS_SNAPSHOTS_DIR;
    EXPECT_GT(renamed, 0u) << "no state had a block recreated from a free whose alloc the trace has";
}
