// SparseColumn against a plain std::vector filled with the same rows: every row reads back the
// same, whatever the pattern (one value, rare exceptions, an odd first row, values that differ
// all the time), and it stays small where nearly every row holds one value.
#include "memlens/model/SparseColumn.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

using memlens::model::SparseColumn;

namespace {

// Fills both with n rows of gen(i); checks every row, the size and any().
template <typename T>
SparseColumn<T> filled(size_t n, const std::function<T(size_t)>& gen, std::vector<T>& plain) {
    SparseColumn<T> c;
    plain.clear();
    for (size_t i = 0; i < n; ++i) {
        const T v = gen(i);
        c.push_back(v);
        plain.push_back(v);
    }
    EXPECT_EQ(c.size(), plain.size());
    for (size_t i = 0; i < n; ++i) {
        EXPECT_EQ(c[i], plain[i]) << "row " << i;
        if (c[i] != plain[i]) break;
    }
    return c;
}

} // namespace

TEST(SparseColumn, OneValueCostsNothingPerRow) {
    std::vector<uint64_t> plain;
    auto c = filled<uint64_t>(200000, [](size_t) { return uint64_t(7); }, plain);
    EXPECT_FALSE(c.isPlain());
    EXPECT_EQ(c.memoryBytes(), 0u);
    EXPECT_TRUE(c.any([](uint64_t v) { return v == 7; }));
    EXPECT_FALSE(c.any([](uint64_t v) { return v != 7; }));
    SparseColumn<uint64_t> empty;
    EXPECT_TRUE(empty.empty());
    EXPECT_FALSE(empty.any([](uint64_t) { return true; }));
}

TEST(SparseColumn, RareExceptionsAreKeptAlone) {
    std::mt19937_64 rng(1);
    std::vector<uint32_t> plain;
    // about one row in 1000 differs, with one of a few values
    auto c = filled<uint32_t>(300000, [&](size_t) { return rng() % 1000 == 0 ? uint32_t(1 + rng() % 5) : 0u; }, plain);
    EXPECT_FALSE(c.isPlain());
    EXPECT_LT(c.memoryBytes(), 300000u / 1000 * 3 * (8 + 4));  // the exceptions only
    EXPECT_TRUE(c.any([](uint32_t v) { return v == 0; }));
    EXPECT_TRUE(c.any([](uint32_t v) { return v != 0; }));
}

TEST(SparseColumn, AnOddFirstRowDoesNotMakeItPlain) {
    std::vector<uint64_t> plain;
    // the first row is the only 5; every later row is 0 but for one in 500
    auto c = filled<uint64_t>(100000, [](size_t i) { return i == 0 ? uint64_t(5) : (i % 500 == 0 ? uint64_t(9) : uint64_t(0)); },
                              plain);
    EXPECT_FALSE(c.isPlain());
    EXPECT_LT(c.memoryBytes(), 100000u / 500 * 2 * 16 + 4096);
    EXPECT_TRUE(c.any([](uint64_t v) { return v == 5; }));
}

TEST(SparseColumn, ValuesThatDifferOftenMakeItPlain) {
    std::mt19937_64 rng(2);
    std::vector<uint64_t> plain;
    auto c = filled<uint64_t>(50000, [&](size_t) { return rng() % 4; }, plain);
    EXPECT_TRUE(c.isPlain());
    // alternating streams: also plain, and still every row right
    auto d = filled<uint64_t>(50000, [](size_t i) { return uint64_t(i % 2); }, plain);
    EXPECT_TRUE(d.isPlain());
    // short columns stay sparse even when every row differs
    auto e = filled<uint64_t>(200, [](size_t i) { return uint64_t(i); }, plain);
    EXPECT_FALSE(e.isPlain());
}

TEST(SparseColumn, NearTheLimitItLosesNoRows) {
    // one row in 20 differs: under the limit of one in 16, near enough to cross it in bursts
    std::mt19937_64 rng(3);
    std::vector<uint32_t> plain;
    auto c = filled<uint32_t>(400000, [&](size_t i) { return (i / 1000) % 7 == 0 && rng() % 3 == 0 ? uint32_t(2) : uint32_t(1); },
                              plain);
    (void)c;
    // the same rows pushed after a clear read back the same
    c.clear();
    EXPECT_EQ(c.size(), 0u);
    for (uint32_t v : plain) c.push_back(v);
    for (size_t i = 0; i < plain.size(); i += 97) ASSERT_EQ(c[i], plain[i]) << "row " << i;
}
