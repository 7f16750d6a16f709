// The OOM verdict: hand-built states for each kind of failure (the allocator doc's T8 and T17
// among them), an `oom` entry of a synthetic trace, and the real OOM snapshots.
#include "Oracle.h"
#include "Synthetic.h"

#include "memlens/model/ByteFormat.h"
#include "memlens/model/OomVerdict.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

using namespace memlens::model;

namespace {

constexpr uint64_t MiB = 1ull << 20;

struct SegSpec {
    uint64_t stream;
    bool large;
    std::vector<std::pair<uint64_t, bool>> blocks;  // size, free?
};

DeviceState stateOf(const std::vector<SegSpec>& specs, bool expandable = false) {
    DeviceState st;
    uint64_t addr = 0x10000000;
    for (const auto& sp : specs) {
        StateSegment s;
        s.address = addr;
        s.stream = sp.stream;
        s.isLarge = sp.large;
        s.isExpandable = expandable;
        for (auto [size, free] : sp.blocks) {
            StateBlock b;
            b.address = addr;
            b.size = size;
            b.requestedSize = free ? 0 : size;
            b.kind = free ? StateBlockKind::Free : StateBlockKind::Allocated;
            s.blocks.push_back(b);
            addr += size;
            s.totalSize += size;
            if (free) {
                st.freeBytes += size;
                st.largestFreeBlock = std::max(st.largestFreeBlock, size);
            } else {
                st.allocatedBytes += size;
            }
        }
        st.reservedBytes += s.totalSize;
        st.segments.push_back(std::move(s));
        addr = (addr + (1ull << 30)) & ~((1ull << 30) - 1);
    }
    return st;
}

} // namespace

TEST(OomVerdict, AllocationSizes) {
    EXPECT_EQ(allocationSizeFor(512), 2 * MiB);
    EXPECT_EQ(allocationSizeFor(MiB), 2 * MiB);
    EXPECT_EQ(allocationSizeFor(MiB + 512), 20 * MiB);
    EXPECT_EQ(allocationSizeFor(10 * MiB), 10 * MiB);
    EXPECT_EQ(allocationSizeFor(12582913 + 511), 14 * MiB);  // caching-allocator T4
}

TEST(OomVerdict, OutOfMemoryAsInT8) {
    // 1 GiB device, 700 MiB allocated in one segment, 400 MiB asked; cudaMemGetInfo said 324 MiB free
    DeviceState st = stateOf({{0, true, {{700 * MiB, false}}}});
    OomVerdict v = judgeOom(st, 400 * MiB, 339738624);
    EXPECT_EQ(v.kind, OomKind::OutOfMemory);
    EXPECT_EQ(v.sentence, "out of memory: 400 MiB asked, only 0 B free in the allocator's cache and 324 MiB free on the device");
    EXPECT_EQ(v.newSegmentSize, 400 * MiB);
    EXPECT_EQ(v.liveBytes, 700 * MiB);
    EXPECT_NE(v.advice.find("700 MiB of the 700 MiB reserved"), std::string::npos) << v.advice;
    // the brief's example: some free in the cache, less than asked anyway
    DeviceState st2 = stateOf({{0, true, {{500 * MiB, false}, {120 * MiB, true}}}});
    OomVerdict v2 = judgeOom(st2, 400 * MiB, 80 * MiB);
    EXPECT_EQ(v2.sentence, "out of memory: 400 MiB asked, only 120 MiB free in the allocator's cache and 80 MiB free on the device");
    OomVerdict v3 = judgeOom(st2, 400 * MiB, std::nullopt);
    EXPECT_EQ(v3.kind, OomKind::OutOfMemory);
    EXPECT_EQ(v3.sentence, "out of memory: 400 MiB asked, only 120 MiB free in the allocator's cache; the device's free memory was not recorded");
}

TEST(OomVerdict, Fragmentation) {
    // 18 free blocks of 176 MiB between live ones: 3168 MiB free, none of it in one piece of 512 MiB
    std::vector<std::pair<uint64_t, bool>> blocks;
    for (int i = 0; i < 18; ++i) {
        blocks.push_back({64 * MiB, false});
        blocks.push_back({176 * MiB, true});
    }
    blocks.push_back({64 * MiB, false});
    DeviceState st = stateOf({{0, true, blocks}});
    OomVerdict v = judgeOom(st, 512 * MiB, 0);
    EXPECT_EQ(v.kind, OomKind::Fragmentation);
    EXPECT_EQ(v.cacheFree, 3168 * MiB);
    EXPECT_EQ(v.largestUsable, 176 * MiB);
    EXPECT_EQ(v.sentence, "fragmentation: 3.1 GiB free in total, largest free block 176 MiB, 512 MiB asked");
    EXPECT_NE(v.advice.find("expandable_segments:True"), std::string::npos);
    // free memory split between the cache and the device is fragmentation too
    DeviceState st2 = stateOf({{0, true, {{100 * MiB, false}, {300 * MiB, true}, {100 * MiB, false}}}});
    OomVerdict v2 = judgeOom(st2, 400 * MiB, 150 * MiB);
    EXPECT_EQ(v2.kind, OomKind::Fragmentation);
    EXPECT_EQ(v2.sentence,
              "fragmentation: 450 MiB free in total (300 MiB cached, 150 MiB on the device), largest free block 300 MiB, "
              "400 MiB asked");
    // with expandable segments already on, the advice says so
    DeviceState st3 = stateOf({{0, true, blocks}}, true);
    EXPECT_EQ(judgeOom(st3, 512 * MiB, 0).advice.find("expandable_segments:True"), std::string::npos);
}

TEST(OomVerdict, FreeBlockOfAnotherStreamOrPool) {
    DeviceState st = stateOf({{0, true, {{200 * MiB, false}, {50 * MiB, true}}}, {7, true, {{600 * MiB, true}}}});
    OomVerdict v = judgeOom(st, 512 * MiB, 10 * MiB, 0);
    EXPECT_EQ(v.kind, OomKind::OtherStream);
    EXPECT_EQ(v.largestFree, 600 * MiB);
    EXPECT_EQ(v.largestUsable, 50 * MiB);
    EXPECT_EQ(v.sentence, "free memory on another stream: a 600 MiB free block is cached for another stream or pool, "
                          "512 MiB asked, largest usable block 50 MiB");
    // the same request on stream 7 would have fitted: the allocator refused the block
    OomVerdict r = judgeOom(st, 512 * MiB, 10 * MiB, 7);
    EXPECT_EQ(r.kind, OomKind::Refused);
    // a small-pool free block cannot serve a large request
    DeviceState sm = stateOf({{0, false, {{512 * 1024, false}, {1536 * 1024, true}}}, {0, true, {{20 * MiB, false}}}});
    OomVerdict p = judgeOom(sm, 1536 * 1024, 0, 0);
    EXPECT_EQ(p.kind, OomKind::OtherStream);
    EXPECT_FALSE(p.smallPool);
    EXPECT_TRUE(judgeOom(sm, 1024 * 1024, 0, 0).smallPool);
}

TEST(OomVerdict, MemoryLimitAsInT17) {
    // fraction 0.25 of 1 GiB: 200 MiB reserved, 100 MiB refused while the device has 824 MiB free
    DeviceState st = stateOf({{0, true, {{200 * MiB, false}}}});
    OomVerdict v = judgeOom(st, 100 * MiB, 824 * MiB);
    EXPECT_EQ(v.kind, OomKind::MemoryLimit);
    EXPECT_EQ(v.sentence, "memory limit: 100 MiB asked and 824 MiB free on the device, but a per-process memory "
                          "fraction refused a new 100 MiB segment");
    // room for the request but not for the 20 MiB segment a 5 MiB request needs: out of memory
    OomVerdict w = judgeOom(st, 5 * MiB, 15 * MiB);
    EXPECT_NE(w.kind, OomKind::MemoryLimit);
}

TEST(OomVerdict, AtAnOomEntryOfATrace) {
    using namespace synth;
    constexpr uint64_t S = 0x7f0000000000;
    P seg = segment(0, S, {{S, 700 * MiB, 700 * MiB, "active_allocated", nullptr}});
    P oom = dict({{"action", str("oom")}, {"device_free", unum(339738624)}, {"size", unum(400 * MiB)},
                  {"stream", num(0)}, {"frames", list()}});
    Snapshot snap = read(snapshot({seg}, {{entry("segment_alloc", S, 700 * MiB), entry("alloc", S, 700 * MiB), oom}}));
    StateHistory h(snap, 0);
    const DeviceData& d = *snap.device(0);
    EXPECT_FALSE(oomVerdictAt(d, h, 1).has_value());
    EXPECT_FALSE(oomVerdictAt(d, h, 3).has_value());
    EXPECT_FALSE(oomVerdictAt(d, h, -1).has_value());
    auto v = oomVerdictAt(d, h, 2);
    ASSERT_TRUE(v.has_value());
    EXPECT_EQ(v->entry, 2);
    EXPECT_EQ(v->kind, OomKind::OutOfMemory);
    EXPECT_EQ(v->deviceFree, std::optional<uint64_t>(339738624));
    EXPECT_EQ(v->reservedBytes, 700 * MiB);
    EXPECT_EQ(v->sentence, "out of memory: 400 MiB asked, only 0 B free in the allocator's cache and 324 MiB free on the device");
    EXPECT_STREQ(oomKindName(v->kind), "out of memory");
}

TEST(OomVerdict, RealOomSnapshots) {
    namespace fs = std::filesystem;
    fs::path file = fs::path(MEMLENS_SNAPSHOTS_DIR) / "Constructor-Sun__code_location__memory_snapshot.pickle";
    if (!fs::exists(file)) GTEST_SKIP() << "no " << file;
    // the oom entries as Python's pickle reads them (tests/tools/snapshot_oracle.py)
    const auto ooms = oracle::entries(file.string(), "oom");
    ASSERT_TRUE(ooms) << "the oracle failed on " << file;
    ASSERT_FALSE(ooms->empty());
    Snapshot s = readSnapshotFile(file.string());
    for (const DeviceData& dev : s.devices) {
        const DeviceData* d = &dev;
        const int device = dev.device;
        StateHistory h(s, device);
        std::vector<int64_t> found, expected;
        for (const auto& e : *ooms)
            if (e.device == device) expected.push_back(e.index);
        for (int64_t i = 0; i < h.entries(); ++i) {
            auto v = oomVerdictAt(*d, h, i);
            if (!v) continue;
            found.push_back(i);
            const auto it = std::find_if(ooms->begin(), ooms->end(), [&](const auto& e) { return e.device == device && e.index == i; });
            if (it == ooms->end()) {
                ADD_FAILURE() << "a verdict at entry " << i << " of device " << device << ", which is no oom entry";
                continue;
            }
            const auto& o = *it;
            // gigabytes asked with almost all of the reserved bytes live: plainly out of memory
            EXPECT_EQ(v->kind, OomKind::OutOfMemory);
            EXPECT_EQ(v->asked, o.size);
            EXPECT_LT(v->cacheFree, v->asked);
            const std::string start = "out of memory: " + formatBytes(o.size) + " asked, only ";
            EXPECT_EQ(v->sentence.rfind(start, 0), 0u) << v->sentence << " / expected to start with " << start;
            EXPECT_TRUE(v->expandable);
        }
        EXPECT_EQ(found, expected) << "device " << device;
    }
}

TEST(OomVerdict, ExampleSnapshot) {
    Snapshot s = readSnapshotFile(std::string(MEMLENS_SOURCE_DIR) + "/resources/example.pickle");
    StateHistory h(s, 0);
    int found = 0;
    for (int64_t i = 0; i < h.entries(); ++i)
        if (auto v = oomVerdictAt(*s.device(0), h, i)) {
            ++found;
            EXPECT_FALSE(v->sentence.empty());
            EXPECT_TRUE(v->deviceFree.has_value());
        }
    EXPECT_EQ(found, 1);
}
