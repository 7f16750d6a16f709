#include "memlens/model/Replay.h"

#include "memlens/model/HugePages.h"

#include <algorithm>

namespace memlens::model {

ReplayResult replay(const Workload& w, const SimulatorSettings& settings, const ReplayOptions& options) {
    ReplayResult r;
    AddressSpace addresses = w.addressSpace();
    AllocatorSimulator sim(settings, addresses);
    sim.reserveIds(w.allocations.size());
    for (const InitialSegment& s : w.initial) {
        if (s.expandable) continue;
        sim.addSegment(s.address, s.size, s.stream, s.small, s.blocks);
    }
    // expandable segments: one reservation per (stream, pool), from its lowest mapped address
    for (size_t i = 0; i < w.initial.size(); ++i) {
        const InitialSegment& s = w.initial[i];
        if (!s.expandable) continue;
        bool first = true;
        for (size_t j = 0; j < i; ++j)
            if (w.initial[j].expandable && w.initial[j].stream == s.stream && w.initial[j].small == s.small) first = false;
        if (!first) continue;
        std::vector<InitialBlock> mapped;
        for (size_t j = i; j < w.initial.size(); ++j) {
            const InitialSegment& o = w.initial[j];
            if (!o.expandable || o.stream != s.stream || o.small != s.small) continue;
            uint64_t cursor = o.address;
            for (const InitialBlock& b : o.blocks) {  // free space is listed too: it is mapped
                if (b.address > cursor) mapped.push_back(InitialBlock{cursor, b.address - cursor, 0, false, 0});
                mapped.push_back(b);
                cursor = b.address + b.size;
            }
            if (cursor < o.address + o.size) mapped.push_back(InitialBlock{cursor, o.address + o.size - cursor, 0, false, 0});
        }
        sim.addReservation(s.address, sim.reservationSize(s.small), s.stream, s.small, mapped);
    }

    sim.keepEvents(options.events);
    if (options.events) sim.reserveEvents(w.ops.size() + w.ops.size() / 8 + 64);
    r.initialReserved = sim.reservedBytes();
    r.initialRequested = sim.requestedBytes();
    if (options.series) {
        reserveHugePages(r.reservedAfter, w.ops.size());
        reserveHugePages(r.requestedAfter, w.ops.size());
    }
    int64_t next = 0;  // the first entry the next op accounts for (ops of one entry: its position)
    for (size_t i = 0; i < w.ops.size(); ++i) {
        const WorkloadOp& op = w.ops[i];
        if (op.position > options.stopAfterEntry) break;
        sim.setPosition(static_cast<uint32_t>(i), std::min(next, op.position));
        next = op.position + 1;
        switch (op.kind) {
        case WorkloadOp::Kind::Malloc: {
            DeviceRefusal refusal = options.recordedRefusals ? op.refusal : DeviceRefusal::None;
            const WorkloadAllocation& a = w.allocations[op.id];
            const uint64_t deviceFree = op.refusal == DeviceRefusal::Always ? w.deviceFreeOf(op.id) : 0;
            if (sim.malloc(op.id, op.size, a.stream, refusal, deviceFree, op.releases)) {
                if (!a.oom) {
                    ++r.allocations;
                    if (sim.addressOf(op.id) == a.address) ++r.atRecordedAddress;
                }
            }
            break;
        }
        case WorkloadOp::Kind::Free:
            if (!sim.free(op.id)) ++r.unknownFrees;
            break;
        case WorkloadOp::Kind::EmptyCache: sim.emptyCache(); break;
        }
        if (options.series) {
            r.reservedAfter.push_back(sim.reservedBytes());
            r.requestedAfter.push_back(sim.requestedBytes());
        }
    }
    if (options.keepSegments) r.segments = sim.segments();
    r.events = sim.takeEvents();
    r.ooms = sim.ooms();
    r.peak = sim.peak();
    r.peakAllocated = sim.peakAllocated();
    r.peakRequested = sim.peakRequested();
    r.finalReserved = sim.reservedBytes();
    r.segmentAddressesRecorded = addresses.recordedTaken();
    r.segmentAddressesInvented = addresses.invented();
    return r;
}

namespace {

bool compared(Action a) {
    switch (a) {
    case Action::Alloc:
    case Action::FreeCompleted:
    case Action::Free:
    case Action::SegmentAlloc:
    case Action::SegmentFree:
    case Action::SegmentMap:
    case Action::SegmentUnmap:
    case Action::Oom: return true;
    default: return false;
    }
}

} // namespace

Fidelity compareWithRecording(const Workload& w, const ReplayResult& r, const DeviceData& device) {
    Fidelity f;
    const TraceColumns& t = device.trace;
    const auto n = static_cast<int64_t>(t.rows());
    size_t s = 0;
    for (int64_t i = 0; i < n; ++i) {
        Action a = t.action[i];
        if (a == Action::Alloc) ++f.allocations;
        if (!compared(a)) continue;
        ++f.comparedEntries;
        if (f.first.entry >= 0) continue;
        Action ra = a == Action::Free ? Action::FreeCompleted : a;
        bool same = false;
        if (s < r.events.size()) {
            const SimEvent& e = r.events[s];
            same = e.action == ra && e.size == t.size[i] && (ra == Action::Oom || e.addr == t.addr[i]);
        }
        if (same) {
            ++f.matchingEntries;
            ++s;
            continue;
        }
        f.first.entry = i;
        f.first.recordedAction = a;
        f.first.recordedAddr = t.addr[i];
        f.first.recordedSize = t.size[i];
        if (s < r.events.size()) {
            const SimEvent& e = r.events[s];
            f.first.simulated = true;
            f.first.simulatedAction = e.action;
            f.first.simulatedAddr = e.addr;
            f.first.simulatedSize = e.size;
            f.first.simulatedIndex = static_cast<int64_t>(s);
        }
    }
    if (f.first.entry < 0 && s < r.events.size()) {
        f.extraSimulatedEvents = r.events.size() - s;
        f.first.simulated = true;
        f.first.simulatedAction = r.events[s].action;
        f.first.simulatedAddr = r.events[s].addr;
        f.first.simulatedSize = r.events[s].size;
        f.first.simulatedIndex = static_cast<int64_t>(s);
    }
    f.atRecordedAddress = r.atRecordedAddress;
    (void)w;
    return f;
}

} // namespace memlens::model
