// LiveBytes against the series it stands for, written out here forward from the bytes live before
// the first entry (the final live bytes minus every alloc, plus every free_requested and old
// free): the value after every entry, and the largest over ranges of every kind (inside one
// block, across two, across many; at block edges; the whole trace), on random traces whose
// lengths end inside a block and on a block's edge, with sizes beyond 4 GiB and actions that
// change nothing (free_completed, segment_alloc, snapshot).
#include "ColumnsBuilder.h"

#include "memlens/model/LiveBytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

using memlens::model::Action;
using memlens::model::LiveBytes;
using sitestest::ColumnsBuilder;

namespace {

// A random trace of n entries; returns the series after each entry, with `before` live first.
std::vector<int64_t> randomTrace(ColumnsBuilder& b, size_t n, int64_t before, uint64_t seed) {
    std::mt19937_64 rng(seed);
    const Action actions[] = {Action::Alloc, Action::Alloc, Action::FreeRequested, Action::FreeCompleted,
                              Action::Free, Action::SegmentAlloc, Action::Snapshot};
    std::vector<int64_t> series;
    int64_t cur = before;
    for (size_t i = 0; i < n; ++i) {
        const Action a = actions[rng() % 7];
        const uint64_t size = (rng() % 50 == 0) ? (uint64_t(5) << 32) + rng() % 4096 : 512 * (1 + rng() % 4096);
        b.entry(a, 0x7f0000000000ull + 512 * (rng() % 1000), size, 0);
        if (a == Action::Alloc) cur += static_cast<int64_t>(size);
        if (a == Action::FreeRequested || a == Action::Free) cur -= static_cast<int64_t>(size);
        series.push_back(cur);
    }
    return series;
}

} // namespace

TEST(LiveBytes, EveryValueAndRangeMaximumIsTheSeries) {
    constexpr size_t K = LiveBytes::kBlock;
    for (size_t n : {size_t(1), K - 1, K, K + 1, 5 * K, 7 * K + 37}) {
        ColumnsBuilder b;
        const int64_t before = int64_t(3) << 30;
        const std::vector<int64_t> series = randomTrace(b, n, before, 1000 + n);
        const LiveBytes live(b.trace(), static_cast<uint64_t>(series.back()));
        EXPECT_EQ(live.after(-1), before) << n;
        EXPECT_EQ(live.after(static_cast<int64_t>(n) + 5), series.back()) << n;
        for (size_t e = 0; e < n; ++e) ASSERT_EQ(live.after(static_cast<int64_t>(e)), series[e]) << n << " entry " << e;
        EXPECT_EQ(live.max(), *std::max_element(series.begin(), series.end())) << n;
        std::vector<std::pair<size_t, size_t>> ranges = {{0, n - 1}, {0, 0}, {n - 1, n - 1}};
        for (size_t edge = K; edge < n; edge += K)
            for (auto [f, l] : {std::pair{edge - 1, edge}, {edge, edge}, {edge - K, edge - 1}, {edge, n - 1}, {0, edge - 1}})
                if (f <= l && l < n) ranges.push_back({f, l});
        std::mt19937_64 rng(n);
        for (int k = 0; k < 400; ++k) {
            size_t f = rng() % n, l = rng() % n;
            if (f > l) std::swap(f, l);
            ranges.push_back({f, l});
        }
        for (auto [f, l] : ranges) {
            const int64_t want = *std::max_element(series.begin() + static_cast<std::ptrdiff_t>(f),
                                                   series.begin() + static_cast<std::ptrdiff_t>(l) + 1);
            ASSERT_EQ(live.maxIn(f, l), want) << n << ": [" << f << ", " << l << "]";
        }
    }
}

TEST(LiveBytes, AnEmptyTraceIsItsLiveBytes) {
    ColumnsBuilder b;
    const LiveBytes live(b.trace(), 4096);
    EXPECT_EQ(live.after(-1), 4096);
    EXPECT_EQ(live.after(3), 4096);
    EXPECT_EQ(live.max(), std::numeric_limits<int64_t>::min());
}
