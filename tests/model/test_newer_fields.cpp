// What torch after 2.11 adds to a snapshot (NewerSnapshot.h, its contents known by construction):
// pinned host memory as a device of its own, private pools apart in the final figures, the
// timeline and the state, user metadata and compile context per entry, FX node fields of frames,
// the trace ring buffer's flags in each of the forms a writer may use, and the settings described.
#include "NewerSnapshot.h"
#include "Synthetic.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/MemoryBreakdown.h"
#include "memlens/model/SettingsDescription.h"
#include "memlens/model/SnapshotSlice.h"
#include "memlens/model/SnapshotStats.h"
#include "memlens/model/Timeline.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace memlens::model;
using newer::MiB;

namespace {

Snapshot newerSnapshot() { return synth::read(newer::snapshot()); }

// The snapshot with one top-level or allocator_settings key replaced.
testpickle::P withKey(testpickle::P doc, const std::string& key, testpickle::P value, bool inSettings) {
    testpickle::P holder = doc;
    if (inSettings)
        for (auto& [k, v] : doc->kv)
            if (k->s == "allocator_settings") holder = v;
    for (auto& [k, v] : holder->kv)
        if (k->s == key) {
            v = value;
            return doc;
        }
    holder->kv.emplace_back(testpickle::str(key), value);
    return doc;
}

testpickle::P withoutKey(testpickle::P doc, const std::string& key) {
    for (auto& [k, v] : doc->kv)
        if (k->s == "allocator_settings")
            std::erase_if(v->kv, [&](const auto& kv) { return kv.first->s == key; });
    return doc;
}

std::string str(const Snapshot& s, StringId id) { return std::string(s.str(id)); }

} // namespace

TEST(NewerFields, PinnedHostMemoryIsADeviceOfItsOwn) {
    const Snapshot s = newerSnapshot();
    ASSERT_EQ(s.devices.size(), 2u);
    const DeviceData* host = s.device(kHostDevice);
    ASSERT_NE(host, nullptr);
    EXPECT_TRUE(host->isHost());
    EXPECT_EQ(deviceName(kHostDevice), "host");
    EXPECT_EQ(deviceName(0), "cuda:0");
    ASSERT_EQ(host->segments.size(), 2u);
    EXPECT_EQ(host->segments[0].address, newer::kH1);
    EXPECT_EQ(host->segments[1].totalSize, 8192u);
    EXPECT_EQ(host->trace.rows(), 6u);
    const auto stats = computeStats(s);
    ASSERT_EQ(stats.size(), 2u);
    EXPECT_EQ(stats[0].device, kHostDevice);
    EXPECT_EQ(stats[0].reservedBytes, 12288u);
    EXPECT_EQ(stats[0].allocatedBytes, 4096u);
    EXPECT_EQ(stats[0].freeBytes, 8192u);
    EXPECT_EQ(stats[1].device, 0);
    EXPECT_EQ(stats[1].traceEvents, 9u);  // the host's entries stay out of the GPU's trace
    // its timeline: 4 KiB then 12 KiB reserved; live 4 KiB, 12 KiB, back to 4 KiB at the free
    const DeviceTimeline tl = computeTimeline(*host);
    EXPECT_EQ(tl.reservedBytes.toVector(), (std::vector<int64_t>{4096, 4096, 12288, 12288, 12288, 12288}));
    EXPECT_EQ(tl.liveBytes.toVector(), (std::vector<int64_t>{0, 4096, 4096, 12288, 12288, 4096}));
    EXPECT_EQ(tl.reservedBefore, 0);
}

TEST(NewerFields, HostTracesAsOneFlatListReadTheSame) {
    auto doc = newer::snapshot();
    testpickle::P nested;
    for (auto& [k, v] : doc->kv)
        if (k->s == "host_traces") nested = v->items[0];
    const Snapshot s = synth::read(withKey(doc, "host_traces", nested, false));
    ASSERT_NE(s.device(kHostDevice), nullptr);
    EXPECT_EQ(s.device(kHostDevice)->trace.rows(), 6u);
    EXPECT_EQ(s.device(0)->trace.rows(), 9u);
}

TEST(NewerFields, PrivatePoolsApartInTheFinalFigures) {
    const Snapshot s = newerSnapshot();
    const auto stats = computeStats(s);
    const DeviceStats& d = stats[1];
    ASSERT_EQ(d.pools.size(), 3u);  // sorted by pool: (0,0), (0,1), (1,0)
    EXPECT_EQ(d.pools[0].pool, (PoolId{0, 0}));
    EXPECT_EQ(d.pools[0].reservedBytes, 2 * MiB);
    EXPECT_EQ(d.pools[0].allocatedBytes, MiB);
    EXPECT_EQ(d.pools[1].pool, (PoolId{0, 1}));
    EXPECT_EQ(d.pools[1].reservedBytes, 20 * MiB);
    EXPECT_EQ(d.pools[1].allocatedBytes, 20 * MiB);
    EXPECT_EQ(d.pools[2].pool, (PoolId{1, 0}));
    EXPECT_EQ(d.pools[2].reservedBytes, 2 * MiB);
    EXPECT_EQ(d.pools[2].allocatedBytes, 512u * 1024);
    EXPECT_EQ(poolName(PoolId{0, 1}), "private pool (0, 1)");
    EXPECT_EQ(poolName(PoolId{}), "default pool");
}

TEST(NewerFields, EachPrivatePoolHasItsReservedSeries) {
    const Snapshot s = newerSnapshot();
    const DeviceTimeline tl = computeTimeline(*s.device(0));
    ASSERT_EQ(tl.privatePools.size(), 2u);
    // the MemPool's segment comes with entry 2; the graph pool's was there before the trace
    EXPECT_EQ(tl.privatePools[0].pool, (PoolId{0, 1}));
    EXPECT_EQ(tl.privatePools[0].reservedBefore, 0);
    const int64_t b = static_cast<int64_t>(20 * MiB);
    EXPECT_EQ(tl.privatePools[0].reservedBytes, (std::vector<int64_t>{0, 0, b, b, b, b, b, b, b}));
    EXPECT_EQ(tl.privatePools[1].pool, (PoolId{1, 0}));
    EXPECT_EQ(tl.privatePools[1].reservedBefore, static_cast<int64_t>(2 * MiB));
    for (int64_t v : tl.privatePools[1].reservedBytes) EXPECT_EQ(v, static_cast<int64_t>(2 * MiB));
    // all segments: C alone before the trace, then A, then B
    EXPECT_EQ(tl.reservedBefore, static_cast<int64_t>(2 * MiB));
    EXPECT_EQ(tl.reservedBytes.back(), static_cast<int64_t>(24 * MiB));
}

TEST(NewerFields, StatesAndBreakdownKeepThePools) {
    const Snapshot s = newerSnapshot();
    StateHistory h(s, 0);
    const DeviceState before = h.stateAfter(-1);
    ASSERT_EQ(before.segments.size(), 1u);  // C, made before the trace
    EXPECT_EQ(before.segments[0].pool, (PoolId{1, 0}));
    // the block freed at entries 7-8 was allocated before the first kept entry
    bool found = false;
    for (const StateBlock& blk : before.segments[0].blocks)
        if (blk.address == newer::kC + 512 * 1024) {
            found = true;
            EXPECT_EQ(blk.kind, StateBlockKind::BeforeRecording);
        }
    EXPECT_TRUE(found);
    const DeviceState end = h.stateAfter(8);
    ASSERT_EQ(end.segments.size(), 3u);
    const MemoryBreakdown b = computeBreakdown(end);
    ASSERT_EQ(b.privatePools.size(), 2u);
    EXPECT_EQ(b.privatePools[0].pool, (PoolId{0, 1}));
    EXPECT_EQ(b.privatePools[0].reservedBytes, 20 * MiB);
    EXPECT_EQ(b.privatePools[0].liveBytes, 20 * MiB);
    EXPECT_EQ(b.privatePools[0].freeBytes, 0u);
    EXPECT_EQ(b.privatePools[1].pool, (PoolId{1, 0}));
    EXPECT_EQ(b.privatePools[1].liveBytes, 512u * 1024);
    EXPECT_EQ(b.privatePools[1].freeBytes, 1536u * 1024);
    EXPECT_EQ(b.reservedBytes, 24 * MiB);  // the pools are inside the parts, not added to them
}

TEST(NewerFields, MetadataAndCompileContextPerEntry) {
    const Snapshot s = newerSnapshot();
    const TraceColumns& t = s.device(0)->trace;
    EXPECT_EQ(str(s, t.userMetadata[1]), "phase=train step=1");
    EXPECT_EQ(str(s, t.userMetadata[3]), "phase=eval");
    EXPECT_EQ(str(s, t.userMetadata[4]), "");
    EXPECT_EQ(str(s, t.compileContext[2]), "Torch-Compiled Region: 0/0");
    EXPECT_EQ(str(s, t.compileContext[0]), "N/A");
}

TEST(NewerFields, FxFieldsOfFramesAreRead) {
    const Snapshot s = newerSnapshot();
    const TraceColumns& t = s.device(0)->trace;
    const StackId stack = t.stack[1];
    ASSERT_EQ(s.stackSize(stack), 2u);
    const Frame& top = s.frames[s.stackBegin(stack)[0]];
    EXPECT_EQ(str(s, top.name), "call");
    EXPECT_TRUE(top.hasFx());
    EXPECT_EQ(str(s, top.fxOp), "call_function");
    EXPECT_EQ(str(s, top.fxName), "addmm");
    EXPECT_EQ(str(s, top.fxTarget), "aten.addmm.default");
    EXPECT_NE(str(s, top.fxOriginalTrace).find("x = self.fc(x)"), std::string::npos);
    const Frame& caller = s.frames[s.stackBegin(stack)[1]];
    EXPECT_FALSE(caller.hasFx());
    EXPECT_EQ(caller.line, 12u);
    // the same frame of the block in the segments is the same frame id (interned with its fx keys)
    EXPECT_EQ(s.device(0)->blocks[0].stack, stack);
}

TEST(NewerFields, TheRingBufferFlagsInEveryForm) {
    {
        const Snapshot s = newerSnapshot();  // lists indexed by device, in allocator_settings
        EXPECT_EQ(s.device(0)->traceOverflowed, std::optional<bool>(true));
        EXPECT_EQ(s.device(0)->traceMaxEntries, std::optional<int64_t>(newer::kMaxEntries));
        EXPECT_TRUE(s.device(0)->traceTruncated());
        EXPECT_FALSE(s.device(kHostDevice)->traceOverflowed.has_value());  // the list names device 0 only
    }
    {
        // one value at the top level: every CUDA device, not the host's own buffer
        auto doc = withoutKey(withoutKey(newer::snapshot(), "trace_alloc_overflowed"), "trace_alloc_max_entries");
        doc = withKey(doc, "trace_alloc_overflowed", testpickle::boolean(false), false);
        doc = withKey(doc, "trace_alloc_max_entries", testpickle::num(100000), false);
        const Snapshot s = synth::read(doc);
        EXPECT_EQ(s.device(0)->traceOverflowed, std::optional<bool>(false));
        EXPECT_EQ(s.device(0)->traceMaxEntries, std::optional<int64_t>(100000));
        EXPECT_FALSE(s.device(kHostDevice)->traceOverflowed.has_value());
    }
    {
        // a dict keyed by device, "host" included
        auto doc = newer::snapshot();
        doc = withKey(doc, "trace_alloc_overflowed",
                      testpickle::dict({{"host", testpickle::boolean(true)}}), true);
        const Snapshot s = synth::read(doc);
        EXPECT_EQ(s.device(kHostDevice)->traceOverflowed, std::optional<bool>(true));
        EXPECT_FALSE(s.device(0)->traceOverflowed.has_value());
    }
    {
        // a file that does not say: unknown, not "complete"
        const Snapshot s = synth::read(withoutKey(withoutKey(newer::snapshot(), "trace_alloc_overflowed"), "trace_alloc_max_entries"));
        EXPECT_FALSE(s.device(0)->traceOverflowed.has_value());
        EXPECT_FALSE(s.device(0)->traceTruncated());
    }
}

TEST(NewerFields, SettingsAreDescribed) {
    const Snapshot s = newerSnapshot();
    const auto lines = describeSettings(s, 0);
    auto find = [&](const std::string& key) -> const SettingLine* {
        for (const auto& l : lines)
            if (l.key == key) return &l;
        return nullptr;
    };
    const SettingLine* split = find("max_split_size");
    ASSERT_NE(split, nullptr);
    EXPECT_EQ(split->value, std::to_string(64 * MiB));
    EXPECT_NE(split->meaning.find("never split"), std::string::npos) << split->meaning;
    const SettingLine* expandable = find("expandable_segments");
    ASSERT_NE(expandable, nullptr);
    EXPECT_NE(expandable->meaning.find("Off"), std::string::npos);
    const SettingLine* roundup = find("roundup_power2_divisions");
    ASSERT_NE(roundup, nullptr);
    EXPECT_NE(roundup->meaning.find("steps between powers of two"), std::string::npos) << roundup->value;
    const SettingLine* overflow = find("trace_alloc_overflowed");
    ASSERT_NE(overflow, nullptr);
    EXPECT_EQ(overflow->value, "True");
    EXPECT_NE(overflow->meaning.find("mid-run"), std::string::npos);
    const SettingLine* max = find("trace_alloc_max_entries");
    ASSERT_NE(max, nullptr);
    EXPECT_EQ(max->value, "9");
    // the ring buffer lines are per device, once each
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const SettingLine& l) { return l.key == "trace_alloc_max_entries"; }), 1);
    // a snapshot without settings (torch before 2.3) describes nothing
    const Snapshot old = synth::read(synth::snapshot({}, {}));
    const auto oldLines = describeSettings(old, 0);
    for (const auto& l : oldLines) EXPECT_TRUE(l.key == "PYTORCH_CUDA_ALLOC_CONF" || l.key == "max_split_size") << l.key;
}

TEST(NewerFields, WhatIsNotShownIsSaid) {
    EXPECT_TRUE(newerSnapshot().notes.empty());
    auto doc = newer::snapshot();
    for (auto& [k, v] : doc->kv)
        if (k->s == "device_traces")
            for (int i : {1, 3})  // two entries carry the forward-pass stack as strings
                v->items[0]->items[static_cast<size_t>(i)]->kv.emplace_back(
                    testpickle::str("forward_frames"), testpickle::list({testpickle::str("model.py:42 forward")}));
    doc->kv.emplace_back(testpickle::str("device_memory_usage"), testpickle::list());
    const Snapshot s = synth::read(doc);
    ASSERT_EQ(s.notes.size(), 2u);
    EXPECT_EQ(s.notes[0], "2 trace entries carry 'forward_frames', which memlens reads past and does not show yet");
    EXPECT_EQ(s.notes[1], "the snapshot has a top-level 'device_memory_usage', which memlens does not read yet");
    EXPECT_EQ(s.device(0)->trace.rows(), 9u);  // the entries themselves are read as before
}

// A slice keeps what the newer fields say: pools, FX frames, metadata, compile contexts; it holds
// the one device it was cut from.
TEST(NewerFields, ASliceKeepsThemAndReadsBack) {
    const Snapshot s = newerSnapshot();
    SliceInfo info;
    const std::string bytes = sliceSnapshot(s, 0, 1, 4, &info);
    EXPECT_EQ(info.entries, 4);
    EXPECT_EQ(info.segments, 3u);  // after entry 4: C (from before the trace), A (entry 0), B (entry 2)
    const Snapshot t = synth::read(bytes);
    ASSERT_NE(t.device(0), nullptr);
    EXPECT_EQ(t.device(kHostDevice), nullptr);
    const TraceColumns& tr = t.device(0)->trace;
    ASSERT_EQ(tr.rows(), 4u);
    EXPECT_EQ(str(t, tr.userMetadata[0]), "phase=train step=1");
    EXPECT_EQ(str(t, tr.compileContext[1]), "Torch-Compiled Region: 0/0");
    const Frame& top = t.frames[t.stackBegin(tr.stack[0])[0]];
    EXPECT_EQ(str(t, top.fxName), "addmm");
    EXPECT_NE(str(t, top.fxOriginalTrace).find("self.fc(x)"), std::string::npos);
    std::vector<PoolId> pools;
    for (const Segment& seg : t.device(0)->segments) pools.push_back(seg.pool());
    EXPECT_NE(std::find(pools.begin(), pools.end(), PoolId{0, 1}), pools.end());
    EXPECT_NE(std::find(pools.begin(), pools.end(), PoolId{1, 0}), pools.end());
    // the settings come back with their types: a bool stays a bool, the dict a dict
    bool sawExpandable = false, sawRoundup = false;
    for (const auto& [k, v] : t.allocatorSettings) {
        if (k == "expandable_segments") sawExpandable = v == "False";
        if (k == "roundup_power2_divisions") sawRoundup = v.find("2: 4") != std::string::npos;
    }
    EXPECT_TRUE(sawExpandable);
    EXPECT_TRUE(sawRoundup);
    EXPECT_THROW(sliceSnapshot(s, 0, 5, 2), std::invalid_argument);
    EXPECT_THROW(sliceSnapshot(s, 0, 0, 9), std::invalid_argument);
    EXPECT_THROW(sliceSnapshot(s, 3, 0, 1), std::invalid_argument);
    EXPECT_THROW(sliceSnapshot(s, kHostDevice, 0, 1), std::invalid_argument);  // no memory_viz form yet
}
