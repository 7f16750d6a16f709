// memlens-bench-skim FILE [--repeat N]
//
// How much a second core could take off the load, measured before it is built. A reader that
// parses the second part of a trace on another thread must first know how many memo slots the
// first part defines (protocol 4 numbers them implicitly): a skim, walking the opcodes without
// building anything. This measures, in one run, each the best of N:
//   load      readSnapshotFile(FILE), as `memlens-cli stats` reads it;
//   skim      a walk over every opcode of the (mapped) file counting memo slots, on one thread;
//   loaded    the load again while another thread skims the file over and over: what a busy
//             second thread costs the parsing one on this machine.
// A split at fraction a of the file gives the main thread a of the parse and the other thread the
// skim of that part and the parse of the rest; they end together at a = 1 / (2 - skim / load),
// so the load would take about a x (loaded), before merging the two parts' tables.
// Ends with one machine-readable line:
//   RESULT load_s=... skim_s=... loaded_s=... split_at=... projected_s=...
#include "FileRepeatArgs.h"

#include "memlens/model/ParseError.h"
#include "memlens/model/SnapshotReader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace memlens::model;
using Clock = std::chrono::steady_clock;

namespace {

double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Skim {
    uint64_t memo = 0;     // slots MEMOIZE and the PUTs define (a PUT: its index + 1 at most)
    uint64_t opcodes = 0;  // memo-get runs count as one
    bool stopped = false;  // reached STOP at the file's end
    uint64_t badAt = 0;    // offset of an opcode it cannot walk over (0: none)
};

// Every opcode of a snapshot pickle, by how its argument is written: a fixed length, or a length
// of 1, 4 or 8 bytes before it. Text opcodes (protocol 0) end at a newline; PUT's text is its index.
enum Kind : uint8_t { Bad, Fixed, Len1, Len4, Len8, Line, Memoize, Put1, Put4, Stop };

struct Table {
    Kind kind[256];
    uint8_t fixed[256];
    constexpr Table() : kind(), fixed() {
        for (int c : std::initializer_list<int>{'(', ')', '}', ']', 'u', 'e', 'a', 's', 't', 'l', 'd', 'N', 0x88, 0x89, '0', '1', '2', 0x85, 0x86,
                      0x87, 0x8f, 0x90, 0x91})
            kind[c] = Fixed;
        // BINGET and LONG_BINGET: walked as runs, before the table is read
        const int withBytes[][2] = {{'K', 1}, {'M', 2}, {'J', 4}, {'G', 8}, {0x95, 8}, {0x80, 1}};
        for (const auto& [c, n] : withBytes) {
            kind[c] = Fixed;
            fixed[c] = static_cast<uint8_t>(n);
        }
        for (int c : std::initializer_list<int>{0x8a, 0x8c, 'U', 'C'}) kind[c] = Len1;
        for (int c : std::initializer_list<int>{'X', 'B', 'T', 0x8b}) kind[c] = Len4;
        for (int c : std::initializer_list<int>{0x8d, 0x8e, 0x96}) kind[c] = Len8;
        for (int c : std::initializer_list<int>{'I', 'L', 'F', 'V', 'S', 'p', 'g'}) kind[c] = Line;
        kind[0x94] = Memoize;
        kind['q'] = Put1;
        kind['r'] = Put4;
        kind['.'] = Stop;
    }
};
constexpr Table kTable;

Skim skim(const uint8_t* b, size_t n) {
    Skim s;
    const uint8_t* p = b;
    const uint8_t* end = b + n;
    while (p < end) {
        const uint8_t op = *p;
        if (op == 'h' || op == 'j') {  // a frames list: a run of memo gets, walked in one loop
            // a branch on each get's opcode, not a select: the processor predicts the branches and
            // runs ahead, where a select makes each get wait for the one before (3x slower here)
            while (p < end) {
                if (*p == 'h')
                    p += 2;
                else if (*p == 'j')
                    p += 5;
                else
                    break;
            }
            ++s.opcodes;
            continue;
        }
        ++p;
        ++s.opcodes;
        uint64_t len = 0;
        switch (kTable.kind[op]) {
        case Fixed: p += kTable.fixed[op]; break;
        case Memoize: ++s.memo; break;
        case Put1: s.memo = std::max<uint64_t>(s.memo, uint64_t(*p) + 1), p += 1; break;
        case Put4: {
            uint32_t i;
            std::memcpy(&i, p, 4);
            s.memo = std::max<uint64_t>(s.memo, uint64_t(i) + 1);
            p += 4;
            break;
        }
        case Len1: p += 1 + uint64_t(*p); break;
        case Len4: {
            uint32_t m;
            std::memcpy(&m, p, 4);
            len = m;
            p += 4 + len;
            break;
        }
        case Len8: std::memcpy(&len, p, 8), p += 8 + len; break;
        case Line: {
            const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
            if (!nl) return s.badAt = static_cast<uint64_t>(p - 1 - b), s;
            if (op == 'p') {
                const std::string index(reinterpret_cast<const char*>(p), static_cast<const uint8_t*>(nl) - p);
                s.memo = std::max<uint64_t>(s.memo, std::strtoull(index.c_str(), nullptr, 10) + 1);
            }
            p = static_cast<const uint8_t*>(nl) + 1;
            break;
        }
        case Stop: s.stopped = p == end; return s;
        case Bad: s.badAt = static_cast<uint64_t>(p - 1 - b); return s;
        }
    }
    return s;
}

// Another thread skimming the file over and over while it lives.
class Busy {
public:
    Busy(const uint8_t* bytes, size_t n, uint64_t memo)
        : thread_([this, bytes, n, memo] {
              while (!stop_.load(std::memory_order_relaxed))
                  if (skim(bytes, n).memo == memo) done_.fetch_add(1, std::memory_order_relaxed);
          }) {}
    ~Busy() { finish(); }
    // Stops it; the skims it completed (each found the memo slots of the first).
    uint64_t finish() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        return done_.load();
    }

private:
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> done_{0};
    std::thread thread_;  // last: starts once the members above exist
};

} // namespace

int main(int argc, char** argv) {
    FileRepeatArgs args;
    if (const int code = parseFileRepeat(argc, argv, args); code >= 0) return code;
    const std::string& path = args.path;
    const int repeat = args.repeat;

    const int fd = ::open(path.c_str(), O_RDONLY);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size == 0) {
        std::fprintf(stderr, "%s: cannot open or empty\n", path.c_str());
        return 1;
    }
    const size_t n = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) {
        std::fprintf(stderr, "%s: cannot map\n", path.c_str());
        return 1;
    }
    const auto* bytes = static_cast<const uint8_t*>(map);

    auto load = [&]() -> double {
        const auto t0 = Clock::now();
        Snapshot snap = readSnapshotFile(path);
        return secs(Clock::now() - t0);
    };
    double loadS = 1e30, skimS = 1e30, loadedS = 1e30;
    Skim result = skim(bytes, n);
    if (result.badAt || !result.stopped) {
        std::fprintf(stderr, "%s: the skim %s\n", path.c_str(),
                     result.badAt ? ("met an opcode it cannot walk at byte " + std::to_string(result.badAt)).c_str()
                                  : "did not end at STOP");
        return 1;
    }
    uint64_t skims = 0;
    try {
        // the three measures in turn each round, so that a machine whose speed drifts slows each alike
        for (int k = 0; k < repeat; ++k) {
            loadS = std::min(loadS, load());
            const auto t0 = Clock::now();
            const Skim again = skim(bytes, n);
            skimS = std::min(skimS, secs(Clock::now() - t0));
            if (again.memo != result.memo) return std::fprintf(stderr, "%s: two skims disagree\n", path.c_str()), 1;
            Busy busy(bytes, n, result.memo);  // stopped and joined when it goes, a load's throw too
            loadedS = std::min(loadedS, load());
            skims += busy.finish();
        }
        std::printf("%s: %.1f MB, %llu opcodes (a memo-get run as one), %llu memo slots; %llu skims beside the loads\n",
                    path.c_str(), static_cast<double>(n) / 1e6, static_cast<unsigned long long>(result.opcodes),
                    static_cast<unsigned long long>(result.memo), static_cast<unsigned long long>(skims));
    } catch (const ParseError& e) {
        std::fprintf(stderr, "%s\n", e.describe(path).c_str());
        return 1;
    }
    const double r = skimS / loadS;
    const double a = 1.0 / (2.0 - std::min(r, 1.0));
    std::printf("load:   best %.3f s of %d\n", loadS, repeat);
    std::printf("skim:   best %.3f s of %d (%.2f GB/s), %.2f x the load\n", skimS, repeat, static_cast<double>(n) / skimS / 1e9, r);
    std::printf("loaded: best %.3f s of %d with another thread skimming, %.2f x the load alone\n", loadedS, repeat, loadedS / loadS);
    std::printf("split:  at %.2f of the file; about %.3f s (%.2f x the load alone), before merging the parts\n", a, a * loadedS,
                a * loadedS / loadS);
    std::printf("RESULT load_s=%.6f skim_s=%.6f loaded_s=%.6f split_at=%.4f projected_s=%.6f\n", loadS, skimS, loadedS, a, a * loadedS);
    ::munmap(map, n);
    return 0;
}
