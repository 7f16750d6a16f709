#include "memlens/model/Workload.h"

#include "memlens/model/AddressMap.h"
#include "memlens/model/AllocatorState.h"

#include <algorithm>
#include <future>
#include <limits>
#include <stdexcept>
#include <unordered_map>
#include <thread>

namespace memlens::model {

namespace {
constexpr uint64_t kSmallSize = 1ull << 20;
} // namespace

uint64_t Workload::deviceFreeOf(uint32_t id) const {
    auto it = std::lower_bound(oomDeviceFree.begin(), oomDeviceFree.end(), id,
                               [](const std::pair<uint32_t, uint64_t>& o, uint32_t v) { return o.first < v; });
    return it != oomDeviceFree.end() && it->first == id ? it->second : 0;
}

static_assert(sizeof(WorkloadOp) == 16);
static_assert(sizeof(WorkloadAllocation) == 32);

AddressSpace Workload::addressSpace() const {
    AddressSpace a;
    for (const auto& [size, addr] : recordedSegments) a.addRecordedSegment(size, addr);
    for (const Map& m : recordedMaps) a.addRecordedMap(m.stream, m.address, m.position);
    return a;
}

namespace {

// The workload's streams while it is built: each allocation's stream gets an index in
// Workload::streamValues; Workload::streams counts those of the trace's allocations and of the
// state's segments (not a stream only a recorded oom used).
class StreamTable {
public:
    explicit StreamTable(std::vector<uint64_t>& values) : values_(values) {}
    // stream's index in the values, added when new (at most 65,536 streams, else std::length_error)
    uint16_t index(uint64_t stream, bool counted) {
        Entry& e = entries_[stream];
        e.counted = e.counted || counted;
        if (e.index < 0) {
            if (values_.size() > std::numeric_limits<uint16_t>::max())
                throw std::length_error("the trace uses more than 65,536 streams: too many to replay");
            e.index = static_cast<int32_t>(values_.size());
            values_.push_back(stream);
        }
        return static_cast<uint16_t>(e.index);
    }
    void count(uint64_t stream) { entries_[stream].counted = true; }
    uint64_t counted() const {
        return static_cast<uint64_t>(
            std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return e.second.counted; }));
    }

private:
    struct Entry {
        int32_t index = -1;  // in the values; -1: none yet
        bool counted = false;
    };
    std::vector<uint64_t>& values_;
    std::unordered_map<uint64_t, Entry> entries_;
};

// A free of an address no trace allocation had taken before it: a block of the state before the
// trace, or nothing known (decided once that state is there).
struct OpenFree {
    size_t op;        // its op in Workload::ops
    uint64_t address;
};

bool isRelease(const TraceColumns& t, int64_t i) {
    return t.action[i] == Action::SegmentFree || t.action[i] == Action::SegmentUnmap;
}

// The trace's ops and allocations, without the state before the first entry: allocations get ids
// from 0 in trace order, frees of blocks allocated before the trace are left in openFrees.
std::vector<OpenFree> readTrace(Workload& w, const DeviceData& dd, StreamTable& streams) {
    const TraceColumns& t = dd.trace;
    const auto n = static_cast<int64_t>(t.rows());
    std::vector<OpenFree> openFrees;
    AddressMap<uint32_t> open;  // address -> live allocation id
    DeviceRefusal pending = DeviceRefusal::None;  // for the next malloc
    uint32_t pendingReleases = 0;
    // at most one op per entry (mallocs, frees, flushes) and one allocation per alloc: reserved at
    // once, so that growing them never copies hundreds of MB (pages never written are never used).
    // The allocations of the state before the trace come after the trace's: at most one per free
    // of the trace and one per block of the snapshot.
    {
        size_t allocs = 0, frees = 0, ops = 0;
        for (int64_t i = 0; i < n; ++i) {
            const Action a = t.action[i];
            const bool free = a == Action::FreeCompleted || a == Action::Free;
            allocs += a == Action::Alloc || a == Action::Oom;
            frees += free;
            ops += a == Action::Alloc || a == Action::Oom || free || isRelease(t, i);
        }
        w.ops.reserve(ops + 1);
        w.allocations.reserve(allocs + frees + dd.blocks.size());
    }
    // the last stream seen and its index: the stream table is not probed for every alloc
    uint64_t lastStream = 0;
    uint16_t lastIndex = 0;
    bool anyStream = false;
    auto allocStream = [&](uint64_t stream) {
        if (!anyStream || stream != lastStream) {
            lastIndex = streams.index(stream, true);
            lastStream = stream;
            anyStream = true;
        }
        return lastIndex;
    };
    for (int64_t e = 0; e < n; ++e) {
        const auto i = static_cast<int32_t>(e);  // n < 2^31 (buildWorkload)
        switch (t.action[i]) {
        case Action::Alloc: {
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::Malloc;
            op.id = static_cast<uint32_t>(w.allocations.size());
            op.position = i;
            op.refusal = pending;
            op.releases = pendingReleases;
            pending = DeviceRefusal::None;
            pendingReleases = 0;
            WorkloadAllocation a;
            a.allocEntry = i;
            a.size = t.size[i];
            a.address = t.addr[i];
            a.streamIndex = allocStream(t.stream[i]);
            a.stack = t.stack[i];
            w.allocations.push_back(a);
            open[t.addr[i]] = op.id;
            w.ops.push_back(op);
            break;
        }
        case Action::FreeCompleted:
        case Action::Free: {
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::Free;
            op.position = i;
            if (const uint32_t* at = open.find(t.addr[i])) {
                op.id = *at;
                w.allocations[*at].freeEntry = i;
                open.erase(t.addr[i]);
            } else {
                openFrees.push_back({w.ops.size(), t.addr[i]});
            }
            w.ops.push_back(op);
            break;
        }
        case Action::Oom: {
            WorkloadOp op;
            op.kind = WorkloadOp::Kind::Malloc;
            op.id = static_cast<uint32_t>(w.allocations.size());
            op.position = i;
            op.refusal = DeviceRefusal::Always;
            w.oomDeviceFree.emplace_back(op.id, t.addr[i]);
            pending = DeviceRefusal::None;
            WorkloadAllocation a;
            a.allocEntry = i;
            a.size = t.size[i];  // the rounded size: rounding it again changes nothing
            a.streamIndex = streams.index(t.stream[i], false);
            a.stack = t.stack[i];
            a.oom = true;
            w.allocations.push_back(a);
            ++w.recordedOoms;
            w.ops.push_back(op);
            break;
        }
        case Action::SegmentAlloc: w.recordedSegments.emplace_back(t.size[i], t.addr[i]); break;
        case Action::SegmentMap: w.recordedMaps.push_back({t.stream[i], t.addr[i], i}); break;
        case Action::SegmentFree:
        case Action::SegmentUnmap: {
            if (i > 0 && isRelease(t, i - 1)) break;  // inside a burst already classified
            int32_t j = i;
            while (j < n && isRelease(t, j)) ++j;
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
            w.ops.push_back(op);
            break;
        }
        default: break;
        }
    }
    return openFrees;
}

// The first trace allocation at each open free's address (-1: none): a pass over the trace, made
// before the state before the trace is waited for (it is rewound on another thread meanwhile).
AddressMap<int32_t> firstAllocs(const TraceColumns& t, const std::vector<OpenFree>& openFrees) {
    AddressMap<int32_t> firstAlloc(openFrees.size());
    if (openFrees.empty()) return firstAlloc;
    for (const OpenFree& f : openFrees) firstAlloc[f.address] = -1;
    for (size_t i = 0; i < t.rows(); ++i)
        if (t.action[i] == Action::Alloc)
            if (int32_t* p = firstAlloc.find(t.addr[i]); p && *p < 0) *p = static_cast<int32_t>(i);
    return firstAlloc;
}

// The state before the first entry, as initial segments whose allocated blocks get the ids after
// the trace's; then the open frees: each frees the block of the state before the trace at its
// address, unless that block was freed already or a trace allocation took the address before it
// (firstAlloc: as if the state's blocks had been in the trace's address map from the start). A
// free of neither is dropped (unmatchedFrees).
void addStateBefore(Workload& w, const DeviceState& st, std::vector<OpenFree> openFrees,
                    const AddressMap<int32_t>& firstAlloc, const SimulatorSettings& settings, StreamTable& streams) {
    // the state's allocated blocks (address, id), met with the open frees by address: two sorted
    // lists walked together, where a table of every block cost a cache miss a block (75,000
    // open frees and more blocks on real x170)
    std::vector<std::pair<uint64_t, uint32_t>> before;
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
            a.streamIndex = streams.index(s.stream, true);
            a.stack = b.stack;
            w.allocations.push_back(a);
            if (!openFrees.empty()) before.emplace_back(b.address, ib.id);
            seg.blocks.push_back(ib);
        }
        streams.count(s.stream);
        w.initial.push_back(std::move(seg));
    }
    if (openFrees.empty()) return;

    // (segments and their blocks come in address order: sorted already, unless a state overlaps)
    if (!std::is_sorted(before.begin(), before.end())) std::sort(before.begin(), before.end());
    // the open frees by address, each address's in op order: the first of them frees the block
    // there if no trace allocation took the address before it; the others, and those at an
    // address no block has, are dropped
    std::sort(openFrees.begin(), openFrees.end(), [](const OpenFree& a, const OpenFree& b) {
        return a.address != b.address ? a.address < b.address : a.op < b.op;
    });
    std::vector<bool> drop(w.ops.size(), false);
    size_t dropped = 0;
    auto block = before.begin();
    for (size_t k = 0; k < openFrees.size(); ++k) {
        const OpenFree& f = openFrees[k];
        WorkloadOp& op = w.ops[f.op];
        while (block != before.end() && block->first < f.address) ++block;
        const bool first = k == 0 || openFrees[k - 1].address != f.address;
        const int32_t taken = *firstAlloc.find(f.address);
        if (first && block != before.end() && block->first == f.address && (taken < 0 || taken > op.position)) {
            op.id = block->second;
            w.allocations[block->second].freeEntry = op.position;
        } else {
            drop[f.op] = true;
            ++dropped;
        }
    }
    if (!dropped) return;
    w.unmatchedFrees += dropped;
    size_t out = 0;
    for (size_t i = 0; i < w.ops.size(); ++i)
        if (!drop[i]) w.ops[out++] = w.ops[i];
    w.ops.resize(out);
}

} // namespace

Workload buildWorkload(const Snapshot& snapshot, int device, const SimulatorSettings& settings) {
    // Only the state before the first entry is needed (no checkpoints on the way to it): rewound
    // on a second thread while this one reads the trace.
    if (std::thread::hardware_concurrency() < 2)
        return buildWorkload(snapshot, device, settings, [&] { return initialDeviceState(snapshot, device); });
    auto before = std::async(std::launch::async, [&snapshot, device] { return initialDeviceState(snapshot, device); });
    return buildWorkload(snapshot, device, settings, [&before] { return before.get(); });
}

Workload buildWorkload(const Snapshot& snapshot, int device, const SimulatorSettings& settings,
                       const std::function<DeviceState()>& stateBefore) {
    Workload w;
    w.device = device;
    const DeviceData* dd = snapshot.device(device);
    if (!dd) return w;
    w.traceEntries = static_cast<int64_t>(dd->trace.rows());
    if (w.traceEntries > std::numeric_limits<int32_t>::max())
        throw std::length_error("device " + std::to_string(device) + " has " + std::to_string(w.traceEntries) +
                                " trace entries: the simulator replays at most 2,147,483,647");
    StreamTable streams(w.streamValues);
    std::vector<OpenFree> openFrees = readTrace(w, *dd, streams);
    const AddressMap<int32_t> firstAlloc = firstAllocs(dd->trace, openFrees);
    addStateBefore(w, stateBefore(), std::move(openFrees), firstAlloc, settings, streams);
    w.streams = streams.counted();

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
