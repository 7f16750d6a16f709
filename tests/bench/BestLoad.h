#pragma once
// The load a benchmark compares its own figures with: FILE read N times, the least time kept,
// as the figures it is compared with are the least of N runs (a single load, slow on a busy
// host, flattered the ratios). memlens-bench-doctor, memlens-bench-replay.
#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>

// CPU time of the calling thread, in seconds: on a machine shared with other work the wall clock
// says little.
inline double threadCpuSeconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct BestLoad {
    double wallS = 1e30;  // the least wall time of the loads
    double cpuS = 1e30;   // the least CPU time of the calling thread (the reader's helpers not counted)
};

// Reads path `repeat` times into snap (the last read kept); false, the one-line error printed,
// where the file is refused.
inline bool bestLoad(const std::string& path, int repeat, memlens::model::Snapshot& snap, BestLoad& out) {
    for (int k = 0; k < std::max(repeat, 1); ++k) {
        snap = memlens::model::Snapshot();
        const auto t0 = std::chrono::steady_clock::now();
        const double c0 = threadCpuSeconds();
        try {
            snap = memlens::model::readSnapshotFile(path);
        } catch (const memlens::model::ParseError& e) {
            std::fprintf(stderr, "%s\n", e.describe(path).c_str());
            return false;
        }
        out.wallS = std::min(out.wallS, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        out.cpuS = std::min(out.cpuS, threadCpuSeconds() - c0);
    }
    return true;
}
