// memlens-bench-replay FILE [--device D] [--repeat N]
//
// Loads FILE N times (the best time kept), builds the replay input of one device (default 0: the
// rewound state and the workload) N times (the best time kept), then replays it through the allocator simulator with the snapshot's settings
// N times (default 3; the best time is kept), comparing each event with the recording as it comes
// (RecordingComparison, as `memlens-cli replay` does: no event is kept). Reports
// trace entries per second of the replay (goal: >= 5,000,000 on the 1,000,000-entry bench file)
// and the replay's time against the load's, measured in the same run. Ends with one
// machine-readable line:
//   RESULT entries=... ops=... load_s=... workload_s=... replay_s=... entries_per_s=... replay_to_load=...
//          replay_cpu_s=... entries_per_cpu_s=... load_cpu_s=... exact=0|1 at_recorded=... allocations=...
//          simulate_to_load=... whatif_s=... whatif_to_load=...
// simulate_to_load: (replay input + replay) / load, what `memlens-cli replay` adds to the load;
// whatif_s: `memlens-cli whatif FILE --set expandable_segments=<the other value>`'s work
// (model::whatIf: the recording's figures and states, the workload and the simulation),
// best of N. The goal (issue 13): both at most 2x the load.
// (CPU times too: on a machine shared with other work the wall clock says little.)
#include "BestLoad.h"

#include "memlens/model/RecordingComparison.h"
#include "memlens/model/Replay.h"
#include "memlens/model/WhatIf.h"
#include "memlens/model/SnapshotReader.h"
#include "memlens/model/Workload.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <ctime>

using namespace memlens::model;
using Clock = std::chrono::steady_clock;

namespace {
double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
int usage(const char* argv0) {
    std::fprintf(stderr, "usage: %s FILE [--device D] [--repeat N]\n", argv0);
    return 2;
}
} // namespace

int main(int argc, char** argv) {
    std::string path;
    int device = 0;
    int repeat = 3;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--device" && v) device = std::atoi(argv[++i]);
        else if (a == "--repeat" && v) repeat = std::max(1, std::atoi(argv[++i]));
        else if (a == "-h" || a == "--help") return usage(argv[0]), 0;
        else if (path.empty() && a[0] != '-') path = a;
        else return usage(argv[0]);
    }
    if (path.empty()) return usage(argv[0]);

    Snapshot snap;
    BestLoad load;
    if (!bestLoad(path, repeat, snap, load)) return 1;
    const double loadS = load.wallS, loadCpuS = load.cpuS;
    const DeviceData* dd = snap.device(device);
    if (!dd) {
        std::fprintf(stderr, "%s: no device %d in this snapshot\n", path.c_str(), device);
        return 1;
    }
    SimulatorSettings settings = SimulatorSettings::fromSnapshot(snap);
    // the replay input, best of the N builds (as the load and the replay are)
    Workload w;
    double workloadS = 1e30;
    for (int k = 0; k < repeat; ++k) {
        auto w0 = Clock::now();
        w = buildWorkload(snap, device, settings);
        workloadS = std::min(workloadS, secs(Clock::now() - w0));
    }
    std::printf("%s: loaded in %.3f s (best of the N loads); device %d: %zu trace entries; replay input (rewound state + %zu ops) "
                "built in %.3f s (best of %d)\n",
                path.c_str(), loadS, device, dd->trace.rows(), w.ops.size(), workloadS, repeat);

    double best = 1e30, bestCpu = 1e30;
    ReplayResult r;
    Fidelity f;
    ReplayOptions opt;
    opt.series = false;
    for (int k = 0; k < repeat; ++k) {
        auto r0 = Clock::now();
        const double rc0 = threadCpuSeconds();
        RecordingComparison comparison(*dd);
        opt.sink = &comparison;
        r = replay(w, settings, opt);
        f = comparison.finish(r.atRecordedAddress);
        best = std::min(best, secs(Clock::now() - r0));
        bestCpu = std::min(bestCpu, threadCpuSeconds() - rc0);
    }
    const double n = static_cast<double>(dd->trace.rows());
    const double perS = best > 0 ? n / best : 0;
    const double perCpuS = bestCpu > 0 ? n / bestCpu : 0;
    std::printf("replay: best %.4f s of %d: %.2f M trace entries/s (%.1f M ops/s), %zu simulated events; "
                "%.3f x the load time\n",
                best, repeat, perS / 1e6, static_cast<double>(w.ops.size()) / best / 1e6, static_cast<size_t>(r.eventCount),
                best / loadS);
    std::printf("replay CPU time: best %.4f s: %.2f M trace entries/s; load CPU time (main thread) %.3f s: replay / load "
                "%.3f\n",
                bestCpu, perCpuS / 1e6, loadCpuS, bestCpu / loadCpuS);
    std::printf("fidelity: %llu of %llu allocations at the recorded address; %s\n",
                static_cast<unsigned long long>(f.atRecordedAddress), static_cast<unsigned long long>(f.allocations),
                f.exact() ? "the replay reproduces the recording"
                          : ("first difference at entry " + std::to_string(f.first.entry)).c_str());
    // what-if with the other expandable_segments value, as `memlens-cli whatif --set` runs it
    SimulatorSettings other = settings;
    other.set("expandable_segments", settings.expandableSegments ? "False" : "True");
    double whatIfS = 1e30;
    for (int k = 0; k < repeat; ++k) {
        auto q0 = Clock::now();
        const WhatIfResult wr = whatIf(snap, device, other, WorkloadEdits{});
        whatIfS = std::min(whatIfS, secs(Clock::now() - q0));
    }
    const double simulateToLoad = (workloadS + best) / loadS;
    std::printf("simulator pace: replay input + replay %.3f x the load; what-if (expandable_segments=%s) best %.3f s, "
                "%.3f x the load; goal <= 2x\n",
                simulateToLoad, other.expandableSegments ? "True" : "False", whatIfS, whatIfS / loadS);
    std::printf("RESULT entries=%zu ops=%zu load_s=%.6f workload_s=%.6f replay_s=%.6f entries_per_s=%.0f "
                "replay_to_load=%.4f replay_cpu_s=%.6f entries_per_cpu_s=%.0f load_cpu_s=%.6f exact=%d at_recorded=%llu allocations=%llu "
                "simulate_to_load=%.4f whatif_s=%.6f whatif_to_load=%.4f\n",
                dd->trace.rows(), w.ops.size(), loadS, workloadS, best, perS, best / loadS, bestCpu, perCpuS, loadCpuS, f.exact() ? 1 : 0,
                static_cast<unsigned long long>(f.atRecordedAddress), static_cast<unsigned long long>(f.allocations),
                simulateToLoad, whatIfS, whatIfS / loadS);
    return 0;
}
