// memlens-bench-load FILE [--repeat N]
//
// Measures readSnapshotFile: wall time and peak resident memory of the load. Each load runs in
// a freshly forked child, so the peak (ru_maxrss from wait4, and the child's own VmHWM) is that
// of one load and nothing else; the parent stays small. Prints a human line per run, then one
// machine-readable summary line:
//   RESULT load_s=<best> load_median_s=<median> peak_rss_kb=<max> file_bytes=<n> entries=<n> ...
// Exit status: 0, or 1 if a load failed (the ParseError is printed).
#include "Median.h"
#include "ProcStatus.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

using namespace memlens::model;

namespace {

struct ChildResult {
    double seconds = 0;
    long hwmKb = -1;       // VmHWM seen by the child itself after the load
    long baseKb = -1;      // VmRSS of the child before the load
    uint64_t entries = 0;  // trace entries, all devices
    uint64_t segments = 0;
    uint64_t blocks = 0;
    uint64_t frames = 0;
    uint64_t stacks = 0;
    uint64_t modelBytes = 0;  // Snapshot::memoryBytes()
    uint64_t replayed = 0;    // Snapshot::dictsReplayed: dicts read by a template
    // the trace's time and address columns, all devices: bytes, and blocks of 64 rows packed at
    // 1, 2, 3 and 4 bytes a row
    uint64_t timeBytes = 0, addrBytes = 0;
    std::array<uint64_t, 4> timeWidths{}, addrWidths{};
    int devices = 0;
    int ok = 0;
    char error[512] = {};
};

bool writeAll(int fd, const void* p, size_t n) {
    auto* c = static_cast<const char*>(p);
    while (n) {
        ssize_t w = ::write(fd, c, n);
        if (w <= 0) return false;
        c += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

bool readAll(int fd, void* p, size_t n) {
    auto* c = static_cast<char*>(p);
    while (n) {
        ssize_t r = ::read(fd, c, n);
        if (r <= 0) return false;
        c += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

[[noreturn]] void runChild(const std::string& path, int fd) {
    ChildResult r;
    r.baseKb = bench::procStatusKb("VmRSS");
    try {
        auto t0 = std::chrono::steady_clock::now();
        Snapshot s = readSnapshotFile(path);
        auto t1 = std::chrono::steady_clock::now();
        r.seconds = std::chrono::duration<double>(t1 - t0).count();
        r.hwmKb = bench::procStatusKb("VmHWM");
        for (const auto& d : s.devices) {
            r.entries += d.trace.rows();
            r.segments += d.segments.size();
            r.blocks += d.blocks.size();
            r.timeBytes += d.trace.timeUs.memoryBytes();
            r.addrBytes += d.trace.addr.memoryBytes();
            const auto tw = d.trace.timeUs.blocksByWidth(), aw = d.trace.addr.blocksByWidth();
            for (size_t w = 0; w < 4; ++w) {
                r.timeWidths[w] += tw[w];
                r.addrWidths[w] += aw[w];
            }
        }
        r.devices = static_cast<int>(s.devices.size());
        r.replayed = s.dictsReplayed;
        r.frames = s.frames.size();
        r.stacks = s.stackCount();
        r.modelBytes = s.memoryBytes();
        r.ok = 1;
        writeAll(fd, &r, sizeof r);
        ::_exit(0);  // the Snapshot's destructor is not part of the measurement
    } catch (const ParseError& e) {
        std::snprintf(r.error, sizeof r.error, "%s", e.describe(path).c_str());
    } catch (const std::exception& e) {
        std::snprintf(r.error, sizeof r.error, "%s: %s", path.c_str(), e.what());
    }
    writeAll(fd, &r, sizeof r);
    ::_exit(1);
}

} // namespace

int main(int argc, char** argv) {
    std::string path;
    int repeat = 3;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--repeat" && i + 1 < argc) {
            repeat = std::max(1, std::atoi(argv[++i]));
        } else if (a == "-h" || a == "--help") {
            std::printf("usage: %s FILE [--repeat N]\n", argv[0]);
            return 0;
        } else if (path.empty()) {
            path = a;
        } else {
            std::fprintf(stderr, "usage: %s FILE [--repeat N]\n", argv[0]);
            return 2;
        }
    }
    if (path.empty()) {
        std::fprintf(stderr, "usage: %s FILE [--repeat N]\n", argv[0]);
        return 2;
    }
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), std::strerror(errno));
        return 1;
    }
    const double fileMb = static_cast<double>(st.st_size) / 1e6;

    std::vector<double> times;
    long peakKb = 0;
    ChildResult last;
    for (int run = 0; run < repeat; ++run) {
        int fds[2];
        if (::pipe(fds) != 0) {
            std::perror("pipe");
            return 1;
        }
        std::fflush(nullptr);
        pid_t pid = ::fork();
        if (pid < 0) {
            std::perror("fork");
            return 1;
        }
        if (pid == 0) {
            ::close(fds[0]);
            runChild(path, fds[1]);
        }
        ::close(fds[1]);
        ChildResult r;
        bool got = readAll(fds[0], &r, sizeof r);
        ::close(fds[0]);
        int status = 0;
        struct rusage ru{};
        if (::wait4(pid, &status, 0, &ru) < 0) {
            std::perror("wait4");
            return 1;
        }
        if (!got || !r.ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "load failed: %s\n", got && r.error[0] ? r.error : "child died");
            if (WIFSIGNALED(status)) std::fprintf(stderr, "child killed by signal %d\n", WTERMSIG(status));
            return 1;
        }
        long rssKb = ru.ru_maxrss;  // kB on Linux
        peakKb = std::max(peakKb, rssKb);
        times.push_back(r.seconds);
        last = r;
        std::printf("run %d: %.3f s, peak RSS %.1f MB (child VmHWM %.1f MB, %.1f MB before the load), "
                    "%.1f MB/s\n",
                    run + 1, r.seconds, rssKb / 1024.0, r.hwmKb / 1024.0, r.baseKb / 1024.0, fileMb / r.seconds);
    }
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double best = sorted.front();
    double median = bench::median(times);
    std::printf("%s: %.1f MB, %d device(s), %llu trace entries, %llu segments, %llu blocks, %llu frames, "
                "%llu stacks; model %.1f MB\n",
                path.c_str(), fileMb, last.devices, static_cast<unsigned long long>(last.entries),
                static_cast<unsigned long long>(last.segments), static_cast<unsigned long long>(last.blocks),
                static_cast<unsigned long long>(last.frames), static_cast<unsigned long long>(last.stacks),
                static_cast<double>(last.modelBytes) / 1e6);
    for (const auto& [name, bytes, widths] : {std::tuple{"times", last.timeBytes, last.timeWidths},
                                              std::tuple{"addresses", last.addrBytes, last.addrWidths}})
        std::printf("  %s: %.1f MB, %.2f bytes an entry; blocks of 64 at 1/2/3/4 bytes a row: %llu/%llu/%llu/%llu\n", name,
                    static_cast<double>(bytes) / 1e6, last.entries ? static_cast<double>(bytes) / static_cast<double>(last.entries) : 0.0,
                    static_cast<unsigned long long>(widths[0]), static_cast<unsigned long long>(widths[1]),
                    static_cast<unsigned long long>(widths[2]), static_cast<unsigned long long>(widths[3]));
    const uint64_t dicts = last.entries + last.blocks;
    std::printf("  entries and blocks read by the template of one read before: %llu of %llu, %.1f %%\n",
                static_cast<unsigned long long>(last.replayed), static_cast<unsigned long long>(dicts),
                dicts ? 100.0 * static_cast<double>(last.replayed) / static_cast<double>(dicts) : 0.0);
    std::printf("load: best %.3f s, median %.3f s of %d; peak RSS %.1f MB = %.2f x file size\n", best, median, repeat,
                peakKb / 1024.0, peakKb * 1024.0 / static_cast<double>(st.st_size));
    std::printf("RESULT load_s=%.6f load_median_s=%.6f peak_rss_kb=%ld file_bytes=%lld entries=%llu segments=%llu "
                "blocks=%llu frames=%llu stacks=%llu model_bytes=%llu dicts_replayed=%llu\n",
                best, median, peakKb, static_cast<long long>(st.st_size),
                static_cast<unsigned long long>(last.entries), static_cast<unsigned long long>(last.segments),
                static_cast<unsigned long long>(last.blocks), static_cast<unsigned long long>(last.frames),
                static_cast<unsigned long long>(last.stacks), static_cast<unsigned long long>(last.modelBytes),
                static_cast<unsigned long long>(last.replayed));
    return 0;
}
