// The what-if simulation's state right after a trace entry, as the block map draws it: worked
// out by hand from the allocator's rules on a small trace (small pool: 2 MiB segments, 512-byte
// rounding, a remainder of at least 512 bytes is split off, no merge with an allocated neighbour).
#include "memlens/model/SimulatedState.h"

#include "Synthetic.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace memlens::model;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint64_t S = 0x7f0000000000;

//   0 segment_alloc S 2 MiB   1 alloc S 500   2 alloc S+512 1000   3 free_requested S   4 free_completed S
Snapshot smallPoolTrace() {
    using namespace synth;
    P seg = segment(0, S,
                    {{S, 512, 0, "inactive", nullptr},
                     {S + 512, 1024, 1000, "active_allocated", nullptr},
                     {S + 1536, 2 * MiB - 1536, 0, "inactive", nullptr}});
    return read(snapshot({seg}, {{entry("segment_alloc", S, 2 * MiB), entry("alloc", S, 500),
                                  entry("alloc", S + 512, 1000), entry("free_requested", S, 500),
                                  entry("free_completed", S, 500)}}));
}

std::vector<std::string> blocksOf(const DeviceState& st) {
    std::vector<std::string> out;
    for (const auto& s : st.segments)
        for (const auto& b : s.blocks)
            out.push_back(std::to_string(b.address - S) + ":" + std::to_string(b.size) +
                          (b.kind == StateBlockKind::Allocated ? " A" : " I"));
    return out;
}

} // namespace

TEST(SimulatedState, AfterEachEntryOfASmallPoolTrace) {
    const Snapshot snap = smallPoolTrace();
    const SimulatorSettings settings = SimulatorSettings::fromSnapshot(snap);

    const DeviceState before = simulatedStateAfter(snap, 0, settings, {}, -1);
    EXPECT_TRUE(before.segments.empty());
    EXPECT_EQ(before.reservedBytes, 0u);

    const DeviceState two = simulatedStateAfter(snap, 0, settings, {}, 2);
    EXPECT_EQ(two.at, 2);
    ASSERT_EQ(two.segments.size(), 1u);
    EXPECT_EQ(two.segments[0].address, S);
    EXPECT_FALSE(two.segments[0].isLarge);
    EXPECT_EQ(blocksOf(two), (std::vector<std::string>{"0:512 A", "512:1024 A", "1536:2095616 I"}));
    EXPECT_EQ(two.reservedBytes, 2 * MiB);
    EXPECT_EQ(two.allocatedBytes, 1536u);
    EXPECT_EQ(two.requestedBytes, 1500u);
    EXPECT_EQ(two.largestFreeBlock, 2 * MiB - 1536);

    // the free at entry 4 leaves a 512-byte hole: its neighbour is still allocated
    const DeviceState four = simulatedStateAfter(snap, 0, settings, {}, 4);
    EXPECT_EQ(blocksOf(four), (std::vector<std::string>{"0:512 I", "512:1024 A", "1536:2095616 I"}));
    EXPECT_EQ(four.freeBytes, 2 * MiB - 1024);
    EXPECT_EQ(four.requestedBytes, 1000u);
    EXPECT_EQ(four.largestFreeBlock, 2 * MiB - 1536);
}

TEST(SimulatedState, EditsApply) {
    // dropping the allocations above 600 bytes: the second allocation never happens
    const Snapshot snap = smallPoolTrace();
    WorkloadEdits edits;
    edits.dropAbove = 600;
    const DeviceState two = simulatedStateAfter(snap, 0, SimulatorSettings::fromSnapshot(snap), edits, 2);
    EXPECT_EQ(blocksOf(two), (std::vector<std::string>{"0:512 A", "512:2096640 I"}));
    EXPECT_EQ(two.allocatedBytes, 512u);
}
