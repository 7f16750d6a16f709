// A state history's checkpoint gives back exactly what it was given: random segments and blocks
// over the whole range of each field (wrapping differences, sizes that are and are not multiples
// of 512, requested above and below the size, private pools, every flag, alloc entries before,
// at and after the checkpoint's), and refuses what it cannot hold.
#include "memlens/model/StateCheckpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <tuple>

using namespace memlens::model;

namespace {

// a segment's fields as a tuple (StateSegment has no ==; its blocks are not the checkpoint's)
auto fields(const StateSegment& s) {
    return std::make_tuple(s.address, s.totalSize, s.stream, s.isExpandable, s.isLarge, s.pool.owner, s.pool.id);
}

struct Decoded {
    std::vector<StateSegment> segments;
    std::vector<CheckpointBlock> blocks;
};

Decoded decode(const StateCheckpoint& c) {
    Decoded d;
    c.decode([&d](const StateSegment& s) { d.segments.push_back(s); },
             [&d](const CheckpointBlock& b) { d.blocks.push_back(b); });
    return d;
}

uint64_t anyValue(std::mt19937_64& rng) {
    switch (rng() % 5) {
    case 0: return rng();                       // anything, the top bits included
    case 1: return (rng() % 100000) * 512;      // a multiple of 512
    case 2: return rng() % 1000;                // small
    case 3: return ~uint64_t(0) - rng() % 3;    // the top of the range
    default: return (rng() % (uint64_t(1) << 40)) * 512 + rng() % 512;
    }
}

} // namespace

TEST(StateCheckpoint, GivesBackRandomStatesExactly) {
    std::mt19937_64 rng(2026);
    for (int round = 0; round < 200; ++round) {
        SCOPED_TRACE(round);
        const int64_t at = static_cast<int64_t>(rng() % 3 == 0 ? rng() % 4 - 1 : rng() % (uint64_t(1) << 40));
        std::vector<StateSegment> segments(rng() % 50);
        for (auto& s : segments) {
            s.address = anyValue(rng);
            s.totalSize = anyValue(rng);
            s.stream = rng() % 2 ? 0 : rng();
            s.isExpandable = rng() % 2;
            s.isLarge = rng() % 2;
            if (rng() % 3 == 0) s.pool = {static_cast<int64_t>(rng()), static_cast<int64_t>(rng() % 7) - 3};
        }
        // in address order, as the history gives them; addresses may repeat
        std::sort(segments.begin(), segments.end(),
                  [](const StateSegment& x, const StateSegment& y) { return x.address < y.address; });
        std::vector<CheckpointBlock> blocks(rng() % 300);
        uint64_t address = rng();
        for (auto& b : blocks) {
            address += rng() % 4 == 0 ? rng() : rng() % 100000;  // sometimes wraps past 2^64
            b.address = address;
            b.size = anyValue(rng);
            b.requested = rng() % 3 == 0 ? anyValue(rng) : b.size - rng() % 512;
            b.stack = static_cast<StackId>(rng());
            const uint64_t kind = rng() % 4;
            b.allocIndex = kind == 0 ? -1
                         : kind == 1 ? static_cast<int64_t>(rng() % (uint64_t(1) << 40))
                                     : std::clamp<int64_t>(at - static_cast<int64_t>(rng() % 100000), -1,
                                                           StateCheckpoint::kMaxAllocIndex);
            b.flags = static_cast<uint8_t>(rng() % 8);
        }
        std::vector<CheckpointBlock> shuffled = blocks;
        std::shuffle(shuffled.begin(), shuffled.end(), rng);
        const StateCheckpoint c(at, segments, shuffled);
        EXPECT_EQ(c.at(), at);
        EXPECT_EQ(c.segmentCount(), segments.size());
        EXPECT_EQ(c.blockCount(), blocks.size());
        const Decoded d = decode(c);
        ASSERT_EQ(d.segments.size(), segments.size());
        for (size_t i = 0; i < segments.size(); ++i) {
            EXPECT_EQ(fields(d.segments[i]), fields(segments[i])) << "segment " << i;
            EXPECT_TRUE(d.segments[i].blocks.empty());
        }
        std::vector<CheckpointBlock> byAddress = blocks;
        std::stable_sort(byAddress.begin(), byAddress.end(),
                         [](const CheckpointBlock& x, const CheckpointBlock& y) { return x.address < y.address; });
        ASSERT_EQ(d.blocks.size(), byAddress.size());
        // equal addresses (after a wrap) may come back in either order: compare as sorted sets
        auto key = [](const CheckpointBlock& b) {
            return std::tie(b.address, b.size, b.requested, b.stack, b.allocIndex, b.flags);
        };
        auto sorted = [&key](std::vector<CheckpointBlock> v) {
            std::sort(v.begin(), v.end(), [&key](const auto& x, const auto& y) { return key(x) < key(y); });
            return v;
        };
        EXPECT_EQ(sorted(d.blocks), sorted(byAddress));
        EXPECT_TRUE(std::is_sorted(d.blocks.begin(), d.blocks.end(),
                                   [](const auto& x, const auto& y) { return x.address < y.address; }));
    }
}

TEST(StateCheckpoint, AnEmptyStateAndOneBlock) {
    const StateCheckpoint empty(-1, {}, {});
    EXPECT_EQ(empty.at(), -1);
    EXPECT_TRUE(decode(empty).segments.empty());
    EXPECT_TRUE(decode(empty).blocks.empty());
    const CheckpointBlock b{0x7f0000001000, 1536, 1500, 42, 17, 5};
    const Decoded d = decode(StateCheckpoint(20, {}, {b}));
    ASSERT_EQ(d.blocks.size(), 1u);
    EXPECT_EQ(d.blocks[0], b);
}

TEST(StateCheckpoint, TypicalBlocksTakeFarLessThanTheirRecords) {
    // 10,000 blocks 512 bytes apart in size steps of 512, allocated within the last 100,000
    // entries, stacks below 2^16: each field fits in one to three bytes
    std::vector<CheckpointBlock> blocks;
    uint64_t address = 0x7f0000000000;
    for (int i = 0; i < 10000; ++i) {
        const uint64_t size = 512 * static_cast<uint64_t>(1 + i % 2000);
        blocks.push_back({address, size, size - 100, static_cast<StackId>(i % 60000), 1000000 - i * 10, 0});
        address += size + 512;
    }
    const StateCheckpoint c(1000000, {}, blocks);
    EXPECT_LT(c.memoryBytes(), blocks.size() * 14) << "33 bytes a block as plain records";
}

TEST(StateCheckpoint, RefusesWhatItCannotHold) {
    EXPECT_THROW(StateCheckpoint(-2, {}, {}), std::invalid_argument);
    EXPECT_THROW(StateCheckpoint(StateCheckpoint::kMaxAllocIndex + 1, {}, {}), std::invalid_argument);
    CheckpointBlock b;
    b.allocIndex = StateCheckpoint::kMaxAllocIndex + 1;
    EXPECT_THROW(StateCheckpoint(0, {}, {b}), std::invalid_argument);
    b.allocIndex = -2;
    EXPECT_THROW(StateCheckpoint(0, {}, {b}), std::invalid_argument);
    b.allocIndex = 0;
    b.flags = 8;
    EXPECT_THROW(StateCheckpoint(0, {}, {b}), std::invalid_argument);
    b.flags = 7;
    EXPECT_NO_THROW(StateCheckpoint(StateCheckpoint::kMaxAllocIndex, {}, {b}));
}
