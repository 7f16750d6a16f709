#pragma once
// Shared by the timeline, events and navigation tests: a one-device snapshot built from a list of
// trace entries (and annotations), through the real reader. The final segment holds the blocks
// still allocated at the end, so that the timeline rewinds to sensible totals.
#include "Synthetic.h"

#include "core/LoadedSnapshot.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tracetest {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr uint64_t kBase = 0x7f0000000000ull;  // the one segment's address
constexpr uint64_t kSegment = 8 * MiB;

// Address of the k-th 1 MiB slot in the segment.
constexpr uint64_t slot(int k) { return kBase + static_cast<uint64_t>(k) * MiB; }

struct Entry {
    std::string action;
    uint64_t addr = 0;
    uint64_t size = 0;
    int64_t time = -1;       // time_us; -1: none
    std::string where = "";  // a user frame "where (model.py:N)"; empty: no frames
};

struct Note {
    std::string stage;  // "START" or "END"
    std::string name;
    int64_t time = 0;
    int device = 0;
};

inline synth::P framesOf(const std::string& where) {
    using namespace synth;
    if (where.empty()) return list();
    return list({frame("malloc", "??", 0), frame("linear", "/venv/lib/python3.11/site-packages/torch/nn/functional.py", 12),
                 frame(where, "/home/me/model.py", 40)});
}

inline std::string picklize(const std::vector<Entry>& entries, const std::vector<Note>& notes = {}) {
    using namespace synth;
    std::map<uint64_t, uint64_t> live;  // addr -> requested size, at the end
    std::vector<P> trace;
    for (const Entry& e : entries) {
        if (e.action == "oom") {
            std::vector<std::pair<std::string, P>> kv = {{"action", str("oom")}, {"device_free", unum(e.addr)},
                                                         {"size", unum(e.size)}, {"stream", num(0)}};
            if (e.time >= 0) kv.emplace_back("time_us", num(e.time));
            trace.push_back(dict(kv));
            continue;
        }
        if (e.action == "alloc") live[e.addr] = e.size;
        if (e.action == "free_completed" || e.action == "free") live.erase(e.addr);
        trace.push_back(entry(e.action, e.addr, e.size, framesOf(e.where), e.time));
    }
    std::vector<BlockSpec> blocks;
    uint64_t at = kBase;
    for (const auto& [addr, size] : live) {
        if (addr < at || addr >= kBase + kSegment) continue;
        if (addr > at) blocks.push_back({at, addr - at, 0, "inactive", nullptr});
        const uint64_t rounded = (size + 511) / 512 * 512;
        blocks.push_back({addr, rounded, size, "active_allocated", nullptr});
        at = addr + rounded;
    }
    if (at < kBase + kSegment) blocks.push_back({at, kBase + kSegment - at, 0, "inactive", nullptr});
    std::vector<P> ann;
    for (const Note& n : notes)
        ann.push_back(dict({{"device", num(n.device)}, {"time_us", num(n.time)}, {"name", str(n.name)}, {"stage", str(n.stage)}}));
    P snap = dict({{"segments", list({segment(0, kBase, blocks)})},
                   {"device_traces", list({list(trace)})},
                   {"allocator_settings", dict({{"PYTORCH_CUDA_ALLOC_CONF", str("")}})},
                   {"external_annotations", list(ann)}});
    return dumps(snap, 4);
}

inline std::shared_ptr<memlens::views::LoadedSnapshot> load(const std::vector<Entry>& entries,
                                                             const std::vector<Note>& notes = {}) {
    return memlens::views::LoadedSnapshot::fromSnapshot(synth::read(picklize(entries, notes)), "trace.pickle");
}

// A small training-like trace used by several tests (times in µs):
//   0 segment_alloc        1 alloc A 1 MiB (weights)  2 alloc B 512 KiB   3 alloc C 256 KiB
//   4 free_requested B     5 free_completed B         6 oom               7 alloc D 768 KiB at B's slot
//   8 free_requested C     9 free_completed C        10 free_completed E (allocated before recording)
//  11 snapshot
inline std::vector<Entry> smallTrace() {
    return {
        {"segment_alloc", kBase, kSegment, 100},
        {"alloc", slot(0), 1 * MiB, 110, "weights"},
        {"alloc", slot(1), 512 * KiB, 120, "activations"},
        {"alloc", slot(2), 256 * KiB, 130, "grads"},
        {"free_requested", slot(1), 512 * KiB, 140, "activations"},
        {"free_completed", slot(1), 512 * KiB, 150, "activations"},
        {"oom", 3 * MiB, 64 * MiB, 160},
        {"alloc", slot(1), 768 * KiB, 170, "activations"},
        {"free_requested", slot(2), 256 * KiB, 180, "grads"},
        {"free_completed", slot(2), 256 * KiB, 190, "grads"},
        {"free_completed", slot(5), 128 * KiB, 200, "old"},
        {"snapshot", 0, 1792 * KiB, 210},
    };
}

} // namespace tracetest
