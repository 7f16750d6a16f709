// MemoryBreakdown: the parts of reserved memory on hand-built states, worked out by hand; the
// process figures that take the parts on to nvidia-smi's number; and on real snapshots, that the
// parts always add up to reserved.
#include "HandBuiltState.h"
#include "Synthetic.h"

#include "memlens/model/MemoryBreakdown.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace memlens::model;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;

StateBlock blk(uint64_t addr, uint64_t size, uint64_t req, StateBlockKind k) {
    StateBlock b;
    b.address = addr;
    b.size = size;
    b.requestedSize = req;
    b.kind = k;
    return b;
}

StateSegment seg(uint64_t addr, std::vector<std::pair<uint64_t, std::pair<uint64_t, StateBlockKind>>> sizes,
                 bool large = true, bool expandable = false) {
    // sizes: size -> (requested, kind), laid out from addr
    StateSegment s;
    s.address = addr;
    s.isLarge = large;
    s.isExpandable = expandable;
    uint64_t a = addr;
    for (const auto& [size, rk] : sizes) {
        s.blocks.push_back(blk(a, size, rk.first, rk.second));
        a += size;
    }
    s.totalSize = a - addr;
    return s;
}

using handbuilt::stateOf;

uint64_t sumOf(const MemoryBreakdown& b) {
    uint64_t s = 0;
    for (const auto& p : b.parts) s += p.bytes;
    return s;
}

using K = StateBlockKind;

DeviceState mixedState() {
    // small segment: two live blocks, a pending free and free gaps; all of its free space is stuck
    StateSegment s1 = seg(0x100000,
                          {{1024, {1000, K::Allocated}},
                           {512, {300, K::PendingFree}},
                           {4096, {0, K::Free}},
                           {5120, {5000, K::Allocated}},
                           {2 * MiB - 1024 - 512 - 4096 - 5120, {0, K::Free}}},
                          false);
    // a wholly free large segment: empty_cache returns it
    StateSegment s2 = seg(0x10000000, {{20 * MiB, {0, K::Free}}});
    // allocated before recording with an unknown request: counted live in full
    StateSegment s3 = seg(0x20000000, {{5 * MiB, {0, K::BeforeRecording}}, {15 * MiB, {0, K::Free}}});
    // expandable, 3 pages of 20 MiB: the free run [5, 50) MiB holds one whole page, [20, 40)
    StateSegment s4 = seg(0x40000000,
                          {{5 * MiB, {5 * MiB, K::Allocated}},
                           {45 * MiB, {0, K::Free}},
                           {10 * MiB, {10 * MiB - 100, K::Allocated}}},
                          true, true);
    // expandable and wholly free: all of it goes back
    StateSegment s5 = seg(0x80000000, {{40 * MiB, {0, K::Free}}}, true, true);
    return stateOf({s1, s2, s3, s4, s5});
}

} // namespace

TEST(MemoryBreakdown, PartsOfAMixedStateByHand) {
    DeviceState st = mixedState();
    MemoryBreakdown b = computeBreakdown(st);
    ASSERT_EQ(b.parts.size(), 5u);
    EXPECT_EQ(b.parts[0].part, BreakdownPart::LiveTensors);
    EXPECT_EQ(b.bytes(BreakdownPart::LiveTensors), 1000u + 5000u + 5 * MiB + 5 * MiB + (10 * MiB - 100));
    EXPECT_EQ(b.bytes(BreakdownPart::Rounding), 24u + 120u + 100u);
    EXPECT_EQ(b.bytes(BreakdownPart::PendingFree), 512u);
    EXPECT_EQ(b.bytes(BreakdownPart::FragmentedFree),
              4096u + (2 * MiB - 1024 - 512 - 4096 - 5120) + 15 * MiB + (45 * MiB - 20 * MiB));
    EXPECT_EQ(b.bytes(BreakdownPart::ReleasableFree), 20 * MiB + 20 * MiB + 40 * MiB);
    EXPECT_EQ(b.reservedBytes, st.reservedBytes);
    EXPECT_EQ(sumOf(b), st.reservedBytes);
    EXPECT_EQ(b.totalBytes, st.reservedBytes);
    EXPECT_FALSE(b.hasProcessFigures);
    for (const auto& p : b.parts) {
        EXPECT_FALSE(p.label.empty());
        EXPECT_EQ(p.explanation.back(), '.');  // one sentence each
    }
}

TEST(MemoryBreakdown, ExpandablePagesNeedWholePages) {
    // free [3, 38) MiB of a 60 MiB expandable segment holds no whole 20 MiB page: [0, 20) starts
    // before it and [20, 40) ends after it
    DeviceState st = stateOf({seg(0, {{3 * MiB, {3 * MiB, K::Allocated}},
                                      {35 * MiB, {0, K::Free}},
                                      {22 * MiB, {22 * MiB, K::Allocated}}},
                                  true, true)});
    MemoryBreakdown b = computeBreakdown(st);
    EXPECT_EQ(b.bytes(BreakdownPart::ReleasableFree), 0u);
    EXPECT_EQ(b.bytes(BreakdownPart::FragmentedFree), 35 * MiB);
    // small-pool expandable segments map 2 MiB pages: free [1, 7) MiB holds pages [2,4) and [4,6)
    DeviceState sm = stateOf({seg(0, {{1 * MiB, {MiB, K::Allocated}}, {6 * MiB, {0, K::Free}}, {1 * MiB, {MiB, K::Allocated}}},
                                  false, true)});
    MemoryBreakdown bs = computeBreakdown(sm);
    EXPECT_EQ(bs.bytes(BreakdownPart::ReleasableFree), 4 * MiB);
    EXPECT_EQ(bs.bytes(BreakdownPart::FragmentedFree), 2 * MiB);
    EXPECT_EQ(sumOf(bs), 8 * MiB);
}

TEST(MemoryBreakdown, EmptyState) {
    MemoryBreakdown b = computeBreakdown(DeviceState{});
    EXPECT_EQ(b.parts.size(), 5u);
    EXPECT_EQ(sumOf(b), 0u);
    EXPECT_EQ(b.totalBytes, 0u);
}

TEST(MemoryBreakdown, ProcessTotalOnly) {
    DeviceState st = mixedState();
    ProcessFigures pf;
    pf.processTotal = st.reservedBytes + 700 * MiB;
    MemoryBreakdown b = computeBreakdown(st, pf);
    ASSERT_EQ(b.parts.size(), 6u);
    EXPECT_EQ(b.parts[5].part, BreakdownPart::OutsidePyTorch);
    EXPECT_EQ(b.parts[5].bytes, 700 * MiB);
    EXPECT_EQ(b.parts[5].label, "Context and other libraries");
    EXPECT_TRUE(b.hasProcessFigures);
    EXPECT_EQ(sumOf(b), *pf.processTotal);
    EXPECT_EQ(b.totalBytes, *pf.processTotal);
    EXPECT_TRUE(b.note.empty());
}

TEST(MemoryBreakdown, ProcessTotalAndContext) {
    DeviceState st = mixedState();
    ProcessFigures pf;
    pf.processTotal = st.reservedBytes + 700 * MiB;
    pf.cudaContext = 400 * MiB;
    MemoryBreakdown b = computeBreakdown(st, pf);
    ASSERT_EQ(b.parts.size(), 7u);
    EXPECT_EQ(b.bytes(BreakdownPart::CudaContext), 400 * MiB);
    EXPECT_EQ(b.bytes(BreakdownPart::OutsidePyTorch), 300 * MiB);
    EXPECT_EQ(b.parts[6].label, "Outside PyTorch");
    EXPECT_EQ(sumOf(b), *pf.processTotal);
}

TEST(MemoryBreakdown, AllProcessFiguresLeaveAnUnexplainedRest) {
    DeviceState st = mixedState();
    ProcessFigures pf;
    pf.processTotal = st.reservedBytes + 700 * MiB;
    pf.cudaContext = 400 * MiB;
    pf.outsidePyTorch = 200 * MiB;
    MemoryBreakdown b = computeBreakdown(st, pf);
    ASSERT_EQ(b.parts.size(), 8u);
    EXPECT_EQ(b.bytes(BreakdownPart::Unexplained), 100 * MiB);
    EXPECT_EQ(sumOf(b), *pf.processTotal);
    // figures that fit exactly: no unexplained part
    pf.outsidePyTorch = 300 * MiB;
    b = computeBreakdown(st, pf);
    EXPECT_EQ(b.parts.size(), 7u);
    EXPECT_EQ(sumOf(b), *pf.processTotal);
}

TEST(MemoryBreakdown, FiguresThatDoNotFitSayWhy) {
    DeviceState st = mixedState();
    ProcessFigures pf;
    pf.processTotal = st.reservedBytes - 1;
    MemoryBreakdown b = computeBreakdown(st, pf);
    EXPECT_FALSE(b.note.empty());
    EXPECT_EQ(sumOf(b), st.reservedBytes);  // the allocator parts stay whole
    pf.processTotal = st.reservedBytes + 100 * MiB;
    pf.cudaContext = 400 * MiB;
    pf.outsidePyTorch = 50 * MiB;
    b = computeBreakdown(st, pf);
    EXPECT_FALSE(b.note.empty());
    EXPECT_EQ(sumOf(b), b.totalBytes);
    // context alone, no total: appended as measured
    ProcessFigures ctx;
    ctx.cudaContext = 300 * MiB;
    b = computeBreakdown(st, ctx);
    EXPECT_EQ(b.parts.size(), 6u);
    EXPECT_EQ(b.totalBytes, st.reservedBytes + 300 * MiB);
    EXPECT_TRUE(b.note.empty());
}

TEST(MemoryBreakdown, RewoundStatesOfASyntheticTrace) {
    using namespace synth;
    constexpr uint64_t S = 0x100000;
    // final: one 2 MiB small segment with a live 5000-byte request; a 20 MiB segment was freed
    P seg1 = segment(0, S, {{S, 5120, 5000, "active_allocated", nullptr}, {S + 5120, 2 * MiB - 5120, 0, "inactive", nullptr}});
    Snapshot snap = read(snapshot({seg1}, {{entry("segment_alloc", S, 2 * MiB),          // 0
                                            entry("alloc", S, 5000),                      // 1
                                            entry("segment_alloc", 0x4000000, 20 * MiB),  // 2
                                            entry("alloc", 0x4000000, 6 * MiB),           // 3
                                            entry("free_requested", 0x4000000, 6 * MiB),  // 4
                                            entry("free_completed", 0x4000000, 6 * MiB),  // 5
                                            entry("segment_free", 0x4000000, 20 * MiB)}}));  // 6
    StateHistory h(snap, 0);
    auto at = [&](int64_t i) { return computeBreakdown(h.stateAfter(i)); };
    EXPECT_EQ(at(1).bytes(BreakdownPart::LiveTensors), 5000u);
    EXPECT_EQ(at(1).bytes(BreakdownPart::Rounding), 120u);
    EXPECT_EQ(at(1).bytes(BreakdownPart::FragmentedFree), 2 * MiB - 5120);
    EXPECT_EQ(at(2).bytes(BreakdownPart::ReleasableFree), 20 * MiB);
    EXPECT_EQ(at(3).bytes(BreakdownPart::LiveTensors), 5000u + 6 * MiB);
    EXPECT_EQ(at(3).bytes(BreakdownPart::FragmentedFree), 2 * MiB - 5120 + 14 * MiB);
    EXPECT_EQ(at(4).bytes(BreakdownPart::PendingFree), 6 * MiB);
    EXPECT_EQ(at(5).bytes(BreakdownPart::ReleasableFree), 20 * MiB);
    EXPECT_EQ(at(6).bytes(BreakdownPart::ReleasableFree), 0u);
    for (int64_t i = -1; i < h.entries(); ++i) {
        DeviceState st = h.stateAfter(i);
        EXPECT_EQ(sumOf(computeBreakdown(st)), st.reservedBytes) << i;
    }
}

TEST(MemoryBreakdown, PartsAddUpToReservedOnRealSnapshots) {
    namespace fs = std::filesystem;
    fs::path dir = MEMLENS_SNAPSHOTS_DIR;
    if (!fs::is_directory(dir)) GTEST_SKIP() << "no snapshots at " << dir;
    int checked = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
        if (!e.is_regular_file() || (e.path().extension() != ".pickle" && e.path().extension() != ".pkl")) continue;
        Snapshot s = readSnapshotFile(e.path().string());
        for (const auto& d : s.devices) {
            StateHistory h(s, d.device);
            const int64_t n = h.entries();
            for (int64_t i : {int64_t(-1), n / 3, n / 2, n - 2, n - 1}) {
                if (i >= n) continue;
                DeviceState st = h.stateAfter(i);
                MemoryBreakdown b = computeBreakdown(st);
                ASSERT_EQ(sumOf(b), st.reservedBytes) << e.path() << " device " << d.device << " at " << i;
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 0);
}
