// The allocator simulator, rule by rule, on hand-worked sequences: every address and event below
// was worked out by hand from the allocator's rules (../shared/reference/caching-allocator.md
// §11 and c10/cuda/CUDACachingAllocator.cpp), with the segments' addresses given to the
// simulator as a replay gives them (the recording's, through AddressSpace).
#include "memlens/model/AllocatorSimulator.h"
#include "memlens/model/SimulatorSettings.h"

#include <gtest/gtest.h>

#include <random>

#include <string>
#include <vector>

using namespace memlens::model;

namespace {

constexpr uint64_t KiB = 1024;
constexpr uint64_t MiB = 1024 * KiB;
constexpr uint64_t S1 = 0x7f0000000000;  // first segment
constexpr uint64_t S2 = 0x7f0100000000;
constexpr uint64_t S3 = 0x7f0200000000;
constexpr uint64_t E = 0x7e0000000000;   // an expandable reservation

std::string ev(Action a, uint64_t addr, uint64_t size, uint64_t stream = 0) {
    return std::string(actionName(a)) + "(" + std::to_string(addr) + "," + std::to_string(size) +
           (stream ? "," + std::to_string(stream) : "") + ")";
}

std::vector<std::string> events(const AllocatorSimulator& sim, size_t from = 0) {
    std::vector<std::string> out;
    for (size_t i = from; i < sim.events().size(); ++i) {
        const SimEvent& e = sim.events()[i];
        out.push_back(ev(e.action, e.addr, e.size, e.stream));
    }
    return out;
}

// "offset:size A|I" per block of the segment at `address`
std::vector<std::string> layout(const AllocatorSimulator& sim, uint64_t address) {
    std::vector<std::string> out;
    for (const auto& s : sim.segments()) {
        if (s.address != address) continue;
        for (const auto& b : s.blocks)
            out.push_back(std::to_string(b.address - address) + ":" + std::to_string(b.size) + (b.allocated ? " A" : " I"));
    }
    return out;
}

using V = std::vector<std::string>;
const Action kAlloc = Action::Alloc, kFree = Action::FreeCompleted, kSegAlloc = Action::SegmentAlloc,
             kSegFree = Action::SegmentFree, kMap = Action::SegmentMap, kUnmap = Action::SegmentUnmap,
             kOom = Action::Oom;

} // namespace

TEST(AllocatorSimulator, RoundingTable) {
    SimulatorSettings s;
    EXPECT_EQ(s.roundSize(1), 512u);
    EXPECT_EQ(s.roundSize(100), 512u);
    EXPECT_EQ(s.roundSize(512), 512u);
    EXPECT_EQ(s.roundSize(513), 1024u);
    EXPECT_EQ(s.roundSize(1000), 1024u);
    EXPECT_EQ(s.roundSize(12 * MiB + 1), 12583424u);
    s.set("roundup_power2_divisions", "4");
    EXPECT_EQ(s.roundSize(1200), 1536u);        // 1200 <= 512 * 4: plain 512-rounding
    EXPECT_EQ(s.roundSize(5000), 5120u);        // F 4096, step 1024
    EXPECT_EQ(s.roundSize(4096), 4096u);        // a power of two
    EXPECT_EQ(s.roundSize(10 * MiB + 1), 12 * MiB);  // F 8 MiB, step 2 MiB
    s.set("roundup_power2_divisions", "[256:1,512:2,>:4]");
    EXPECT_EQ(s.roundSize(600 * MiB), 768 * MiB);  // slot 9: 2 divisions (newest '>' fill)
    EXPECT_EQ(s.roundSize(300 * MiB), 300 * MiB);  // slot 8: 1 division, plain rounding
    EXPECT_EQ(s.roundSize(1500), 1536u);
    EXPECT_EQ(s.roundSize(3000 * MiB), 3072 * MiB);  // slot 11: '>' gives 4, F 2048 MiB, step 512 MiB
}

TEST(AllocatorSimulator, SegmentSizes) {
    SimulatorSettings s;
    EXPECT_EQ(s.allocationSize(512), 2 * MiB);
    EXPECT_EQ(s.allocationSize(1 * MiB), 2 * MiB);
    EXPECT_EQ(s.allocationSize(1 * MiB + 512), 20 * MiB);
    EXPECT_EQ(s.allocationSize(10 * MiB - 512), 20 * MiB);
    EXPECT_EQ(s.allocationSize(10 * MiB), 10 * MiB);
    EXPECT_EQ(s.allocationSize(13 * MiB), 14 * MiB);
    EXPECT_EQ(s.allocationSize(12 * MiB + 512), 14 * MiB);
}

TEST(AllocatorSimulator, SettingsRefuseUnknownKeysAndBadValues) {
    SimulatorSettings s;
    EXPECT_THROW(s.set("expandable_segment", "True"), std::invalid_argument);
    EXPECT_THROW(s.set("expandable_segments", "yes"), std::invalid_argument);
    EXPECT_THROW(s.set("max_split_size_mb", "10"), std::invalid_argument);  // below 20
    EXPECT_THROW(s.set("max_split_size_mb", "-5"), std::invalid_argument);
    EXPECT_THROW(s.set("garbage_collection_threshold", "1.0"), std::invalid_argument);
    EXPECT_THROW(s.set("roundup_power2_divisions", "3"), std::invalid_argument);
    EXPECT_THROW(s.set("fraction", "1.5"), std::invalid_argument);
    s.set("max_split_size_mb", "128");
    EXPECT_EQ(s.maxSplitSize, 128 * MiB);
    s.applyAllocConf("expandable_segments:True,roundup_power2_divisions:[256:1,>:4],backend:native");
    EXPECT_TRUE(s.expandableSegments);
    EXPECT_EQ(s.roundupDivisions[8], 1u);
    EXPECT_EQ(s.roundupDivisions[9], 4u);
}

// T1, T2: the small pool, 2 MiB segments, splitting a remainder of at least 512 bytes, exact reuse
TEST(AllocatorSimulator, SmallPoolSplitAndExactReuse) {
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(2 * MiB, S1);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 1000, 0));
    EXPECT_EQ(layout(sim, S1), (V{"0:1024 A", "1024:2096128 I"}));
    ASSERT_TRUE(sim.malloc(1, 3000, 0));
    ASSERT_TRUE(sim.free(0));
    ASSERT_TRUE(sim.malloc(2, 600, 0));  // the exact 1024-byte block at 0, not the 2 MiB remainder
    EXPECT_EQ(events(sim), (V{ev(kSegAlloc, S1, 2 * MiB), ev(kAlloc, S1, 1000), ev(kAlloc, S1 + 1024, 3000),
                              ev(kFree, S1, 1000), ev(kAlloc, S1, 600)}));
    EXPECT_EQ(layout(sim, S1), (V{"0:1024 A", "1024:3072 A", "4096:2093056 I"}));
    EXPECT_EQ(sim.reservedBytes(), 2 * MiB);
    EXPECT_EQ(sim.allocatedBytes(), 4096u);
    EXPECT_EQ(sim.requestedBytes(), 3600u);
}

// T3, T4: 1-10 MiB requests in 20 MiB segments; the large pool splits only a remainder > 1 MiB
TEST(AllocatorSimulator, LargePoolSplitThreshold) {
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(20 * MiB, S1);
    as.addRecordedSegment(14 * MiB, S2);
    as.addRecordedSegment(14 * MiB, S3);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 5 * MiB, 0));
    ASSERT_TRUE(sim.malloc(1, 15204352, 0));  // 14.5 MiB: the 15 MiB remainder, rem 512 KiB: not split
    EXPECT_EQ(layout(sim, S1), (V{"0:5242880 A", "5242880:15728640 A"}));
    ASSERT_TRUE(sim.malloc(2, 13 * MiB, 0));      // segment 14 MiB, rem exactly 1 MiB: not split
    EXPECT_EQ(layout(sim, S2), (V{"0:14680064 A"}));
    ASSERT_TRUE(sim.malloc(3, 12 * MiB + 1, 0));  // 12583424 in 14 MiB: rem 2096640 > 1 MiB: split
    EXPECT_EQ(layout(sim, S3), (V{"0:12583424 A", "12583424:2096640 I"}));
    EXPECT_EQ(events(sim), (V{ev(kSegAlloc, S1, 20 * MiB), ev(kAlloc, S1, 5 * MiB), ev(kAlloc, S1 + 5 * MiB, 15204352),
                              ev(kSegAlloc, S2, 14 * MiB), ev(kAlloc, S2, 13 * MiB), ev(kSegAlloc, S3, 14 * MiB),
                              ev(kAlloc, S3, 12 * MiB + 1)}));
}

// T5: free merges with both neighbours; empty_cache releases the whole free segment
TEST(AllocatorSimulator, MergeBothSidesThenEmptyCache) {
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(20 * MiB, S1);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 5 * MiB, 0));
    ASSERT_TRUE(sim.malloc(1, 5 * MiB, 0));
    ASSERT_TRUE(sim.malloc(2, 5 * MiB, 0));
    ASSERT_TRUE(sim.free(0));
    ASSERT_TRUE(sim.free(2));  // merges with the 5 MiB remainder after it
    EXPECT_EQ(layout(sim, S1), (V{"0:5242880 I", "5242880:5242880 A", "10485760:10485760 I"}));
    sim.emptyCache();  // split: nothing released
    ASSERT_TRUE(sim.free(1));  // merges left and right
    EXPECT_EQ(layout(sim, S1), (V{"0:20971520 I"}));
    size_t before = sim.events().size();
    sim.emptyCache();
    EXPECT_EQ(events(sim, before), (V{ev(kSegFree, S1, 20 * MiB)}));
    EXPECT_EQ(sim.reservedBytes(), 0u);
    EXPECT_TRUE(sim.segments().empty());
}

// T6: max_split_size_mb:128 and oversize blocks
TEST(AllocatorSimulator, OversizeBlocks) {
    for (uint64_t c : {190 * MiB, 170 * MiB}) {
        SimulatorSettings st;
        st.set("max_split_size_mb", "128");
        AddressSpace as;
        as.addRecordedSegment(200 * MiB, S1);
        as.addRecordedSegment(100 * MiB, S2);
        as.addRecordedSegment(170 * MiB, S3);
        AllocatorSimulator sim(st, as);
        ASSERT_TRUE(sim.malloc(0, 200 * MiB, 0));
        ASSERT_TRUE(sim.free(0));
        ASSERT_TRUE(sim.malloc(1, 100 * MiB, 0));  // refused the oversize free block: a new segment
        EXPECT_EQ(sim.addressOf(1), S2);
        ASSERT_TRUE(sim.malloc(2, c, 0));
        if (c == 190 * MiB) {  // 200 < 190 + 20: the whole oversize block, not split
            EXPECT_EQ(sim.addressOf(2), S1);
            EXPECT_EQ(layout(sim, S1), (V{"0:209715200 A"}));
            EXPECT_EQ(sim.reservedBytes(), 300 * MiB);
        } else {  // 200 >= 170 + 20: refused, a new segment
            EXPECT_EQ(sim.addressOf(2), S3);
            EXPECT_EQ(sim.reservedBytes(), 470 * MiB);
        }
    }
    // the default settings: the 100 MiB request splits the 200 MiB block
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(200 * MiB, S1);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 200 * MiB, 0));
    ASSERT_TRUE(sim.free(0));
    ASSERT_TRUE(sim.malloc(1, 100 * MiB, 0));
    EXPECT_EQ(layout(sim, S1), (V{"0:104857600 A", "104857600:104857600 I"}));
}

// T7: cudaMalloc fails, release_available_cached_blocks frees one oversize segment, retry
TEST(AllocatorSimulator, ReleaseAvailableCachedBlocks) {
    SimulatorSettings st;
    st.set("max_split_size_mb", "128");
    st.capacity = 1024 * MiB;
    AddressSpace as;
    as.addRecordedSegment(600 * MiB, S1);
    as.addRecordedSegment(500 * MiB, S2);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 600 * MiB, 0));
    ASSERT_TRUE(sim.free(0));
    size_t before = sim.events().size();
    ASSERT_TRUE(sim.malloc(1, 500 * MiB, 0));  // 600 >= 500 + 20: refused; 600 + 500 > 1024
    EXPECT_EQ(events(sim, before), (V{ev(kSegFree, S1, 600 * MiB), ev(kSegAlloc, S2, 500 * MiB), ev(kAlloc, S2, 500 * MiB)}));
    EXPECT_EQ(sim.allocRetries(), 0u);
}

// T7b, T8: the last-resort flush, then out of memory
TEST(AllocatorSimulator, OutOfMemoryPath) {
    SimulatorSettings st;
    st.capacity = 1024 * MiB;
    AddressSpace as;
    as.addRecordedSegment(600 * MiB, S1);
    as.addRecordedSegment(300 * MiB, S2);
    as.addRecordedSegment(700 * MiB, S3);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 600 * MiB, 0));
    ASSERT_TRUE(sim.malloc(1, 300 * MiB, 0));
    ASSERT_TRUE(sim.free(0));
    size_t before = sim.events().size();
    ASSERT_TRUE(sim.malloc(2, 700 * MiB, 0));  // 900 + 700 > 1024: flush S1, retry
    EXPECT_EQ(events(sim, before), (V{ev(kSegFree, S1, 600 * MiB), ev(kSegAlloc, S3, 700 * MiB), ev(kAlloc, S3, 700 * MiB)}));
    EXPECT_EQ(sim.allocRetries(), 1u);
    before = sim.events().size();
    EXPECT_FALSE(sim.malloc(3, 100 * MiB, 0));  // 1000 + 100 > 1024 and nothing to release
    EXPECT_EQ(events(sim, before), (V{ev(kOom, 24 * MiB, 100 * MiB)}));
    ASSERT_EQ(sim.ooms().size(), 1u);
    EXPECT_EQ(sim.ooms()[0].sizeAsked, 100 * MiB);
    EXPECT_EQ(sim.ooms()[0].largestFreeBlock, 0u);
    EXPECT_EQ(sim.ooms()[0].freeBytes, 0u);
    EXPECT_FALSE(sim.isAllocated(3));
}

// The replay's device answers: refused until the cache is flushed, or always
TEST(AllocatorSimulator, RecordedRefusals) {
    SimulatorSettings st;  // no capacity
    AddressSpace as;
    as.addRecordedSegment(20 * MiB, S1);
    as.addRecordedSegment(20 * MiB, S2);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 5 * MiB, 0));
    ASSERT_TRUE(sim.free(0));
    size_t before = sim.events().size();
    ASSERT_TRUE(sim.malloc(1, 30 * MiB, 0, DeviceRefusal::UntilFlush));
    ASSERT_GE(sim.events().size(), before + 2);
    EXPECT_EQ(events(sim, before)[0], ev(kSegFree, S1, 20 * MiB));
    before = sim.events().size();
    EXPECT_FALSE(sim.malloc(2, 3 * MiB, 0, DeviceRefusal::Always, 12345));
    EXPECT_EQ(events(sim, before), (V{ev(kOom, 12345, 3 * MiB)}));
}

// A replayed retry that released oversize blocks only (release_available_cached_blocks): the
// device accepts once as many segments were released as the recording shows, the rest stays cached
TEST(AllocatorSimulator, RecordedRetryAfterReleasingOversizeBlocks) {
    for (uint32_t releases : {1u, 0u}) {
        SimulatorSettings st;
        st.set("max_split_size_mb", "128");
        AddressSpace as;
        as.addRecordedSegment(600 * MiB, S1);
        as.addRecordedSegment(20 * MiB, S2);
        as.addRecordedSegment(500 * MiB, S3);
        AllocatorSimulator sim(st, as);
        ASSERT_TRUE(sim.malloc(0, 600 * MiB, 0));
        ASSERT_TRUE(sim.malloc(1, 5 * MiB, 0));
        ASSERT_TRUE(sim.free(0));
        ASSERT_TRUE(sim.free(1));  // S2 merged back: whole and free
        size_t before = sim.events().size();
        ASSERT_TRUE(sim.malloc(2, 500 * MiB, 0, DeviceRefusal::UntilFlush, 0, releases));
        if (releases == 1)  // release_available frees S1 (600 >= 500 + 20 was refused), the retry fits
            EXPECT_EQ(events(sim, before), (V{ev(kSegFree, S1, 600 * MiB), ev(kSegAlloc, S3, 500 * MiB),
                                              ev(kAlloc, S3, 500 * MiB)}));
        else  // only a full flush lets it: S2 goes too
            EXPECT_EQ(events(sim, before), (V{ev(kSegFree, S1, 600 * MiB), ev(kSegFree, S2, 20 * MiB),
                                              ev(kSegAlloc, S3, 500 * MiB), ev(kAlloc, S3, 500 * MiB)}));
    }
}

// T9, T10: expandable segments grow in place; release unmaps whole pages only
TEST(AllocatorSimulator, ExpandableSegmentsGrowAndUnmap) {
    SimulatorSettings st;
    st.expandableSegments = true;
    AddressSpace as;
    as.addRecordedMap(0, E, 0);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 5 * MiB, 0));
    ASSERT_TRUE(sim.malloc(1, 30 * MiB, 0));
    EXPECT_EQ(events(sim), (V{ev(kMap, E, 20 * MiB), ev(kAlloc, E, 5 * MiB), ev(kMap, E + 20 * MiB, 20 * MiB),
                              ev(kAlloc, E + 5 * MiB, 30 * MiB)}));
    EXPECT_EQ(layout(sim, E), (V{"0:5242880 A", "5242880:31457280 A", "36700160:5242880 I"}));
    EXPECT_EQ(sim.reservedBytes(), 40 * MiB);
    EXPECT_EQ(sim.segmentCount(), 0u);
    ASSERT_TRUE(sim.free(0));
    size_t before = sim.events().size();
    sim.emptyCache();  // 5 MiB at 0 and 5 MiB at 35 MiB: no whole page
    EXPECT_EQ(sim.events().size(), before + 0);
    EXPECT_EQ(sim.reservedBytes(), 40 * MiB);
    ASSERT_TRUE(sim.free(1));
    before = sim.events().size();
    sim.emptyCache();
    EXPECT_EQ(events(sim, before), (V{ev(kUnmap, E, 40 * MiB)}));
    EXPECT_EQ(sim.reservedBytes(), 0u);
    EXPECT_TRUE(sim.segments().empty());
}

// T11: under expandable segments a free block touching the unmapped tail counts as huge
TEST(AllocatorSimulator, ExpandableTailPreference) {
    for (bool expandable : {true, false}) {
        SimulatorSettings st;
        st.expandableSegments = expandable;
        AddressSpace as;
        as.addRecordedMap(0, E, 0);
        as.addRecordedSegment(20 * MiB, E);
        AllocatorSimulator sim(st, as);
        ASSERT_TRUE(sim.malloc(0, 6 * MiB, 0));
        ASSERT_TRUE(sim.malloc(1, 8 * MiB, 0));
        ASSERT_TRUE(sim.malloc(2, 4 * MiB, 0));
        ASSERT_TRUE(sim.free(0));
        ASSERT_TRUE(sim.malloc(3, 2 * MiB, 0));
        if (expandable) {
            EXPECT_EQ(sim.addressOf(3), E);
            EXPECT_EQ(layout(sim, E), (V{"0:2097152 A", "2097152:4194304 I", "6291456:8388608 A", "14680064:4194304 A",
                                         "18874368:2097152 I"}));
        } else {
            EXPECT_EQ(sim.addressOf(3), E + 18 * MiB);
            EXPECT_EQ(layout(sim, E), (V{"0:6291456 I", "6291456:8388608 A", "14680064:4194304 A", "18874368:2097152 A"}));
        }
    }
}

// T12: the small pool maps 2 MiB pages
TEST(AllocatorSimulator, ExpandableSmallPool) {
    SimulatorSettings st;
    st.expandableSegments = true;
    AddressSpace as;
    as.addRecordedMap(0, E, 0);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 1000, 0));
    EXPECT_EQ(events(sim), (V{ev(kMap, E, 2 * MiB), ev(kAlloc, E, 1000)}));
    EXPECT_EQ(layout(sim, E), (V{"0:1024 A", "1024:2096128 I"}));
}

// T13: streams keep separate caches; empty_cache releases in (stream, size, address) order
TEST(AllocatorSimulator, TwoStreams) {
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(2 * MiB, S1);
    as.addRecordedSegment(2 * MiB, S2);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 1000, 7));
    ASSERT_TRUE(sim.free(0));
    ASSERT_TRUE(sim.malloc(1, 1000, 9));  // cannot use stream 7's free block
    EXPECT_EQ(sim.addressOf(1), S2);
    size_t before = sim.events().size();
    sim.emptyCache();
    EXPECT_EQ(events(sim, before), (V{ev(kSegFree, S1, 2 * MiB, 7)}));
}

// T16: garbage collection frees the oldest unsplit free blocks when a fraction is set
TEST(AllocatorSimulator, GarbageCollection) {
    SimulatorSettings st;
    st.capacity = 1024 * MiB;
    st.set("fraction", "0.5");
    st.set("garbage_collection_threshold", "0.5");
    AddressSpace as;
    uint64_t SA = S1, SB = S2, SC = S3, SD = S3 + (1ull << 32);
    as.addRecordedSegment(100 * MiB, SA);
    as.addRecordedSegment(120 * MiB, SB);
    as.addRecordedSegment(150 * MiB, SC);
    as.addRecordedSegment(160 * MiB, SD);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 100 * MiB, 0));
    ASSERT_TRUE(sim.malloc(1, 120 * MiB, 0));
    ASSERT_TRUE(sim.free(0));
    ASSERT_TRUE(sim.free(1));
    ASSERT_TRUE(sim.malloc(2, 150 * MiB, 0));
    ASSERT_TRUE(sim.free(2));
    size_t before = sim.events().size();
    ASSERT_TRUE(sim.malloc(3, 160 * MiB, 0));  // reserved 370 > 256: ages A 2, B 2, C 1; avg 1.67
    EXPECT_EQ(events(sim, before), (V{ev(kSegFree, SA, 100 * MiB), ev(kSegFree, SB, 120 * MiB),
                                      ev(kSegAlloc, SD, 160 * MiB), ev(kAlloc, SD, 160 * MiB)}));
    EXPECT_EQ(sim.reservedBytes(), 310 * MiB);
    // without a fraction: no collection, four segments
    SimulatorSettings plain;
    plain.set("garbage_collection_threshold", "0.5");
    AddressSpace as2;
    AllocatorSimulator sim2(plain, as2);
    ASSERT_TRUE(sim2.malloc(0, 100 * MiB, 0));
    ASSERT_TRUE(sim2.malloc(1, 120 * MiB, 0));
    ASSERT_TRUE(sim2.free(0));
    ASSERT_TRUE(sim2.free(1));
    ASSERT_TRUE(sim2.malloc(2, 150 * MiB, 0));
    ASSERT_TRUE(sim2.free(2));
    ASSERT_TRUE(sim2.malloc(3, 160 * MiB, 0));
    EXPECT_EQ(sim2.segmentCount(), 4u);
}

// T17: a fraction refuses without calling the device
TEST(AllocatorSimulator, FractionLimit) {
    SimulatorSettings st;
    st.capacity = 1024 * MiB;
    st.set("fraction", "0.25");
    AddressSpace as;
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 200 * MiB, 0));
    EXPECT_FALSE(sim.malloc(1, 100 * MiB, 0));
    ASSERT_EQ(sim.ooms().size(), 1u);
    EXPECT_EQ(sim.ooms()[0].deviceFree, 824 * MiB);
}

// T18: equal sizes: the lower address wins
TEST(AllocatorSimulator, TieGoesToTheLowerAddress) {
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(20 * MiB, S2);  // the first segment made is the higher one
    as.addRecordedSegment(20 * MiB, S1);
    AllocatorSimulator sim(st, as);
    ASSERT_TRUE(sim.malloc(0, 5 * MiB, 0));
    ASSERT_TRUE(sim.malloc(1, 15 * MiB, 0));
    ASSERT_TRUE(sim.malloc(2, 5 * MiB, 0));
    ASSERT_TRUE(sim.malloc(3, 15 * MiB, 0));
    EXPECT_EQ(sim.addressOf(0), S2);
    EXPECT_EQ(sim.addressOf(2), S1);
    ASSERT_TRUE(sim.free(0));
    ASSERT_TRUE(sim.free(2));
    ASSERT_TRUE(sim.malloc(4, 4 * MiB, 0));  // rem exactly 1 MiB: not split
    EXPECT_EQ(sim.addressOf(4), S1);
    EXPECT_EQ(layout(sim, S1), (V{"0:5242880 A", "5242880:15728640 A"}));
}

// The state before a replay: blocks allocated before the trace, freed and merged during it
TEST(AllocatorSimulator, InitialStateMergesOnFree) {
    SimulatorSettings st;
    AddressSpace as;
    AllocatorSimulator sim(st, as);
    sim.addSegment(S1, 20 * MiB, 0, false,
                   {{S1, 4 * MiB, 4 * MiB, true, 0}, {S1 + 4 * MiB, 6 * MiB, 6 * MiB, true, 1}});
    EXPECT_EQ(layout(sim, S1), (V{"0:4194304 A", "4194304:6291456 A", "10485760:10485760 I"}));
    EXPECT_EQ(sim.reservedBytes(), 20 * MiB);
    ASSERT_TRUE(sim.free(1));
    EXPECT_EQ(layout(sim, S1), (V{"0:4194304 A", "4194304:16777216 I"}));
    ASSERT_TRUE(sim.malloc(2, 16 * MiB, 0));  // best fit: the merged block, no new segment
    EXPECT_EQ(sim.addressOf(2), S1 + 4 * MiB);
    EXPECT_FALSE(sim.free(1));  // already free
}

// An address the simulation cannot take from the recording (in use) is invented above it
TEST(AllocatorSimulator, AddressesInventedWhereTheRecordedOneIsTaken) {
    SimulatorSettings st;
    AddressSpace as;
    as.addRecordedSegment(20 * MiB, S1);
    AllocatorSimulator sim(st, as);
    sim.addSegment(S1, 2 * MiB, 0, true, {});  // S1 is already in use
    ASSERT_TRUE(sim.malloc(0, 5 * MiB, 0));
    EXPECT_GT(sim.addressOf(0), S1 + 20 * MiB);
    EXPECT_EQ(as.invented(), 1u);
}

// Random workloads under every kind of setting, on a small device: after every call the blocks
// tile their segments, no two free neighbours are left unmerged, and reserved / allocated /
// requested equal the sums over the blocks.
TEST(AllocatorSimulator, InvariantsHoldOnRandomWorkloads) {
    struct Config {
        const char* name;
        std::vector<std::pair<std::string, std::string>> set;
    };
    const std::vector<Config> configs = {
        {"default", {}},
        {"expandable", {{"expandable_segments", "True"}}},
        {"max_split", {{"max_split_size_mb", "40"}}},
        {"roundup", {{"roundup_power2_divisions", "[1:2,64:4,>:8]"}}},
        {"gc", {{"garbage_collection_threshold", "0.6"}, {"fraction", "0.8"}}},
        {"expandable+max_split", {{"expandable_segments", "True"}, {"max_split_size_mb", "40"}}},
    };
    for (const Config& c : configs) {
        for (unsigned seed = 1; seed <= 3; ++seed) {
            SimulatorSettings st;
            st.capacity = 512 * MiB;
            for (const auto& [k, v] : c.set) st.set(k, v);
            AddressSpace as;
            AllocatorSimulator sim(st, as);
            std::mt19937_64 rng(seed);
            std::vector<uint32_t> live;
            uint32_t next = 0;
            uint64_t expectRequested = 0;
            std::vector<uint64_t> asked;
            for (int step = 0; step < 3000; ++step) {
                uint64_t r = rng() % 100;
                const uint64_t stream = (rng() % 8 == 0) ? 7 : 0;
                if (r < 55 || live.empty()) {
                    uint64_t size;
                    switch (rng() % 4) {
                    case 0: size = 1 + rng() % 4096; break;
                    case 1: size = 1 + rng() % (1 * MiB); break;
                    case 2: size = 1 * MiB + rng() % (12 * MiB); break;
                    default: size = 8 * MiB + rng() % (60 * MiB); break;
                    }
                    uint32_t id = next++;
                    asked.resize(next, 0);
                    if (sim.malloc(id, size, stream)) {
                        live.push_back(id);
                        asked[id] = size;
                        expectRequested += size;
                    }
                } else if (r < 97) {
                    size_t k = rng() % live.size();
                    ASSERT_TRUE(sim.free(live[k]));
                    expectRequested -= asked[live[k]];
                    live[k] = live.back();
                    live.pop_back();
                } else {
                    sim.emptyCache();
                }
                uint64_t reserved = 0, allocated = 0, requested = 0;
                for (const auto& s : sim.segments()) {
                    uint64_t cursor = s.address;
                    bool prevFree = false;
                    for (const auto& b : s.blocks) {
                        ASSERT_EQ(b.address, cursor) << c.name << " seed " << seed << " step " << step;
                        ASSERT_GT(b.size, 0u);
                        ASSERT_FALSE(prevFree && !b.allocated) << c.name << ": unmerged free neighbours at step " << step;
                        prevFree = !b.allocated;
                        cursor += b.size;
                        if (b.allocated) {
                            allocated += b.size;
                            requested += b.requested;
                        }
                    }
                    ASSERT_EQ(cursor, s.address + s.size);
                    reserved += s.size;
                }
                ASSERT_EQ(reserved, sim.reservedBytes()) << c.name << " seed " << seed << " step " << step;
                ASSERT_EQ(allocated, sim.allocatedBytes()) << c.name << " seed " << seed << " step " << step;
                ASSERT_EQ(requested, sim.requestedBytes());
                ASSERT_EQ(requested, expectRequested);
                ASSERT_LE(reserved, st.capacity) << c.name << " seed " << seed << " step " << step;
                if (st.fractionSet()) {
                    ASSERT_LE(reserved, st.allowedMaximum());
                }
            }
            for (uint32_t id : live) ASSERT_TRUE(sim.isAllocated(id));
            EXPECT_GT(sim.ooms().size(), 0u) << c.name << ": the out-of-memory path was not exercised";
            EXPECT_GT(sim.allocRetries(), 0u) << c.name;
        }
    }
}
