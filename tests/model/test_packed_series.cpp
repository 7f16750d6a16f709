// PackedSeries against the plain vector it was made from: every value reads back the same, by
// index and by scan over any range, whatever the steps between values (small ones, steps of more
// than 2 GiB that force a block to stay whole, extremes of int64), for lengths that end inside a
// block, on one and at zero; filled backwards (as the timeline fills it) or from a vector. And it
// takes about half the plain vector's memory where steps are small, a sixteenth of a byte a value
// where the value stays the same for whole blocks (the reserved bytes between segment changes),
// and a quarter where steps are below 128 bytes. Each block's extremes are its values'.
#include "memlens/model/PackedSeries.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

using memlens::model::PackedSeries;

namespace {

std::vector<int64_t> walk(size_t n, uint64_t seed, const std::function<int64_t(std::mt19937_64&)>& step,
                          int64_t start = 0) {
    std::mt19937_64 rng(seed);
    std::vector<int64_t> v(n);
    int64_t x = start;
    for (size_t i = 0; i < n; ++i) {
        x += step(rng);
        v[i] = x;
    }
    return v;
}

PackedSeries backwards(const std::vector<int64_t>& v) {
    PackedSeries::BackwardWriter w(v.size());
    for (size_t i = v.size(); i-- > 0;) w.push(v[i]);
    return w.take();
}

void expectSame(const PackedSeries& p, const std::vector<int64_t>& v) {
    ASSERT_EQ(p.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(p[i], v[i]) << "index " << i;
    EXPECT_EQ(p.toVector(), v);
    if (!v.empty()) {
        EXPECT_EQ(p.back(), v.back());
    }
    // each block's extremes, against its values: the least, the greatest, where that first is
    for (size_t b = 0; b * PackedSeries::kBlock < v.size(); ++b) {
        const auto first = v.begin() + static_cast<ptrdiff_t>(b * PackedSeries::kBlock);
        const auto last = v.begin() + static_cast<ptrdiff_t>(std::min(v.size(), (b + 1) * PackedSeries::kBlock));
        const auto e = p.blockExtremes(b);
        ASSERT_EQ(e.min, *std::min_element(first, last)) << "block " << b;
        ASSERT_EQ(e.max, *std::max_element(first, last)) << "block " << b;
        ASSERT_EQ(e.maxIndex, static_cast<size_t>(std::max_element(first, last) - v.begin())) << "block " << b;
    }
    // scans over ranges that start and end inside and on the edges of blocks
    std::mt19937_64 rng(v.size());
    for (int k = 0; k < 200 && !v.empty(); ++k) {
        size_t a = rng() % (v.size() + 1), b = rng() % (v.size() + 1);
        if (a > b) std::swap(a, b);
        size_t next = a;
        p.scan(a, b, [&](size_t i, int64_t x) {
            ASSERT_EQ(i, next);
            ASSERT_EQ(x, v[i]) << "index " << i;
            ++next;
        });
        EXPECT_EQ(next, b);
    }
}

} // namespace

TEST(PackedSeries, SmallStepsReadBackAndTakeHalfTheMemory) {
    for (size_t n : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(65), size_t(1000), size_t(100003)}) {
        const auto v = walk(n, n, [](std::mt19937_64& r) { return static_cast<int64_t>(r() % 2'000'000) - 1'000'000; },
                            int64_t(40) << 30);
        const PackedSeries p = backwards(v);
        expectSame(p, v);
        expectSame(PackedSeries(v), v);
        EXPECT_EQ(p.wideBlocks(), 0u);
        if (n >= 1000) {
            EXPECT_LT(p.memoryBytes(), v.size() * sizeof(int64_t) * 55 / 100);
        }
    }
}

TEST(PackedSeries, StepsBeyondTwoGibKeepTheirBlockWhole) {
    // mostly small steps; now and then one of 3 GiB up or down: a difference within a block that
    // does not fit in 32 bits
    const auto v = walk(50000, 7, [](std::mt19937_64& r) -> int64_t {
        if (r() % 500 == 0) return (r() % 2 ? 1 : -1) * (int64_t(3) << 30);
        return static_cast<int64_t>(r() % 4096) - 2048;
    });
    const PackedSeries p = backwards(v);
    expectSame(p, v);
    EXPECT_GT(p.wideBlocks(), 0u);
    EXPECT_LT(p.wideBlocks(), v.size() / PackedSeries::kBlock);
}

TEST(PackedSeries, ExtremesOfInt64) {
    // differences that overflow int64 itself must not wrap around into range
    const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    std::vector<int64_t> v;
    for (int i = 0; i < 300; ++i) v.push_back(i % 3 == 0 ? lo : i % 3 == 1 ? hi : i);
    v.push_back(0);
    expectSame(backwards(v), v);
    std::vector<int64_t> steady(130, lo);
    steady[129] = lo + int64_t(std::numeric_limits<int32_t>::max());
    const PackedSeries s = backwards(steady);
    expectSame(s, steady);
    EXPECT_EQ(s.wideBlocks(), 0u);  // exactly the largest difference that fits
    steady[129] += 1;
    const PackedSeries t = backwards(steady);
    expectSame(t, steady);
    EXPECT_EQ(t.wideBlocks(), 1u);
}

TEST(PackedSeries, RunsOfOneValueTakeNoBytesOfDifferences) {
    // a reserved-bytes series: 2 MiB more at a few places, the same value in between
    const size_t n = 100'000;
    std::vector<int64_t> v(n);
    int64_t x = int64_t(1) << 30;
    std::mt19937_64 rng(11);
    for (size_t i = 0; i < n; ++i) {
        if (rng() % 5000 == 0) x += int64_t(2) << 20;
        v[i] = x;
    }
    const PackedSeries p = backwards(v);
    expectSame(p, v);
    expectSame(PackedSeries(v), v);
    size_t changing = 0;  // blocks with a change inside them (after their first value)
    for (size_t b = 0; b * PackedSeries::kBlock < n; ++b)
        for (size_t i = b * PackedSeries::kBlock + 1; i < std::min(n, (b + 1) * PackedSeries::kBlock); ++i)
            if (v[i] != v[i - 1]) {
                ++changing;
                break;
            }
    const size_t blocks = (n + PackedSeries::kBlock - 1) / PackedSeries::kBlock;
    EXPECT_GT(changing, 0u);
    EXPECT_EQ(p.constantBlocks(), blocks - changing);
    EXPECT_EQ(p.wideBlocks(), 0u);
    // 16 bytes a block, and 4 bytes a value in the blocks with a change (2 MiB needs 4 bytes)
    EXPECT_EQ(p.memoryBytes(), blocks * 16 + changing * PackedSeries::kBlock * 4);
}

TEST(PackedSeries, DifferencesTakeTheFewestBytesThatHoldThem) {
    // one block each: differences within int8, int16, int32, and beyond
    for (auto [span, bytes] : {std::pair<int64_t, size_t>{127, 1}, {-128, 1}, {128, 2}, {-32768, 2}, {32768, 4},
                               {int64_t(1) << 31, 8}, {-(int64_t(1) << 31), 4}}) {
        std::vector<int64_t> v(PackedSeries::kBlock, int64_t(5) << 40);
        v[PackedSeries::kBlock / 2] += span;
        const PackedSeries p = backwards(v);
        expectSame(p, v);
        EXPECT_EQ(p.memoryBytes(), 16 + PackedSeries::kBlock * bytes) << "difference " << span;
        EXPECT_EQ(p.wideBlocks(), bytes == 8 ? 1u : 0u);
    }
}
