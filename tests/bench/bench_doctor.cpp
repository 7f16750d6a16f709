// memlens-bench-doctor FILE [--repeat N]
//
// Loads FILE N times (the best time kept), then runs the doctor (`memlens-cli check`'s work:
// iterations, survivors, the rules, the OOM verdicts, the summary) on it N times (default 3; the
// best time is kept).
// Goal: check takes at most 2x the load time on the 1,000,000-entry bench file, measured in the
// same run. Ends with one machine-readable line:
//   RESULT entries=... load_s=... doctor_s=... doctor_to_load=... findings=... iterations=...
#include "BestLoad.h"
#include "FileRepeatArgs.h"

#include "memlens/model/SnapshotDoctor.h"
#include "memlens/model/SnapshotReader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace memlens::model;
using Clock = std::chrono::steady_clock;

namespace {
double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
} // namespace

int main(int argc, char** argv) {
    FileRepeatArgs args;
    if (const int code = parseFileRepeat(argc, argv, args); code >= 0) return code;
    const std::string& path = args.path;
    const int repeat = args.repeat;
    Snapshot snap;
    BestLoad load;
    if (!bestLoad(path, repeat, snap, load)) return 1;
    const double loadS = load.wallS;
    const int device = doctorDevice(snap);
    const size_t entries = device >= 0 ? snap.device(device)->trace.rows() : 0;
    double best = 1e30;
    DoctorReport r;
    for (int k = 0; k < repeat; ++k) {
        const auto d0 = Clock::now();
        r = diagnoseSnapshot(snap);
        best = std::min(best, secs(Clock::now() - d0));
    }
    std::printf("%s: loaded in %.3f s (best of the N loads); device %d: %zu trace entries, %zu iterations (%s)\n",
                path.c_str(), loadS, device, entries, r.iterations.iterations.size(),
                iterationSourceName(r.iterations.source));
    std::printf("doctor: best %.4f s of %d: %.3f x the load time (goal <= 2); %zu findings\n", best, repeat, best / loadS,
                r.findings.size());
    for (const Finding& f : r.findings) std::printf("  %s [%s] %s\n", severityName(f.severity), f.rule.c_str(), f.title.c_str());
    std::printf("RESULT entries=%zu load_s=%.6f doctor_s=%.6f doctor_to_load=%.4f findings=%zu iterations=%zu\n", entries, loadS, best,
                best / loadS, r.findings.size(), r.iterations.iterations.size());
    return 0;
}
