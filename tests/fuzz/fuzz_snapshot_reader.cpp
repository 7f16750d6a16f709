// libFuzzer target: any input must either load or be refused with ParseError. Any other exception,
// a crash, a sanitizer report, a hang (-timeout) or runaway memory (-rss_limit_mb) is a finding.
// When a snapshot loads, StateHistory is rebuilt for each device and probed at a few entries.
#include "memlens/model/ParseError.h"
#include "memlens/model/Snapshot.h"
#include "memlens/model/SnapshotReader.h"
#if MEMLENS_FUZZ_STATE_HISTORY
#include "memlens/model/AllocatorState.h"
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <span>
#include <string>

using namespace memlens::model;

namespace {

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "fuzz_snapshot_reader: %s\n", what);
    std::abort();
}

// Touches the parts of a loaded snapshot that others index, so that an inconsistent
// structure shows up here (under ASan) rather than in a view.
void checkSnapshot(const Snapshot& s) {
    if (s.stackOffsets.empty()) finding("stackOffsets is empty (stack 0 must exist)");
    for (size_t st = 0; st < s.stackCount(); ++st) {
        if (s.stackOffsets[st] > s.stackOffsets[st + 1] || s.stackOffsets[st + 1] > s.stackFrames.size())
            finding("stackOffsets out of order or out of range");
    }
    for (FrameId f : s.stackFrames)
        if (f >= s.frames.size()) finding("stack frame id out of range");
    for (const Frame& f : s.frames) {
        (void)s.str(f.filename);
        (void)s.str(f.name);
    }
    for (const DeviceData& dd : s.devices) {
        const TraceColumns& t = dd.trace;
        size_t n = t.rows();
        if (t.actionName.size() != n || t.flags.size() != n || t.addr.size() != n || t.size.size() != n ||
            t.stream.size() != n || t.timeUs.size() != n || t.stack.size() != n || t.compileContext.size() != n ||
            t.userMetadata.size() != n)
            finding("trace columns of different lengths");
        for (size_t i = 0; i < n; ++i) {
            if (t.stack[i] >= s.stackCount()) finding("trace stack id out of range");
            (void)s.str(t.actionName[i]);
            (void)s.str(t.compileContext[i]);
            (void)s.str(t.userMetadata[i]);
        }
        for (const Segment& seg : dd.segments) {
            if (seg.device != dd.device) finding("segment filed under the wrong device");
            if (uint64_t(seg.firstBlock) + seg.blockCount > dd.blocks.size()) finding("segment blocks out of range");
            if (seg.stack >= s.stackCount()) finding("segment stack id out of range");
        }
        for (const Block& b : dd.blocks)
            if (b.stack >= s.stackCount()) finding("block stack id out of range");
        if (s.device(dd.device) != &dd) finding("Snapshot::device() does not find a device");
    }
    (void)s.memoryBytes();
}

#if MEMLENS_FUZZ_STATE_HISTORY
// Keeps each input fast: the rewind is linear in entries times live blocks.
constexpr size_t kMaxHistoryWork = 200000;

void exerciseHistory(const Snapshot& s) {
    for (const DeviceData& dd : s.devices) {
        size_t work = dd.trace.rows() + dd.blocks.size() + dd.segments.size();
        if (work > kMaxHistoryWork) continue;
        for (size_t interval : {size_t(0), size_t(1), size_t(7)}) {
            // explicit small intervals keep a checkpoint every few entries: only where that stays cheap
            if (interval && dd.trace.rows() / interval * (dd.blocks.size() + dd.segments.size() + 1) > 4000000)
                continue;
            StateHistory h(s, dd.device, interval);
            int64_t n = h.entries();
            if (n < 0) finding("StateHistory::entries() is negative");
            const int64_t probes[] = {-1, 0, n / 3, n / 2, n - 2, n - 1, 2 * n / 3};
            for (int64_t at : probes) {
                if (at < -1 || at >= n) continue;
                DeviceState st = h.stateAfter(at);
                if (st.at != at) finding("DeviceState::at differs from the requested entry");
                for (const StateSegment& seg : st.segments)
                    for (const StateBlock& b : seg.blocks)
                        if (b.stack >= s.stackCount()) finding("state block stack id out of range");
                (void)st.fragmentation();
            }
            (void)h.checkpointCount();
            (void)h.memoryBytes();
        }
    }
}
#endif

// MEMLENS_FUZZ_VERBOSE=1 prints what each input gave (to check seeds when replaying files).
const bool kVerbose = std::getenv("MEMLENS_FUZZ_VERBOSE") != nullptr;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        Snapshot s = readSnapshotMemory(std::span<const uint8_t>(data, size));
        if (kVerbose) {
            size_t rows = 0;
            for (const DeviceData& dd : s.devices) rows += dd.trace.rows();
            std::fprintf(stderr, "loaded: protocol %d, %zu devices, %zu trace entries, %zu frames, %zu stacks\n",
                         s.pickleProtocol, s.devices.size(), rows, s.frames.size(), s.stackCount());
        }
        checkSnapshot(s);
#if MEMLENS_FUZZ_STATE_HISTORY
        exerciseHistory(s);
#endif
    } catch (const ParseError& e) {
        std::string msg = e.describe("input");  // the one-line message must be buildable too
        if (kVerbose) std::fprintf(stderr, "ParseError: %s\n", msg.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_snapshot_reader: unexpected exception (not ParseError): %s\n", e.what());
        std::abort();
    } catch (...) {
        finding("unexpected non-std exception");
    }
    return 0;
}
