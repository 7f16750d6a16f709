// OffsetColumn: 64-bit values kept as 32-bit distances from a base per 64 rows, the rows that do
// not fit aside; every value read back exactly, by index and by iterator.
#include "memlens/model/OffsetColumn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using memlens::model::AddressColumn;
using memlens::model::TimeColumn;

namespace {

template <class Column, class T>
void expectSame(const Column& c, const std::vector<T>& values) {
    ASSERT_EQ(c.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(c[i], values[i]) << "row " << i;
    size_t i = 0;
    for (auto v : c) ASSERT_EQ(v, values[i++]) << "iterating, row " << i - 1;
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

TEST(OffsetColumn, MemoryIsFourBytesARowAndBinarySearchesWork) {
    TimeColumn c;
    std::vector<int64_t> values;
    for (int i = 0; i < 64 * 1000; ++i) {
        values.push_back(1'700'000'000'000'000 + i * 7 / 3);
        c.push_back(values.back());
    }
    EXPECT_EQ(c.asideCount(), 0u);
    EXPECT_GE(c.memoryBytes(), values.size() * 4 + 1000 * 8);
    EXPECT_LT(c.memoryBytes(), values.size() * 4 + 1000 * 8 * 2 + 64);
    for (int64_t probe : {values[0] - 1, values[0], values[12345], values[12345] + 1, values.back(), values.back() + 1}) {
        EXPECT_EQ(std::lower_bound(c.begin(), c.end(), probe) - c.begin(),
                  std::lower_bound(values.begin(), values.end(), probe) - values.begin());
        EXPECT_EQ(std::upper_bound(c.begin(), c.end(), probe) - c.begin(),
                  std::upper_bound(values.begin(), values.end(), probe) - values.begin());
    }
    EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
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
