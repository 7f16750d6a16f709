#include "memlens/model/Workload.h"

#include "memlens/model/AddressMap.h"
#include "memlens/model/AllocatorState.h"
#include "memlens/model/HugePages.h"

#include <algorithm>
#include <set>

namespace memlens::model {

namespace {
constexpr uint64_t kSmallSize = 1ull << 20;
} // namespace

AddressSpace Workload::addressSpace() const {
    AddressSpace a;
    for (const auto& [size, addr] : recordedSegments) a.addRecordedSegment(size, addr);
    for (const Map& m : recordedMaps) a.addRecordedMap(m.stream, m.address, m.position);
    return a;
}

Workload buildWorkload(const Snapshot& snapshot, int device, const SimulatorSettings& settings,
                       const StateHistory* given) {
    Workload w;
    w.device = device;
    const DeviceData* dd = snapshot.device(device);
    if (!dd) return w;
    const TraceColumns& t = dd->trace;
    const auto n = static_cast<int64_t>(t.rows());
    w.traceEntries = n;
    AddressMap<uint32_t> open;  // address -> live allocation id

    // the state before the first entry
    {
        // without a history, only this state is needed: no checkpoints on the way to it
        const DeviceState st = given ? given->stateAfter(-1) : initialDeviceState(snapshot, device);
        for (const StateSegment& s : st.segments) {
            InitialSegment seg;
            seg.address = s.address;
            seg.size = s.totalSize;
            seg.stream = s.stream;
            seg.small = !s.isLarge;
            seg.expandable = s.isExpandable;
            const uint64_t end = s.address + s.totalSize;
            for (size_t i = 0; i < s.blocks.size(); ++i) {
                const StateBlock& b = s.blocks[i];
                if (b.kind == StateBlockKind::Free) continue;
                InitialBlock ib;
                ib.address = b.address;
                ib.size = b.size;
                ib.requested = b.requestedSize;
                ib.allocated = true;
                if (b.sizeEstimated) {
                    ++w.estimatedInitialBlocks;
                    ib.size = std::min(b.size, settings.roundSize(b.requestedSize));
                    // an unsplit large block keeps up to 1 MiB beyond its rounded size; a free
                    // large-pool block is always larger than 1 MiB, so a smaller gap is this block's
                    uint64_t nextStart = end;
                    for (size_t j = i + 1; j < s.blocks.size(); ++j)
                        if (s.blocks[j].kind != StateBlockKind::Free) {
                            nextStart = s.blocks[j].address;
                            break;
                        }
                    uint64_t gap = nextStart - (ib.address + ib.size);
                    if (s.isLarge && !s.isExpandable && gap > 0 && gap <= kSmallSize) ib.size += gap;
                }
                ib.id = static_cast<uint32_t>(w.allocations.size());
                WorkloadAllocation a;
                a.size = b.requestedSize;
                a.address = b.address;
                a.stream = s.stream;
                a.stack = b.stack;
                w.allocations.push_back(a);
                open[b.address] = ib.id;
                seg.blocks.push_back(ib);
            }
            w.initial.push_back(std::move(seg));
        }
    }

    std::set<uint64_t> streams;
    for (const auto& s : w.initial) streams.insert(s.stream);
    auto isRelease = [&](int64_t i) { return t.action[i] == Action::SegmentFree || t.action[i] == Action::SegmentUnmap; };
    int64_t nextFirst = 0;
    DeviceRefusal pending = DeviceRefusal::None;  // for the next malloc
    uint32_t pendingReleases = 0;
    // at most one op per entry (mallocs, frees, flushes) and one allocation per alloc: reserved at
    // once, so that growing them never copies hundreds of MB (pages never written are never used),
    // in 2 MiB pages: faulting them in 4 KiB at a time was about a third of building the workload
    // (real x170, tests/bench/README.md)
    {
        size_t allocs = 0, ops = 0;
        for (int64_t i = 0; i < n; ++i) {
            const Action a = t.action[i];
            allocs += a == Action::Alloc || a == Action::Oom;
            ops += a == Action::Alloc || a == Action::Oom || a == Action::FreeCompleted || a == Action::Free ||
                   isRelease(i);
        }
        reserveHugePages(w.ops, ops + 1);
        reserveHugePages(w.allocations, w.allocations.size() + allocs);
    }
    auto push = [&](WorkloadOp op) {
        op.firstEntry = nextFirst;
        nextFirst = op.position + 1;
        w.ops.push_back(op);
    };
    for (int64_t i = 0; i < n; ++i) {
        switch (t.action[i]) {
        case Action::Alloc: {
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::Malloc;
            op.id = static_cast<uint32_t>(w.allocations.size());
            op.size = t.size[i];
            op.stream = t.stream[i];
            op.position = i;
            op.refusal = pending;
            op.releases = pendingReleases;
            pending = DeviceRefusal::None;
            pendingReleases = 0;
            WorkloadAllocation a;
            a.allocEntry = i;
            a.size = t.size[i];
            a.address = t.addr[i];
            a.stream = t.stream[i];
            a.stack = t.stack[i];
            w.allocations.push_back(a);
            open[t.addr[i]] = op.id;
            streams.insert(op.stream);
            push(op);
            break;
        }
        case Action::FreeCompleted:
        case Action::Free: {
            const uint32_t* at = open.find(t.addr[i]);
            if (!at) {
                ++w.unmatchedFrees;
                break;
            }
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::Free;
            op.id = *at;
            op.stream = t.stream[i];
            op.position = i;
            w.allocations[*at].freeEntry = i;
            open.erase(t.addr[i]);
            push(op);
            break;
        }
        case Action::Oom: {
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::Malloc;
            op.id = static_cast<uint32_t>(w.allocations.size());
            op.size = t.size[i];  // the rounded size: rounding it again changes nothing
            op.stream = t.stream[i];
            op.position = i;
            op.refusal = DeviceRefusal::Always;
            op.deviceFree = t.addr[i];
            pending = DeviceRefusal::None;
            WorkloadAllocation a;
            a.allocEntry = i;
            a.size = t.size[i];
            a.stream = t.stream[i];
            a.stack = t.stack[i];
            a.oom = true;
            w.allocations.push_back(a);
            ++w.recordedOoms;
            push(op);
            break;
        }
        case Action::SegmentAlloc: w.recordedSegments.emplace_back(t.size[i], t.addr[i]); break;
        case Action::SegmentMap: w.recordedMaps.push_back({t.stream[i], t.addr[i], i}); break;
        case Action::SegmentFree:
        case Action::SegmentUnmap: {
            if (i > 0 && isRelease(i - 1)) break;  // inside a burst already classified
            int64_t j = i;
            while (j < n && isRelease(j)) ++j;
            // what follows the burst decides what caused it
            int64_t k = j;
            while (k < n && (t.action[k] == Action::FreeRequested || t.action[k] == Action::Snapshot)) ++k;
            if (k < n && t.action[k] == Action::Oom) break;  // the out-of-memory path of that malloc
            int64_t m = k;
            while (m < n && (t.action[m] == Action::SegmentAlloc || t.action[m] == Action::SegmentMap)) ++m;
            if (m > k && m < n && t.action[m] == Action::Alloc && t.stack[i] != 0 && t.stack[i] == t.stack[m]) {
                // cudaMalloc failed; oversize blocks (max_split_size_mb) or every cached block
                // released; the retry succeeded
                pending = DeviceRefusal::UntilFlush;
                pendingReleases = static_cast<uint32_t>(j - i);
                ++w.oomRetries;
                break;
            }
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::EmptyCache;
            op.position = j - 1;  // the call ends with its last release
            ++w.emptyCacheCalls;
            push(op);
            break;
        }
        default: break;
        }
    }
    w.streams = streams.size();

    uint64_t privateSegments = 0;
    for (const Segment& s : dd->segments)
        if (s.poolOwner != 0 || s.poolId != 0) ++privateSegments;
    if (privateSegments)
        w.caveats.push_back(std::to_string(privateSegments) +
                            " segments of the snapshot belong to private pools (CUDA graphs, MemPool), which the "
                            "simulator does not model");
    if (settings.garbageCollectionThreshold > 0.0 && !settings.fractionSet())
        w.caveats.push_back("garbage_collection_threshold is set, but the per-process memory fraction it needs "
                            "(set_per_process_memory_fraction) is not in the snapshot: no collection is simulated");
    if (w.unmatchedFrees)
        w.caveats.push_back(std::to_string(w.unmatchedFrees) +
                            " free_completed entries free blocks the rewound state does not hold (outside every "
                            "segment): they are left out");
    if (w.estimatedInitialBlocks)
        w.caveats.push_back(std::to_string(w.estimatedInitialBlocks) +
                            " blocks allocated before the trace and freed in it have sizes rebuilt from the size "
                            "asked (rounded; up to 1 MiB of an unsplit large block may be missing)");
    if (snapshot.layout == Layout::BareSegmentList)
        w.caveats.push_back("the snapshot has no trace: there is nothing to replay");
    return w;
}

} // namespace memlens::model
