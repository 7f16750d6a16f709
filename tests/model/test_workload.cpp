// buildWorkload's allocations, worked out by hand on small traces: the stream each malloc asks
// on (kept as an index into the workload's table of streams), the entries of its alloc and free,
// and the refusal of a trace with more streams than the table holds.
#include "memlens/model/Replay.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/Workload.h"

#include "Synthetic.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

using namespace memlens::model;

namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t S = 0x7f0000000000;

synth::P on(const std::string& action, uint64_t addr, uint64_t size, uint64_t stream) {
    using namespace synth;
    return dict({{"action", str(action)}, {"addr", unum(addr)}, {"size", unum(size)}, {"stream", unum(stream)},
                 {"frames", list()}});
}

} // namespace

//   0 segment_alloc S 20 MiB (stream 7)   1 alloc S 512 (7)   2 alloc S+512 1024 (9)
//   3 free_completed S (7)   4 oom 8 GiB (11)   5 alloc S 512 (7)
TEST(Workload, EachAllocationKeepsItsStreamAndEntries) {
    using namespace synth;
    const Snapshot snap = read(snapshot(
        {segment(0, S, {{S, 512, 512, "active_allocated", nullptr}, {S + 512, 1024, 1024, "active_allocated", nullptr},
                        {S + 1536, 20 * MiB - 1536, 0, "inactive", nullptr}},
                 false, 7)},
        {{on("segment_alloc", S, 20 * MiB, 7), on("alloc", S, 512, 7), on("alloc", S + 512, 1024, 9),
          on("free_completed", S, 512, 7), on("oom", 0, 8192 * MiB, 11), on("alloc", S, 512, 7)}}));
    const Workload w = buildWorkload(snap, 0, SimulatorSettings::fromSnapshot(snap));
    ASSERT_EQ(w.allocations.size(), 4u);  // three allocs and the oom's malloc; none before the trace
    const std::vector<uint64_t> streams = {w.streamOf(w.allocations[0]), w.streamOf(w.allocations[1]),
                                           w.streamOf(w.allocations[2]), w.streamOf(w.allocations[3])};
    EXPECT_EQ(streams, (std::vector<uint64_t>{7, 9, 11, 7}));
    EXPECT_EQ(w.allocations[0].allocEntry, 1);
    EXPECT_EQ(w.allocations[0].freeEntry, 3);
    EXPECT_EQ(w.allocations[1].allocEntry, 2);
    EXPECT_EQ(w.allocations[1].freeEntry, -1);
    EXPECT_TRUE(w.allocations[2].oom);
    EXPECT_EQ(w.allocations[2].size, 8192 * MiB);
    EXPECT_EQ(w.allocations[3].allocEntry, 5);
    EXPECT_EQ(w.allocations[3].address, S);
    // the ops: malloc, malloc, free, malloc (oom), malloc at entries 1, 2, 3, 4, 5
    std::vector<int32_t> positions;
    for (const WorkloadOp& op : w.ops) positions.push_back(op.position);
    EXPECT_EQ(positions, (std::vector<int32_t>{1, 2, 3, 4, 5}));
}

// The frees of blocks allocated before the trace meet those blocks by address, whatever their
// order: the first free of each such block frees it; a second free of it, and a free of an
// address no block had (outside every segment), are left out and counted.
//   0 free_completed S+8192 2048   1 free_completed S+64 MiB 512 (no block)   2 alloc S+1 MiB 512
//   3 free_completed S+1 MiB 512   4 free_completed S 512   5 free_completed S+8192 2048 (again)
// The snapshot: S+4096 (1024) still allocated, the rest of the 20 MiB segment free.
TEST(Workload, FreesOfBlocksBeforeTheTraceMeetThemByAddress) {
    using namespace synth;
    const Snapshot snap = read(snapshot(
        {segment(0, S, {{S, 4096, 0, "inactive", nullptr}, {S + 4096, 1024, 1000, "active_allocated", nullptr},
                        {S + 5120, 20 * MiB - 5120, 0, "inactive", nullptr}})},
        {{on("free_completed", S + 8192, 2048, 0), on("free_completed", S + 64 * MiB, 512, 0),
          on("alloc", S + MiB, 512, 0), on("free_completed", S + MiB, 512, 0), on("free_completed", S, 512, 0),
          on("free_completed", S + 8192, 2048, 0)}}));
    const Workload w = buildWorkload(snap, 0, SimulatorSettings::fromSnapshot(snap));
    // the trace's allocation, then the blocks before the trace in address order: S, S+4096, S+8192
    ASSERT_EQ(w.allocations.size(), 4u);
    EXPECT_EQ(w.allocations[0].allocEntry, 2);
    EXPECT_EQ(w.allocations[0].freeEntry, 3);
    EXPECT_EQ(w.allocations[1].address, S);
    EXPECT_EQ(w.allocations[1].freeEntry, 4);
    EXPECT_EQ(w.allocations[2].address, S + 4096);
    EXPECT_EQ(w.allocations[2].freeEntry, -1);
    EXPECT_EQ(w.allocations[3].address, S + 8192);
    EXPECT_EQ(w.allocations[3].freeEntry, 0);
    EXPECT_EQ(w.unmatchedFrees, 2u);
    std::vector<std::pair<int32_t, uint32_t>> ops;  // (entry, allocation) of each op
    for (const WorkloadOp& op : w.ops) ops.emplace_back(op.position, op.id);
    EXPECT_EQ(ops, (std::vector<std::pair<int32_t, uint32_t>>{{0, 3}, {2, 0}, {3, 0}, {4, 1}}));
}

// 65,536 streams fit the table; one more is refused with an error that says why.
TEST(Workload, MoreStreamsThanTheTableHoldsAreRefused) {
    using namespace synth;
    for (const uint64_t streams : {65536u, 65537u}) {
        std::vector<P> trace = {on("segment_alloc", S, 2 * MiB, 0)};
        for (uint64_t k = 0; k < streams; ++k) {
            trace.push_back(on("alloc", S, 512, k + 1));
            trace.push_back(on("free_completed", S, 512, k + 1));
        }
        const Snapshot snap = read(snapshot({segment(0, S, {{S, 2 * MiB, 0, "inactive", nullptr}})}, {trace}));
        const SimulatorSettings settings = SimulatorSettings::fromSnapshot(snap);
        if (streams == 65536u) {
            const Workload w = buildWorkload(snap, 0, settings);
            EXPECT_EQ(w.streamValues.size(), 65536u);
            EXPECT_EQ(w.streamOf(w.allocations.back()), 65536u);
        } else {
            try {
                buildWorkload(snap, 0, settings);
                ADD_FAILURE() << "a trace on 65,537 streams was accepted";
            } catch (const std::length_error& e) {
                EXPECT_NE(std::string(e.what()).find("65,536 streams"), std::string::npos) << e.what();
            }
        }
    }
}
