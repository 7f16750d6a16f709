#include "memlens/model/Replay.h"

#include "memlens/model/RecordingComparison.h"

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
    sim.setEventSink(options.sink);
    if (options.events && !options.sink) sim.reserveEvents(w.ops.size() + w.ops.size() / 8 + 64);
    r.initialReserved = sim.reservedBytes();
    r.initialRequested = sim.requestedBytes();
    const std::vector<size_t>* only = options.series ? options.seriesOps : nullptr;
    size_t nextSample = 0;  // in *only
    if (only) {
        r.reservedAfter.reserve(only->size());
        r.requestedAfter.reserve(only->size());
    } else if (options.series) {
        r.reservedAfter.reserve(w.ops.size());
        r.requestedAfter.reserve(w.ops.size());
    }
    int64_t next = 0;  // the first entry the next op accounts for (ops of one entry: its position)
    for (size_t i = 0; i < w.ops.size(); ++i) {
        const WorkloadOp& op = w.ops[i];
        if (op.position > options.stopAfterEntry) break;
        sim.setPosition(static_cast<uint32_t>(i), std::min<int64_t>(next, op.position));
        next = op.position + 1;
        switch (op.kind) {
        case WorkloadOp::Kind::Malloc: {
            DeviceRefusal refusal = options.recordedRefusals ? op.refusal : DeviceRefusal::None;
            const WorkloadAllocation& a = w.allocations[op.id];
            const uint64_t deviceFree = op.refusal == DeviceRefusal::Always ? w.deviceFreeOf(op.id) : 0;
            if (sim.malloc(op.id, a.size, w.streamOf(a), refusal, deviceFree, op.releases)) {
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
        if (only) {
            for (; nextSample < only->size() && (*only)[nextSample] == i; ++nextSample) {
                r.reservedAfter.push_back(sim.reservedBytes());
                r.requestedAfter.push_back(sim.requestedBytes());
            }
        } else if (options.series) {
            r.reservedAfter.push_back(sim.reservedBytes());
            r.requestedAfter.push_back(sim.requestedBytes());
        }
    }
    if (options.keepSegments) r.segments = sim.segments();
    r.events = sim.takeEvents();
    r.eventCount = sim.eventCount();
    r.ooms = sim.ooms();
    r.peak = sim.peak();
    r.peakAllocated = sim.peakAllocated();
    r.peakRequested = sim.peakRequested();
    r.finalReserved = sim.reservedBytes();
    r.segmentAddressesRecorded = addresses.recordedTaken();
    r.segmentAddressesInvented = addresses.invented();
    return r;
}

Fidelity compareWithRecording(const ReplayResult& r, const DeviceData& device) {
    RecordingComparison comparison(device);
    for (const SimEvent& e : r.events) comparison.onEvent(e);
    return comparison.finish(r.atRecordedAddress);
}

} // namespace memlens::model
