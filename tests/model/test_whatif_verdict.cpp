// The what-if sentence for each case of the out-of-memory outcome, on hand-made results.
#include "memlens/model/WhatIfVerdict.h"

#include <gtest/gtest.h>

using namespace memlens::model;

namespace {
constexpr uint64_t MiB = 1ull << 20;

WhatIfResult result(uint64_t recPeak, uint64_t simPeak, int64_t recOom, int64_t simOom) {
    WhatIfResult r;
    r.recording.peakReserved = recPeak;
    r.simulation.peakReserved = simPeak;
    auto oom = [](int64_t entry) {
        OomOutcome o;
        o.entry = entry;
        o.sizeAsked = 64 * MiB;
        o.totalFree = 200 * MiB;
        o.largestFreeBlock = 20 * MiB;
        return o;
    };
    if (recOom >= 0) r.recording.firstOom = oom(recOom);
    if (simOom >= 0) r.simulation.firstOom = oom(simOom);
    return r;
}
} // namespace

TEST(WhatIfVerdict, TheOutOfMemoryGoesAway) {
    EXPECT_EQ(whatIfVerdict(result(1400 * MiB, 1300 * MiB, 5859, -1), "expandable_segments:True"),
              "With expandable_segments:True the peak reserved is 1.3 GiB instead of 1.4 GiB and the out-of-memory at "
              "entry #5859 does not happen.");
    // both round to 1.3 GiB: the difference is named instead
    EXPECT_EQ(whatIfVerdict(result(1340 * MiB, 1310 * MiB, -1, -1), "max_split_size_mb:200"),
              "With max_split_size_mb:200 the peak reserved is 30 MiB lower than the recording's 1.3 GiB; no "
              "out-of-memory error either way.");
}

TEST(WhatIfVerdict, StillOutOfMemory) {
    EXPECT_EQ(whatIfVerdict(result(100 * MiB, 100 * MiB, 7, 7), ""),
              "Replayed unchanged the peak reserved stays at 100 MiB and the out-of-memory at entry #7 still happens "
              "(asking 64 MiB with 200 MiB free in the cache, the largest free block 20 MiB).");
    EXPECT_NE(whatIfVerdict(result(100 * MiB, 90 * MiB, 7, 5), "capacity 90 MiB").find("at entry #5 instead of #7"),
              std::string::npos);
}

TEST(WhatIfVerdict, ANewOutOfMemoryAndEdits) {
    WhatIfResult r = result(100 * MiB, 100 * MiB, -1, 3);
    r.edits.freedEarly = 4;
    r.edits.bytesFreedEarly = 8 * MiB;
    r.edits.estimated = true;
    EXPECT_EQ(whatIfVerdict(r, "capacity 64 MiB"),
              "With capacity 64 MiB the peak reserved stays at 100 MiB but it runs out of memory at entry #3 (asking 64 MiB "
              "with 200 MiB free in the cache, the largest free block 20 MiB). 4 allocations (8 MiB) are freed at the end "
              "of their iteration instead of surviving it. An estimate: scaled allocations need not scale with the batch.");
    EXPECT_EQ(whatIfVerdict(result(5 * MiB, 5 * MiB, -1, -1), "max_split_size_mb:20"),
              "With max_split_size_mb:20 the peak reserved stays at 5 MiB; no out-of-memory error either way.");
}
