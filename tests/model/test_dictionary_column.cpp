// DictionaryColumn: every value reads back as written (runs of one value, values of 4 GiB and
// more, 0 and ~0), through the widening of its indices past 256 and 65,536 distinct values, and
// equality by values.
#include "memlens/model/DictionaryColumn.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using memlens::model::DictionaryColumn;

TEST(DictionaryColumn, GivesBackEveryValueAtEveryWidth) {
    std::mt19937_64 rng(11);
    DictionaryColumn c;
    c.reserve(100);
    std::vector<uint64_t> want;
    const auto add = [&](uint64_t v) {
        c.push_back(v);
        want.push_back(v);
    };
    const uint64_t few[] = {512, 0, ~uint64_t(0), uint64_t(6) << 30, 1536, 512 * 1024};
    for (int i = 0; i < 5000; ++i) add(few[rng() % 6]);
    for (int i = 0; i < 50; ++i) add(4096);  // a run
    EXPECT_EQ(c.distinctValues(), 7u);
    const size_t oneByte = c.memoryBytes();
    for (uint64_t k = 0; k < 300; ++k) add(k * 512 + 7);  // past 256 distinct values
    for (uint64_t k = 0; k < 70000; ++k) add((k * 2654435761u) << 9);  // past 65,536
    for (int i = 0; i < 5000; ++i) add(few[rng() % 6]);
    ASSERT_EQ(c.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(c[i], want[i]) << "row " << i;
    EXPECT_EQ(c.back(), want.back());
    EXPECT_LT(oneByte, 5050u + 1024u);  // a byte a row (and the small table) while 7 values
}

TEST(DictionaryColumn, EqualityComparesValues) {
    DictionaryColumn a, b;
    for (uint64_t v : {1u, 2u, 3u}) a.push_back(v);
    for (uint64_t v : {3u, 1u}) b.push_back(v);  // another order of first sight
    EXPECT_FALSE(a == b);
    DictionaryColumn c;
    for (uint64_t v : {1u, 2u, 3u}) c.push_back(v);
    EXPECT_TRUE(a == c);
    EXPECT_TRUE(DictionaryColumn().empty());
}
