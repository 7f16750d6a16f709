// NarrowColumn: 64-bit values kept in 32 bits where they fit, the rest aside, read back exactly.
#include "memlens/model/NarrowColumn.h"

#include <gtest/gtest.h>

#include <random>

using memlens::model::NarrowColumn;

TEST(NarrowColumn, GivesBackEveryValue) {
    std::mt19937_64 rng(13);
    std::vector<uint64_t> values;
    NarrowColumn c;
    c.reserve(100);  // fewer than it will hold: it grows past its reservation
    for (int i = 0; i < 20000; ++i) {
        uint64_t v;
        switch (rng() % 6) {
        case 0: v = rng(); break;                                  // almost always wide
        case 1: v = NarrowColumn::kWide; break;                    // the first value that does not fit
        case 2: v = NarrowColumn::kWide - 1; break;                // the last that does
        case 3: v = uint64_t(NarrowColumn::kWide) + rng() % 3; break;
        default: v = rng() % 100000; break;
        }
        values.push_back(v);
        c.push_back(v);
    }
    ASSERT_EQ(c.size(), values.size());
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(c[i], values[i]) << "row " << i;
    EXPECT_EQ(c.back(), values.back());
    // four bytes a row, plus sixteen for each row kept aside
    size_t wide = 0;
    for (uint64_t v : values) wide += v >= NarrowColumn::kWide;
    EXPECT_GE(c.memoryBytes(), values.size() * 4 + wide * 16);
    EXPECT_LT(c.memoryBytes(), values.size() * 4 + wide * 16 * 2 + 64);
}

TEST(NarrowColumn, EqualityComparesValues) {
    NarrowColumn a, b;
    for (uint64_t v : {uint64_t(1), uint64_t(1) << 40, uint64_t(7)}) {
        a.push_back(v);
        b.push_back(v);
    }
    EXPECT_TRUE(a == b);
    b.push_back(0);
    EXPECT_FALSE(a == b);
    a.push_back(uint64_t(1) << 33);
    EXPECT_FALSE(a == b);
    NarrowColumn e;
    EXPECT_TRUE(e.empty());
}
