// IndexColumn: every id reads back as written, through both widenings (at the first id over 255
// and over 65,535), with the rows written before each widening intact, and each row in as few
// bytes as the largest id so far needs.
#include "memlens/model/IndexColumn.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using memlens::model::IndexColumn;

TEST(IndexColumn, IdsReadBackThroughEachWidening) {
    std::mt19937 rng(5);
    IndexColumn c;
    c.reserve(1000);
    std::vector<uint32_t> want;
    const auto add = [&](uint32_t v) {
        c.push_back(v);
        want.push_back(v);
    };
    for (int i = 0; i < 3000; ++i) add(rng() % 256);
    add(255);
    EXPECT_EQ(c.width(), 1u);
    EXPECT_EQ(c.memoryBytes(), want.size());
    add(256);
    EXPECT_EQ(c.width(), 2u);
    for (int i = 0; i < 3000; ++i) add(rng() % 65536);
    add(65535);
    EXPECT_EQ(c.width(), 2u);
    add(65536);
    EXPECT_EQ(c.width(), 4u);
    for (int i = 0; i < 3000; ++i) add(rng());
    add(0xFFFFFFFFu);
    add(0);
    ASSERT_EQ(c.size(), want.size());
    EXPECT_EQ(c.memoryBytes(), 4 * want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(c[i], want[i]) << "row " << i;
    EXPECT_EQ(c.back(), 0u);
}

TEST(IndexColumn, AJumpStraightToFourBytesAndEquality) {
    IndexColumn a, b;
    for (uint32_t v : {1u, 2u, 70000u, 3u}) a.push_back(v);
    EXPECT_EQ(a.width(), 4u);
    for (uint32_t v : {1u, 2u}) b.push_back(v);
    EXPECT_FALSE(a == b);
    for (uint32_t v : {70000u, 3u}) b.push_back(v);
    EXPECT_TRUE(a == b);
    EXPECT_EQ(a[2], 70000u);
    EXPECT_TRUE(IndexColumn().empty());
}
