// memlens-bench-rewind FILE [--device D] [--queries N] [--seed S] [--interval K]
//
// Loads FILE, builds StateHistory for one device (default 0) and reports the time and memory
// that takes, then asks stateAfter(i) for N (default 1000) random entries i (seeded, uniform
// over -1 .. entries-1) and reports mean, p50, p99 and max per call in ms. Goal: every call
// under 10 ms on a 1,000,000-entry trace. Ends with one machine-readable line:
//   RESULT build_s=... history_bytes=... build_rss_kb=... checkpoints=... queries=... mean_ms=... p50_ms=...
//          p99_ms=... max_ms=...
#include "ProcStatus.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/ParseError.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace memlens::model;
using Clock = std::chrono::steady_clock;

namespace {

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

int usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s FILE [--device D] [--queries N] [--seed S] [--interval K]\n", argv0);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    std::string path;
    int device = 0;
    long queries = 1000;
    unsigned long long seed = 12345;
    size_t interval = 0;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
        const char* v = nullptr;
        if (a == "--device" && (v = next())) device = std::atoi(v);
        else if (a == "--queries" && (v = next())) queries = std::max(1L, std::atol(v));
        else if (a == "--seed" && (v = next())) seed = std::strtoull(v, nullptr, 10);
        else if (a == "--interval" && (v = next())) interval = std::strtoull(v, nullptr, 10);
        else if (a == "-h" || a == "--help") return usage(argv[0]), 0;
        else if (path.empty() && a[0] != '-') path = a;
        else return usage(argv[0]);
    }
    if (path.empty()) return usage(argv[0]);

    Snapshot snap;
    auto t0 = Clock::now();
    try {
        snap = readSnapshotFile(path);
    } catch (const ParseError& e) {
        std::fprintf(stderr, "%s\n", e.describe(path).c_str());
        return 1;
    }
    auto t1 = Clock::now();
    const DeviceData* dd = snap.device(device);
    if (!dd) {
        std::fprintf(stderr, "%s: no device %d in this snapshot\n", path.c_str(), device);
        return 1;
    }
    std::printf("%s: loaded in %.3f s; device %d: %zu trace entries, %zu segments, %zu blocks\n", path.c_str(),
                std::chrono::duration<double>(t1 - t0).count(), device, dd->trace.rows(), dd->segments.size(),
                dd->blocks.size());

    long rssBefore = bench::procStatusKb("VmRSS");
    auto b0 = Clock::now();
    StateHistory history(snap, device, interval);
    auto b1 = Clock::now();
    long rssAfter = bench::procStatusKb("VmRSS");
    const double buildS = std::chrono::duration<double>(b1 - b0).count();
    const int64_t n = history.entries();
    std::printf("StateHistory: built in %.3f s, %zu checkpoints, %.1f MB by memoryBytes(), RSS +%.1f MB "
                "(%.1f -> %.1f MB)\n",
                buildS, history.checkpointCount(), static_cast<double>(history.memoryBytes()) / 1e6,
                (rssAfter - rssBefore) / 1024.0, rssBefore / 1024.0, rssAfter / 1024.0);

    // the two ends first: before the first entry, and the snapshot itself
    DeviceState first = history.stateAfter(-1);
    DeviceState last = history.stateAfter(n - 1);
    std::printf("before entry 0: %zu segments, reserved %.1f MB, allocated %.1f MB; after the last: %zu segments, "
                "reserved %.1f MB, allocated %.1f MB\n",
                first.segments.size(), first.reservedBytes / 1e6, first.allocatedBytes / 1e6, last.segments.size(),
                last.reservedBytes / 1e6, last.allocatedBytes / 1e6);

    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int64_t> pick(-1, n - 1);
    std::vector<double> times;
    times.reserve(static_cast<size_t>(queries));
    int64_t worstAt = -1;
    double worst = -1;
    size_t touched = 0;  // keeps the results alive
    for (long q = 0; q < queries; ++q) {
        int64_t at = pick(rng);
        auto q0 = Clock::now();
        DeviceState s = history.stateAfter(at);
        auto q1 = Clock::now();
        double t = ms(q1 - q0);
        touched += s.segments.size();
        if (s.at != at) {
            std::fprintf(stderr, "stateAfter(%lld) returned the state at %lld\n", static_cast<long long>(at),
                         static_cast<long long>(s.at));
            return 1;
        }
        if (t > worst) {
            worst = t;
            worstAt = at;
        }
        times.push_back(t);
    }
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    auto pct = [&](double p) {
        size_t k = static_cast<size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
        return sorted[std::min(k, sorted.size() - 1)];
    };
    double mean = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
    std::printf("stateAfter at %ld random entries (seed %llu): mean %.3f ms, p50 %.3f ms, p99 %.3f ms, "
                "max %.3f ms (entry %lld); %zu segments seen\n",
                queries, seed, mean, pct(0.5), pct(0.99), sorted.back(), static_cast<long long>(worstAt), touched);
    std::printf("RESULT entries=%lld build_s=%.6f history_bytes=%zu build_rss_kb=%ld checkpoints=%zu queries=%ld "
                "mean_ms=%.4f p50_ms=%.4f p99_ms=%.4f max_ms=%.4f\n",
                static_cast<long long>(n), buildS, history.memoryBytes(), rssAfter - rssBefore,
                history.checkpointCount(), queries, mean, pct(0.5), pct(0.99), sorted.back());
    return 0;
}
