// memlens-bench-sites [--pairs N]
//
// Times allocationSitesInRange over a long random trace (tests/support/ColumnsBuilder.h: N
// alloc/free pairs, default 500,000, that is a million entries, from 3000 stacks of 40 frames)
// and prints it. It was a unit test's "under 5 s" assertion; a wall-clock figure depends on the
// machine and its load, so it is measured here and asserted nowhere. Ends with one
// machine-readable line:
//   RESULT entries=... stacks=3000 sites_ms=... nodes=...
#include "ColumnsBuilder.h"

#include "memlens/model/AllocationSites.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace memlens::model;

int main(int argc, char** argv) {
    int pairs = 500000;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
            pairs = std::atoi(argv[++i]);
        } else {
            std::fprintf(stderr, "usage: %s [--pairs N]\n", argv[0]);
            return 2;
        }
    }
    sitestest::ColumnsBuilder b;
    sitestest::longRandomTrace(b, pairs);
    const int64_t entries = static_cast<int64_t>(b.trace().rows());
    const auto t0 = std::chrono::steady_clock::now();
    AllocationSites a = allocationSitesInRange(b.s, b.s.devices[0], 0, entries - 1);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (a.totalCount != static_cast<uint64_t>(pairs)) {
        std::fprintf(stderr, "expected %d allocations, got %llu\n", pairs, static_cast<unsigned long long>(a.totalCount));
        return 1;
    }
    const size_t nodes = a.bottomUp.nodes.size() + a.topDown.nodes.size();
    std::printf("allocation sites over %lld entries, 3000 stacks of 40 frames: %.1f ms, %zu nodes\n",
                static_cast<long long>(entries), ms, nodes);
    std::printf("RESULT entries=%lld stacks=3000 sites_ms=%.1f nodes=%zu\n", static_cast<long long>(entries), ms, nodes);
    return 0;
}
