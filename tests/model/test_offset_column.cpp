// OffsetColumn: 64-bit values kept as distances of 1 to 4 bytes from a base per 64 rows, the rows
// that do not fit aside; every value read back exactly, by index and by iterator.
#include "memlens/model/OffsetColumn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <utility>
#include <vector>

using memlens::model::AddressColumn;
using memlens::model::TimeColumn;

namespace {

template <class Column, class T>
void expectSame(const Column& c, const std::vector<T>& values) {
    ASSERT_EQ(c.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(c[i], values[i]) << "row " << i;
    size_t i = 0;
    for (auto v : c) ASSERT_EQ(v, values[i++]) << "iterating, row " << i - 1;
    // scanned: the whole column, and ranges that start and end inside blocks
    const size_t n = values.size();
    for (const auto& range : std::vector<std::pair<size_t, size_t>>{{0, n}, {n / 3, n - n / 5}, {n / 2, n / 2 + 1}, {n, n}}) {
        const size_t from = range.first, to = range.second;  // not a structured binding: clang 14's lambdas cannot take one
        if (to > n) continue;  // an empty column
        size_t next = from;
        c.scan(from, to, [&](size_t row, auto v) {
            ASSERT_EQ(row, next) << "scanning [" << from << ", " << to << ")";
            ASSERT_EQ(v, values[row]) << "scanning, row " << row;
            ++next;
        });
        ASSERT_EQ(next, to) << "scanning [" << from << ", " << to << ")";
    }
    if (!values.empty()) {
        EXPECT_EQ(c.front(), values.front());
        EXPECT_EQ(c.back(), values.back());
    }
}

} // namespace

TEST(OffsetColumn, GivesBackEveryTime) {
    std::mt19937_64 rng(5);
    std::vector<int64_t> values;
    TimeColumn c;
    c.reserve(100);  // fewer than it will hold: it grows past its reservation
    int64_t t = 1'730'000'000'000'000;
    for (int i = 0; i < 50000; ++i) {
        int64_t v;
        const uint64_t r = rng() % 200;
        if (r < 10) v = -1;                                                   // no time
        else if (r < 15) v = static_cast<int64_t>(rng());                     // anything at all
        else if (r < 17) v = t += int64_t(INT32_MAX) + static_cast<int64_t>(rng() % 3);  // a jump just out of range
        else if (r < 20) v = t - int64_t(INT32_MAX);                          // about the farthest a row may lie back
        else v = t += static_cast<int64_t>(rng() % 1000);
        values.push_back(v);
        c.push_back(v);
    }
    expectSame(c, values);
    EXPECT_GT(c.asideCount(), 0u);
    EXPECT_LT(c.asideCount(), values.size() / 2);
}

TEST(OffsetColumn, AddressesInUnitsOfTheSmallestBlock) {
    std::mt19937_64 rng(7);
    std::vector<uint64_t> values;
    AddressColumn c;
    const uint64_t base = 0x7f3a00000000ULL;
    for (int i = 0; i < 30000; ++i) {
        uint64_t v;
        switch (rng() % 12) {
        case 0: v = 0; break;                                  // a snapshot entry without address
        case 1: v = rng() % (uint64_t(80) << 30); break;       // an oom's device_free: any number of bytes
        case 2: v = base + (uint64_t(1) << 42); break;         // 4 TiB away: beyond 2^31 units of 512
        case 3: v = ~uint64_t(0) - 511; break;                 // the top of the range
        default: v = base + (rng() % (uint64_t(80) << 21)) * 512; break;  // 512-aligned, within 80 GiB
        }
        values.push_back(v);
        c.push_back(v);
    }
    expectSame(c, values);
    // addresses within 80 GiB of each other fit: about a third of the rows go aside, no more
    EXPECT_LT(c.asideCount(), values.size() / 2);
}

TEST(OffsetColumn, AnOddFirstRowDoesNotPushItsBlockAside) {
    // each block of 64 starts with a row far from the rest: the base moves to the second row
    std::vector<int64_t> values;
    TimeColumn c;
    for (int b = 0; b < 100; ++b) {
        for (int i = 0; i < 64; ++i) {
            const int64_t v = i == 0 ? -1 : 1'700'000'000'000'000 + b * 1000 + i;
            values.push_back(v);
            c.push_back(v);
        }
    }
    expectSame(c, values);
    EXPECT_EQ(c.asideCount(), 100u);  // the first row of each block, nothing else
    // values that alternate between two far regions: each row is read back all the same
    TimeColumn d;
    std::vector<int64_t> alt;
    for (int i = 0; i < 1000; ++i) {
        const int64_t v = (i % 2 ? int64_t(1) << 40 : 0) + i;
        alt.push_back(v);
        d.push_back(v);
    }
    expectSame(d, alt);
}

TEST(OffsetColumn, BinarySearchesWork) {
    TimeColumn c;
    std::vector<int64_t> values;
    for (int i = 0; i < 64 * 1000 + 17; ++i) {
        values.push_back(1'700'000'000'000'000 + int64_t(i) * i / 3);  // gaps growing from 0 to about 43,000 µs
        c.push_back(values.back());
    }
    EXPECT_EQ(c.asideCount(), 0u);
    for (int64_t probe : {values[0] - 1, values[0], values[12345], values[12345] + 1, values.back(), values.back() + 1}) {
        EXPECT_EQ(std::lower_bound(c.begin(), c.end(), probe) - c.begin(),
                  std::lower_bound(values.begin(), values.end(), probe) - values.begin());
        EXPECT_EQ(std::upper_bound(c.begin(), c.end(), probe) - c.begin(),
                  std::upper_bound(values.begin(), values.end(), probe) - values.begin());
    }
    EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
}

// Each block takes the fewest bytes its rows' spread needs: up to 2^(8w) - 2 units apart fit w
// bytes (one value of each width marks a row kept aside). Blocks are made to spread exactly at
// and just past each width's limit, in either direction, with and without rows aside.
TEST(OffsetColumn, EachBlockTakesTheBytesItsSpreadNeeds) {
    std::mt19937_64 rng(11);
    struct Case {
        int64_t spread;
        unsigned width;
    };
    const std::vector<Case> cases = {{0, 1},          {1, 1},           {254, 1},           {255, 2},
                                     {65'534, 2},     {65'535, 3},      {16'777'214, 3},    {16'777'215, 4},
                                     {INT32_MAX, 4},  {-254, 1},        {-255, 2},          {-16'777'214, 3}};
    for (bool withAside : {false, true}) {
        TimeColumn c;
        std::vector<int64_t> values;
        std::array<size_t, 4> expected{};
        for (const Case& k : cases) {
            // the block's first row is its base; its extreme rows lie `spread` apart (the others
            // between), at random places
            const int64_t base = 1'700'000'000'000'000 + static_cast<int64_t>(rng() % 1'000'000);
            const int64_t lo = k.spread >= 0 ? base : base + k.spread;
            const int64_t hi = k.spread >= 0 ? base + k.spread : base;
            const size_t atLo = 1 + rng() % 63, atHi = 1 + (atLo + 1 + rng() % 61) % 63;
            const size_t asideRow = withAside ? 1 + (atHi + 1 + rng() % 61) % 63 : 64;
            for (size_t r = 0; r < 64; ++r) {
                int64_t v = lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
                if (r == 0) v = base;
                else if (r == atLo) v = lo;
                else if (r == atHi) v = hi;
                if (r == asideRow && r != atLo && r != atHi) v = -1;  // no time: far from the rest
                values.push_back(v);
                c.push_back(v);
            }
            ++expected[k.width - 1];
        }
        expectSame(c, values);
        EXPECT_EQ(c.blocksByWidth(), expected) << (withAside ? "with a row aside in each block" : "no row aside");
    }
}

// The memory is the blocks' widths: a block of times a few µs apart takes a byte a row.
TEST(OffsetColumn, MemoryIsTheBlocksWidths) {
    TimeColumn c;
    AddressColumn a;
    const size_t rows = 64 * 1000;
    for (size_t i = 0; i < rows; ++i) {
        c.push_back(1'700'000'000'000'000 + static_cast<int64_t>(i) * 3);            // 189 µs a block
        a.push_back(0x7f0000000000ULL + (i % 64) * 5 * (uint64_t(1) << 20));        // 315 MiB a block
    }
    EXPECT_EQ(c.blocksByWidth(), (std::array<size_t, 4>{1000, 0, 0, 0}));
    EXPECT_EQ(a.blocksByWidth(), (std::array<size_t, 4>{0, 0, 1000, 0}));  // 645,120 units of 512 B
    EXPECT_GE(c.memoryBytes(), rows * 1 + 1000 * 16);
    EXPECT_LT(c.memoryBytes(), rows * 1 + 1000 * 16 * 2 + 64);
    EXPECT_GE(a.memoryBytes(), rows * 3 + 1000 * 16);
    EXPECT_LT(a.memoryBytes(), rows * 3 + 1000 * 16 * 2 + 64);
    for (size_t i = 0; i < rows; i += 997) {
        ASSERT_EQ(c[i], 1'700'000'000'000'000 + static_cast<int64_t>(i) * 3);
        ASSERT_EQ(a[i], 0x7f0000000000ULL + (i % 64) * 5 * (uint64_t(1) << 20));
    }
}

// Copies hold the same values; a column moved from is empty and takes new rows, in a block of
// its own from the first.
TEST(OffsetColumn, CopiedAndMovedFrom) {
    std::vector<int64_t> values;
    TimeColumn c;
    for (int i = 0; i < 200; ++i) {
        values.push_back(1'700'000'000'000'000 + i * 40'000 + (i % 7 == 0 ? int64_t(1) << 40 : 0));
        c.push_back(values.back());
    }
    const TimeColumn copy = c;
    expectSame(copy, values);
    TimeColumn moved = std::move(c);
    expectSame(moved, values);
    EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move): what a moved-from column is
    EXPECT_EQ(c.asideCount(), 0u);
    std::vector<int64_t> again;
    for (int i = 0; i < 70; ++i) {
        again.push_back(int64_t(5) << 50 | i);
        c.push_back(again.back());
    }
    expectSame(c, again);
    TimeColumn assigned{1, 2, 3};
    assigned = std::move(moved);
    expectSame(assigned, values);
    EXPECT_TRUE(moved.empty());  // NOLINT(bugprone-use-after-move)
    assigned = copy;
    expectSame(assigned, values);
}

TEST(OffsetColumn, EqualityComparesValues) {
    TimeColumn a{1, int64_t(1) << 40, 7}, b{1, int64_t(1) << 40, 7};
    EXPECT_TRUE(a == b);
    b.push_back(0);
    EXPECT_FALSE(a == b);
    a.push_back(int64_t(1) << 33);
    EXPECT_FALSE(a == b);
    EXPECT_TRUE(TimeColumn().empty());
    EXPECT_TRUE(TimeColumn::of(std::vector<int64_t>{4, 5}) == (TimeColumn{4, 5}));
}
