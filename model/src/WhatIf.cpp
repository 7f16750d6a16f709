#include "memlens/model/WhatIf.h"

#include "memlens/model/AllocatorState.h"
#include "memlens/model/Timeline.h"

#include <algorithm>
#include <array>
#include <future>
#include <optional>
#include <stdexcept>
#include <thread>

namespace memlens::model {

namespace {

std::vector<int64_t> sampleEntries(int64_t n, size_t points) {
    std::vector<int64_t> out;
    if (n <= 0 || points == 0) return out;
    if (static_cast<size_t>(n) <= points) {
        for (int64_t i = 0; i < n; ++i) out.push_back(i);
        return out;
    }
    for (size_t k = 0; k < points; ++k)
        out.push_back(static_cast<int64_t>(static_cast<double>(k) * static_cast<double>(n - 1) /
                                           static_cast<double>(points - 1)));
    return out;
}

} // namespace

WhatIfResult whatIf(const Snapshot& snapshot, int device, const SimulatorSettings& settingsIn,
                    const WorkloadEdits& edits, size_t seriesPoints) {
    WhatIfResult res;
    const DeviceData* dd = snapshot.device(device);
    static const DeviceData kEmpty;
    if (!dd) dd = &kEmpty;
    const TraceColumns& t = dd->trace;
    const auto n = static_cast<int64_t>(t.rows());

    // ---- the recording ----
    // Its figures need its state at four entries: before the first (for the workload), at the
    // peak of reserved bytes, at the peak of live bytes, at the first oom. They are taken on a
    // second thread in one rewind of the trace (no state history: its checkpoints and queries
    // cost more than the rewind itself), while this one reads the trace's workload (which waits
    // for the state before the first entry, handed over first: the others are materialised
    // while the simulation runs).
    DeviceTimeline tl = computeTimeline(*dd);
    Outcome& rec = res.recording;
    // the peak of reserved bytes; among the entries at that peak, the one with the most live bytes
    const int64_t best = tl.peakReservedAt;
    const int64_t peakLiveAt = n ? static_cast<int64_t>(tl.peakLiveIndex) : -1;
    int64_t firstOom = -1;
    for (int64_t i = 0; i < n; ++i) {
        if (t.action[i] != Action::Oom) continue;
        ++rec.ooms;
        if (firstOom < 0) firstOom = i;
    }
    enum { Before, AtPeak, AtPeakLive, AtOom };
    struct Figures {  // of each state, taken as it comes (the states are not kept)
        uint64_t freeBytes = 0, largestFreeBlock = 0, allocatedBytes = 0;
        double fragmentation = 0.0;
    };
    std::array<Figures, 4> figures;
    std::promise<DeviceState> beforeReady;
    std::future<DeviceState> before = beforeReady.get_future();
    auto rewind = [&snapshot, device, best, peakLiveAt, firstOom, &figures, &beforeReady] {
        bool handed = false;
        try {
            // their bytes only: no pass naming the blocks' allocs
            takeDeviceStatesAfter(snapshot, device, {-1, best, peakLiveAt, firstOom}, BlockAllocs::Unnamed,
                                  [&](size_t k, DeviceState st) {
                                      figures[k] = {st.freeBytes, st.largestFreeBlock, st.allocatedBytes,
                                                    st.fragmentation()};
                                      if (k == Before) {
                                          handed = true;
                                          beforeReady.set_value(std::move(st));
                                      }
                                  });
        } catch (...) {
            if (handed) throw;  // after the state before: the future below says it
            beforeReady.set_exception(std::current_exception());
        }
    };
    std::future<void> rewound;  // (its destructor waits for the rewind, should this thread throw)
    if (std::thread::hardware_concurrency() < 2)
        rewind();
    else
        rewound = std::async(std::launch::async, rewind);
    Workload w = buildWorkload(snapshot, device, settingsIn, [&before] { return before.get(); });
    // (no such device: no workload asked for it)
    rec.peakReserved = static_cast<uint64_t>(std::max<int64_t>(0, tl.peakReserved));
    rec.peakReservedEntry = best;
    rec.peakLive = static_cast<uint64_t>(std::max<int64_t>(0, std::max(tl.peakLive, tl.liveBefore)));
    if (firstOom >= 0) {
        OomOutcome oo;
        oo.entry = firstOom;
        oo.sizeAsked = t.size[firstOom];
        oo.deviceFree = t.addr[firstOom];
        rec.firstOom = oo;  // its free bytes once its state is there
    }

    // ---- the device ----
    // Without a given capacity the recording bounds it: an oom entry says how much was free
    // (capacity = reserved then + device_free); a malloc whose cudaMalloc failed and succeeded after
    // the cache was flushed says the capacity is below reserved-before-the-flush + the segment.
    SimulatorSettings settings = settingsIn;  // the workload used it for sizes only, not the capacity
    if (settings.capacity) {
        res.capacitySource = "given";
    } else {
        uint64_t cap = 0;
        for (const WorkloadOp& op : w.ops) {
            if (op.kind != WorkloadOp::Kind::Malloc || op.refusal == DeviceRefusal::None) continue;
            const int64_t p = op.position;
            uint64_t bound = 0;
            std::string why;
            if (op.refusal == DeviceRefusal::Always) {
                bound = static_cast<uint64_t>(std::max<int64_t>(0, tl.reservedBytes[p])) + w.deviceFreeOf(op.id);
                why = "the recorded oom at entry " + std::to_string(p) + " (reserved then + the device's free memory)";
            } else {
                int64_t k = p - 1;  // back over the retry's segment_alloc / segment_map, then the flush
                uint64_t segment = 0;
                while (k >= 0 && (t.action[k] == Action::SegmentAlloc || t.action[k] == Action::SegmentMap)) segment = t.size[k--];
                while (k >= 0 && (t.action[k] == Action::SegmentFree || t.action[k] == Action::SegmentUnmap)) --k;
                const int64_t before = k >= 0 ? tl.reservedBytes[k] : tl.reservedBefore;
                if (!segment) continue;
                bound = static_cast<uint64_t>(std::max<int64_t>(0, before)) + segment - 1;
                why = "the recorded out-of-memory retry at entry " + std::to_string(p) + " (reserved before the flush + "
                      "the segment that did not fit, less one byte)";
            }
            if (bound && (!cap || bound < cap)) {
                cap = bound;
                res.capacitySource = "inferred from " + why;
            }
        }
        if (cap) settings.capacity = cap;
        else res.capacitySource = "unlimited";
    }
    if (settings.fractionSet() && !settings.capacity)
        throw std::invalid_argument("a memory fraction needs the device's capacity (--capacity BYTES): "
                                    "the recording has no oom entry to infer it from");
    res.settings = settings;

    // ---- the simulation ----
    res.edits = applyEdits(w, snapshot, edits);
    res.estimated = res.edits.estimated;

    // ---- series ----
    // sampled at the entries that end one of the program's calls (an alloc, a free, an
    // empty_cache; ops are in entry order), where the recording and the simulation can be
    // compared: the simulation after the last op at each sampled entry. The recording's now, so
    // that its timeline is not kept beside the simulation.
    std::vector<int64_t> sampleEntry;
    std::vector<size_t> sampleOp;
    {
        int64_t distinct = 0;
        for (size_t i = 0; i < w.ops.size(); ++i)
            if (i == 0 || w.ops[i].position > w.ops[i - 1].position) ++distinct;
        const std::vector<int64_t> picked = sampleEntries(distinct, seriesPoints);  // ascending
        size_t j = 0;
        int64_t end = -1;  // index of the current op's entry among the distinct ones
        for (size_t i = 0; i < w.ops.size() && j < picked.size(); ++i) {
            if (i == 0 || w.ops[i].position > w.ops[i - 1].position) ++end;
            const bool lastAtEntry = i + 1 == w.ops.size() || w.ops[i + 1].position > w.ops[i].position;
            if (lastAtEntry && end == picked[j]) {
                sampleEntry.push_back(w.ops[i].position);
                sampleOp.push_back(i);
                ++j;
            }
        }
    }
    for (const int64_t e : sampleEntry) {
        const int64_t reservedThere = e >= 0 ? tl.reservedBytes[static_cast<size_t>(e)] : tl.reservedBefore;
        const int64_t liveThere = e >= 0 ? tl.liveBytes[static_cast<size_t>(e)] : tl.liveBefore;
        rec.series.push_back({e, static_cast<uint64_t>(std::max<int64_t>(0, reservedThere)),
                              static_cast<uint64_t>(std::max<int64_t>(0, liveThere))});
    }
    tl = DeviceTimeline{};

    ReplayOptions opt;
    opt.recordedRefusals = false;
    opt.events = false;  // the figures below need none
    opt.seriesOps = &sampleOp;
    ReplayResult r = replay(w, settings, opt);
    Outcome& sim = res.simulation;
    sim.peakReserved = r.peak.reserved;
    sim.peakReservedEntry = r.peak.op < w.ops.size() ? w.ops[r.peak.op].position : -1;
    sim.peakAllocated = r.peakAllocated;
    sim.peakLive = r.peakRequested;
    sim.freeAtPeak = r.peak.freeBytes;
    sim.largestFreeAtPeak = r.peak.largestFreeBlock;
    sim.fragmentationAtPeak = r.peak.fragmentation();
    sim.ooms = r.ooms.size();
    if (!r.ooms.empty()) {
        const SimOom& o = r.ooms.front();
        OomOutcome oo;
        oo.entry = w.ops[o.op].position;
        oo.sizeAsked = o.sizeAsked;
        oo.largestFreeBlock = o.largestFreeBlock;
        oo.totalFree = o.freeBytes;
        oo.deviceFree = o.deviceFree;
        sim.firstOom = oo;
    }
    for (size_t k = 0; k < sampleEntry.size(); ++k)
        sim.series.push_back({sampleEntry[k], r.reservedAfter[k], r.requestedAfter[k]});

    // the recording's states at its peaks and first oom, materialised meanwhile
    if (rewound.valid()) rewound.get();
    rec.freeAtPeak = figures[AtPeak].freeBytes;
    rec.largestFreeAtPeak = figures[AtPeak].largestFreeBlock;
    rec.fragmentationAtPeak = figures[AtPeak].fragmentation;
    rec.peakAllocated = figures[AtPeakLive].allocatedBytes;
    if (rec.firstOom) {
        rec.firstOom->largestFreeBlock = figures[AtOom].largestFreeBlock;
        rec.firstOom->totalFree = figures[AtOom].freeBytes;
    }
    return res;
}

} // namespace memlens::model
