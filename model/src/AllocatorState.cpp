#include "memlens/model/AllocatorState.h"

#include "memlens/model/AddressMap.h"
#include "memlens/model/StateCheckpoint.h"

#include <algorithm>
#include <bit>
#include <future>
#include <optional>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

namespace memlens::model {

const char* stateBlockKindName(StateBlockKind k) {
    switch (k) {
    case StateBlockKind::Allocated: return "active_allocated";
    case StateBlockKind::PendingFree: return "active_pending_free";
    case StateBlockKind::Free: return "inactive";
    case StateBlockKind::BeforeRecording: return "allocated_before_recording";
    }
    return "?";
}

namespace {

constexpr uint64_t kMinBlock = 512;

struct Seg {
    uint64_t size = 0;
    uint64_t stream = 0;
    bool expandable = false;
    bool large = true;
    PoolId pool;  // from the snapshot's segments; a segment the trace rebuilds gets the default pool
};

// "no alloc" in 32-bit entry indices (the history refuses traces of 2^32 - 1 entries or more)
constexpr uint32_t kNoAlloc = ~uint32_t(0);
// A capturing rewind of at least this many entries pairs its frees on a second thread.
constexpr int64_t kPairsApartFrom = 4096;

// A live block while rewinding: 32 bytes, so that the working state's hash table of a
// 175,000-block state takes 25 MB instead of 34 (each query and the history's build hold one).
struct Live {
    uint64_t size = 0;
    uint64_t requested = 0;
    StackId stack = 0;
    uint32_t alloc = kNoAlloc;  // the entry that allocated it
    bool pending = false;     // freed by the program, not yet returned to the cache
    bool recreated = false;   // rebuilt from a free entry while rewinding
    bool estimated = false;
    // While a capturing rewind's pairs are made on another thread (StateHistory's constructor):
    // alloc holds what to resolve them by once they are there, a block of the snapshot (the
    // final state's) or the free entry that recreated it; stack and requested are then the
    // block's own, or the free's. A rewind that makes no pairs (BlockAllocs::Unnamed) leaves
    // them so: materialize() names no alloc for them.
    enum Pairing : uint8_t { Paired, ByFinalBlock, ByFree };
    Pairing pairing = Paired;
    int64_t allocIndex() const { return alloc == kNoAlloc ? -1 : static_cast<int64_t>(alloc); }
};
static_assert(sizeof(Live) == 32);

// For each free entry (free_completed, or an old trace's free) the alloc entry it frees
// (kNoAlloc: not recorded), in 32 bits; kept for the frees only, found by their rank among the
// entries (a bit per entry, a count per 64): on a 3.8-million entry trace with 1.4 million frees,
// 6.3 MB instead of 15.2 for one per entry.
class FreePairs {
public:
    static bool isFree(Action a) { return a == Action::FreeCompleted || a == Action::Free; }

    FreePairs() = default;
    explicit FreePairs(const TraceColumns& t) {
        const size_t n = t.rows();
        m_bits.assign((n + 63) / 64, 0);
        m_rank.assign(m_bits.size(), 0);
        size_t frees = 0;
        for (size_t i = 0; i < n; ++i)
            if (isFree(t.action[i])) {
                m_bits[i >> 6] |= uint64_t(1) << (i & 63);
                ++frees;
            }
        uint32_t before = 0;
        for (size_t w = 0; w < m_bits.size(); ++w) {
            m_rank[w] = before;
            before += static_cast<uint32_t>(std::popcount(m_bits[w]));
        }
        m_alloc.reserve(frees);
        m_alloc.assign(frees, kNoAlloc);
    }
    // i must be a free entry
    uint32_t& operator[](size_t i) { return m_alloc[rank(i)]; }
    uint32_t operator[](size_t i) const { return m_alloc[rank(i)]; }
    size_t memoryBytes() const { return m_bits.capacity() * 8 + m_rank.capacity() * 4 + m_alloc.capacity() * 4; }

private:
    size_t rank(size_t i) const {
        return m_rank[i >> 6] + static_cast<size_t>(std::popcount(m_bits[i >> 6] & ((uint64_t(1) << (i & 63)) - 1)));
    }
    std::vector<uint64_t> m_bits;
    std::vector<uint32_t> m_rank;
    std::vector<uint32_t> m_alloc;
};

struct LiveRec {
    uint64_t address;
    Live live;
};

// a block's flags in a checkpoint
enum : uint8_t { kPending = 1, kRecreated = 2, kEstimated = 4 };

struct Working {
    std::map<uint64_t, Seg> segments;
    // open addressing: saving a checkpoint walks one flat array instead of a node per block
    AddressMap<Live> blocks;
};

} // namespace

struct StateHistory::Impl {
    int device = 0;
    const DeviceData* data = nullptr;
    DeviceData empty;
    FreePairs pairedAlloc;  // for free entries: the alloc they free
    std::vector<StateCheckpoint> checkpoints;  // ascending by at
    size_t interval = 0;

    // paired: pairedAlloc is there (else the block a free recreates is resolved later: resolve())
    void undo(Working& w, int64_t i, bool paired = true) const;
    void resolve(Working& w) const;
    StateCheckpoint save(const Working& w, int64_t at) const;
    Working load(const StateCheckpoint& c) const;
    DeviceState materialize(const Working& w, int64_t at) const;
    DeviceState finalState(int64_t at) const;
    std::vector<int64_t> finalBlockAlloc;  // per block of the snapshot (blockAllocs)
};

void StateHistory::Impl::undo(Working& w, int64_t i, bool paired) const {
    const TraceColumns& t = data->trace;
    uint64_t addr = t.addr[i];
    uint64_t size = t.size[i];
    switch (t.action[i]) {
    case Action::Alloc: w.blocks.erase(addr); break;
    case Action::FreeRequested: {
        if (Live* b = w.blocks.find(addr)) b->pending = false;
        break;
    }
    case Action::FreeCompleted:
    case Action::Free: {
        Live b;
        b.requested = size;
        b.size = std::max<uint64_t>(kMinBlock, (size + kMinBlock - 1) / kMinBlock * kMinBlock);
        b.estimated = true;
        if (device == kHostDevice) {
            // the pinned host allocator never splits: a block is its whole segment, a power of two
            if (auto seg = w.segments.find(addr); seg != w.segments.end()) {
                b.size = seg->second.size;
                b.estimated = false;
            } else {
                b.size = std::bit_ceil(std::max<uint64_t>(size, 1));
            }
        }
        b.recreated = true;
        b.pending = t.action[i] == Action::FreeCompleted;
        if (paired) {
            b.alloc = pairedAlloc[static_cast<size_t>(i)];
            b.stack = b.alloc != kNoAlloc ? t.stack[b.alloc] : t.stack[i];
            if (b.alloc != kNoAlloc && t.size[b.alloc] != size) b.requested = t.size[b.alloc];
        } else {  // as if unpaired until resolve(): most such blocks are undone again before
            b.alloc = static_cast<uint32_t>(i);
            b.pairing = Live::ByFree;
            b.stack = t.stack[i];
        }
        w.blocks[addr] = b;
        break;
    }
    case Action::SegmentAlloc: w.segments.erase(addr); break;
    case Action::SegmentFree: {
        Seg s;
        s.size = size;
        s.stream = t.stream[i];
        s.large = size > (2u << 20);
        w.segments[addr] = s;
        break;
    }
    case Action::SegmentMap: {
        // the range was mapped by this entry: take it out of the segment that holds it
        auto it = w.segments.upper_bound(addr);
        if (it == w.segments.begin()) break;
        --it;
        uint64_t sa = it->first;
        Seg s = it->second;
        if (addr >= sa + s.size) break;
        uint64_t end = std::min(addr + size, sa + s.size);
        w.segments.erase(it);
        if (addr > sa) {
            Seg left = s;
            left.size = addr - sa;
            w.segments[sa] = left;
        }
        if (end < sa + s.size) {
            Seg right = s;
            right.size = sa + s.size - end;
            w.segments[end] = right;
        }
        break;
    }
    case Action::SegmentUnmap: {
        // the range was unmapped by this entry: put it back, joined to its neighbours
        Seg s;
        s.size = size;
        s.stream = t.stream[i];
        s.expandable = true;
        uint64_t start = addr;
        auto next = w.segments.find(addr + size);
        if (next != w.segments.end() && next->second.expandable && next->second.stream == s.stream) {
            s.size += next->second.size;
            w.segments.erase(next);
        }
        auto it = w.segments.lower_bound(addr);
        if (it != w.segments.begin()) {
            auto prev = std::prev(it);
            if (prev->first + prev->second.size == addr && prev->second.expandable && prev->second.stream == s.stream) {
                start = prev->first;
                s.size += prev->second.size;
                w.segments.erase(prev);
            }
        }
        w.segments[start] = s;
        break;
    }
    default: break;
    }
}

// What undo() and the final state left for the pairs, now that they are there: what undo() and
// the final state would have made with them.
void StateHistory::Impl::resolve(Working& w) const {
    const TraceColumns& t = data->trace;
    w.blocks.forEach([&](uint64_t, Live& b) {
        if (b.pairing == Live::ByFree) {
            const auto i = static_cast<size_t>(b.alloc);
            b.alloc = pairedAlloc[i];
            b.stack = b.alloc != kNoAlloc ? t.stack[b.alloc] : t.stack[i];
            if (b.alloc != kNoAlloc && t.size[b.alloc] != t.size[i]) b.requested = t.size[b.alloc];
        } else if (b.pairing == Live::ByFinalBlock) {
            const size_t blk = b.alloc;
            b.alloc = kNoAlloc;
            if (const int64_t a = finalBlockAlloc[blk]; a >= 0) {
                b.alloc = static_cast<uint32_t>(a);
                if (!b.stack) b.stack = t.stack[static_cast<size_t>(a)];
            }
        }
        b.pairing = Live::Paired;
    });
}

StateCheckpoint StateHistory::Impl::save(const Working& w, int64_t at) const {
    std::vector<StateSegment> segments;
    segments.reserve(w.segments.size());
    for (const auto& [a, s] : w.segments) segments.push_back({a, s.size, s.stream, s.expandable, s.large, s.pool, {}});
    std::vector<CheckpointBlock> blocks;
    blocks.reserve(w.blocks.size());
    w.blocks.forEach([&blocks](uint64_t a, const Live& b) {
        blocks.push_back({a, b.size, b.requested, b.stack, b.allocIndex(),
                          static_cast<uint8_t>((b.pending ? kPending : 0) | (b.recreated ? kRecreated : 0) |
                                               (b.estimated ? kEstimated : 0))});
    });
    return StateCheckpoint(at, segments, std::move(blocks));
}

Working StateHistory::Impl::load(const StateCheckpoint& c) const {
    Working w;
    w.blocks = AddressMap<Live>(c.blockCount() + std::min<size_t>(interval, 4096));
    c.decode(
        [&w](const StateSegment& s) {
            w.segments.emplace_hint(w.segments.end(), s.address,
                                    Seg{s.totalSize, s.stream, s.isExpandable, s.isLarge, s.pool});
        },
        [&w](const CheckpointBlock& b) {
            Live& l = w.blocks[b.address];
            l.size = b.size;
            l.requested = b.requested;
            l.stack = b.stack;
            l.alloc = b.allocIndex < 0 ? kNoAlloc : static_cast<uint32_t>(b.allocIndex);
            l.pending = (b.flags & kPending) != 0;
            l.recreated = (b.flags & kRecreated) != 0;
            l.estimated = (b.flags & kEstimated) != 0;
        });
    return w;
}

DeviceState StateHistory::Impl::materialize(const Working& w, int64_t at) const {
    DeviceState st;
    st.device = device;
    st.at = at;
    std::vector<LiveRec> live;
    live.reserve(w.blocks.size());
    w.blocks.forEach([&live](uint64_t a, const Live& b) { live.push_back({a, b}); });
    std::sort(live.begin(), live.end(), [](const LiveRec& x, const LiveRec& y) { return x.address < y.address; });
    size_t bi = 0;
    st.segments.reserve(w.segments.size());
    for (const auto& [sa, s] : w.segments) {
        StateSegment seg;
        seg.address = sa;
        seg.totalSize = s.size;
        seg.stream = s.stream;
        seg.isExpandable = s.expandable;
        seg.isLarge = s.large;
        seg.pool = s.pool;
        uint64_t end = sa + s.size;
        uint64_t cursor = sa;
        auto addFree = [&](uint64_t from, uint64_t to) {
            if (to <= from) return;
            StateBlock f;
            f.address = from;
            f.size = to - from;
            f.kind = StateBlockKind::Free;
            st.freeBytes += f.size;
            st.largestFreeBlock = std::max(st.largestFreeBlock, f.size);
            seg.blocks.push_back(f);
        };
        while (bi < live.size() && live[bi].address < sa) ++bi;  // blocks outside any segment are dropped
        while (bi < live.size() && live[bi].address < end) {
            const LiveRec& r = live[bi++];
            if (r.address < cursor) continue;  // overlaps an earlier block: inconsistent trace
            addFree(cursor, r.address);
            uint64_t limit = end;
            if (bi < live.size() && live[bi].address < limit) limit = live[bi].address;
            StateBlock b;
            b.address = r.address;
            b.size = std::min(r.live.size, limit - r.address);
            b.requestedSize = r.live.requested;
            b.stack = r.live.stack;
            const bool named = r.live.pairing == Live::Paired;  // else no alloc looked up (Unnamed)
            b.allocIndex = named ? r.live.allocIndex() : -1;
            b.sizeEstimated = r.live.estimated;
            if (r.live.pending)
                b.kind = StateBlockKind::PendingFree;
            else if (r.live.recreated && (!named || r.live.alloc == kNoAlloc))
                b.kind = StateBlockKind::BeforeRecording;
            else
                b.kind = StateBlockKind::Allocated;
            st.allocatedBytes += b.size;
            st.requestedBytes += b.requestedSize;
            if (b.kind == StateBlockKind::PendingFree) st.pendingFreeBytes += b.size;
            cursor = b.address + b.size;
            seg.blocks.push_back(b);
        }
        addFree(cursor, end);
        st.reservedBytes += s.size;
        st.segments.push_back(std::move(seg));
    }
    return st;
}

namespace {

// The alloc entry of each of data's blocks (-1: none): for a live one, the last alloc at its
// address not freed since (open: those allocs by address, as lastAllocs gives them). Eight bytes
// a block, kept by the history for its final state instead of the address table.
std::vector<int64_t> blockAllocs(const DeviceData& data, const AddressMap<int64_t>& open) {
    std::vector<int64_t> out(data.blocks.size(), -1);
    for (size_t i = 0; i < data.blocks.size(); ++i)
        if (data.blocks[i].state != BlockState::Inactive)
            if (const int64_t* at = open.find(data.blocks[i].address)) out[i] = *at;
    return out;
}

// The snapshot's own blocks exactly as the file has them; blockAlloc: the alloc entry of each
// block (blockAllocs).
DeviceState snapshotState(const DeviceData& data, int device, const std::vector<int64_t>& blockAlloc, int64_t at) {
    DeviceState st;
    st.device = device;
    st.at = at;
    st.segments.reserve(data.segments.size());
    for (const Segment& s : data.segments) {
        StateSegment seg;
        seg.address = s.address;
        seg.totalSize = s.totalSize;
        seg.stream = s.stream;
        seg.isExpandable = s.isExpandable;
        seg.isLarge = s.isLarge;
        seg.pool = s.pool();
        seg.blocks.reserve(s.blockCount);  // grown by doubling, they held up to twice what they need
        for (uint32_t i = s.firstBlock; i < s.firstBlock + s.blockCount; ++i) {
            const Block& blk = data.blocks[i];
            StateBlock b;
            b.address = blk.address;
            b.size = blk.size;
            b.requestedSize = blk.requestedSize;
            b.stack = blk.stack;
            if (blk.state == BlockState::Inactive) {
                b.kind = StateBlockKind::Free;
                st.freeBytes += b.size;
                st.largestFreeBlock = std::max(st.largestFreeBlock, b.size);
            } else {
                b.kind = blk.state == BlockState::ActivePendingFree ? StateBlockKind::PendingFree
                                                                     : StateBlockKind::Allocated;
                if (const int64_t a = blockAlloc[i]; a >= 0) {
                    b.allocIndex = a;
                    if (!b.stack) b.stack = data.trace.stack[static_cast<size_t>(a)];
                }
                st.allocatedBytes += b.size;
                st.requestedBytes += b.requestedSize;
                if (b.kind == StateBlockKind::PendingFree) st.pendingFreeBytes += b.size;
            }
            seg.blocks.push_back(b);
        }
        st.reservedBytes += s.totalSize;
        st.segments.push_back(std::move(seg));
    }
    return st;
}

// The alloc entry of each block alive after the trace: the last alloc at its address not freed since.
AddressMap<int64_t> lastAllocs(const TraceColumns& t) {
    AddressMap<int64_t> last;
    for (size_t i = 0; i < t.rows(); ++i) {
        if (t.action[i] == Action::Alloc)
            last[t.addr[i]] = static_cast<int64_t>(i);
        else if (t.action[i] == Action::FreeCompleted || t.action[i] == Action::Free)
            last.erase(t.addr[i]);
    }
    return last;
}

} // namespace

StateHistory::StateHistory(const Snapshot& snapshot, int device, size_t interval)
    : StateHistory(snapshot, device, interval, {}, nullptr) {}

StateHistory::StateHistory(const Snapshot& snapshot, int device, size_t interval, const std::vector<int64_t>& capture,
                           const StateTaker* take, BlockAllocs allocs)
    : d_(std::make_unique<Impl>()) {
    const bool captured = take != nullptr;
    d_->device = device;
    d_->data = snapshot.device(device);
    if (!d_->data) {
        d_->empty.device = device;
        d_->data = &d_->empty;
    }
    const DeviceData& dd = *d_->data;
    const TraceColumns& t = dd.trace;
    auto n = static_cast<int64_t>(t.rows());

    // pair each free with the alloc it frees, walking forwards; what stays open at the end is
    // the alloc entry of each block alive after the trace (lastAllocs)
    if (static_cast<uint64_t>(n) >= kNoAlloc)
        throw std::length_error("a trace of " + std::to_string(n) +
                                " entries is more than the state history can index (2^32 - 2)");
    auto pairAll = [this, &dd, &t, n] {
        d_->pairedAlloc = FreePairs(t);
        AddressMap<int64_t> open;
        for (int64_t i = 0; i < n; ++i) {
            switch (t.action[i]) {
            case Action::Alloc: open[t.addr[i]] = i; break;
            case Action::FreeCompleted:
            case Action::Free: {
                if (const int64_t* at = open.find(t.addr[i])) {
                    d_->pairedAlloc[static_cast<size_t>(i)] = static_cast<uint32_t>(*at);
                    open.erase(t.addr[i]);
                }
                break;
            }
            default: break;
            }
        }
        // each live block of the final state with its alloc
        d_->finalBlockAlloc = blockAllocs(dd, open);
    };
    // A capturing rewind (deviceStatesAfter: the states before the trace, at its peaks) pairs on
    // a second thread while this one rewinds without the pairs: the blocks they would name are
    // resolved in each state captured once they are there (Impl::resolve), only those alive
    // there. A history that saves checkpoints pairs first: every checkpoint names its blocks'
    // allocs. A capturing rewind whose blocks name no alloc (BlockAllocs::Unnamed) makes no
    // pairs at all: its blocks keep what they would be resolved by, and the final state
    // (finalBlockAlloc) names none.
    const bool named = !captured || allocs == BlockAllocs::Named;
    std::future<void> pairs;
    if (!named)
        d_->finalBlockAlloc.assign(dd.blocks.size(), -1);
    else if (captured && n >= kPairsApartFrom && std::thread::hardware_concurrency() >= 2)
        pairs = std::async(std::launch::async, pairAll);
    else
        pairAll();
    // (the pairing thread writes only d_'s pairs; its future, std::async's, waits for it when
    // this constructor throws)
    const bool paired = named && !pairs.valid();

    // the final state, from the snapshot itself, each live block with its alloc (or, pairs not
    // there yet, the block to find it by)
    Working w;
    size_t active = 0;
    for (const Block& blk : dd.blocks) active += blk.state != BlockState::Inactive;
    // the blocks of the final state at most 3/4 full: the largest single allocation of the
    // history's building (rewinding changes the count by little)
    w.blocks = AddressMap<Live>::compact(active + 1024);
    for (const Segment& s : dd.segments) {
        Seg g;
        g.size = s.totalSize;
        g.stream = s.stream;
        g.expandable = s.isExpandable;
        g.large = s.isLarge;
        g.pool = s.pool();
        w.segments[s.address] = g;
        for (uint32_t b = s.firstBlock; b < s.firstBlock + s.blockCount; ++b) {
            const Block& blk = dd.blocks[b];
            if (blk.state == BlockState::Inactive) continue;
            Live l;
            l.size = blk.size;
            l.requested = blk.requestedSize;
            l.stack = blk.stack;
            l.pending = blk.state == BlockState::ActivePendingFree;
            if (!paired) {
                l.alloc = b;
                l.pairing = Live::ByFinalBlock;
            } else if (const int64_t a = d_->finalBlockAlloc[b]; a >= 0) {
                l.alloc = static_cast<uint32_t>(a);
                if (!l.stack) l.stack = t.stack[static_cast<size_t>(a)];
            }
            w.blocks[blk.address] = l;
        }
    }

    // Checkpoint spacing: about 254,000 blocks and segments in checkpoints (8 MiB of them at 33
    // bytes each, as they were kept before they were coded; coded, about 13), at least 256
    // entries apart. A query loads
    // the nearest checkpoint (its whole state) and undoes on average half an interval, so the
    // spacing may grow up to twice the state's size (or 65,536 entries) before undoing costs more
    // than loading: a 215,000-block state then keeps 9 checkpoints instead of 59. A small state
    // (a thousand blocks) gets checkpoints about 8,192 entries apart on a 600 MB trace: a query
    // undoes some 4,000 entries, well under a millisecond, where 48 MiB of checkpoints cost 65 MB
    // for 0.25 ms.
    if (interval == 0) {
        const double stateSize = static_cast<double>(w.blocks.size() + w.segments.size()) + 16.0;
        const double budget = 8.0 * 1024 * 1024 / 33;
        const double count = std::max(1.0, budget / stateSize);
        const double widest = static_cast<double>(std::bit_ceil(static_cast<uint64_t>(std::max(65536.0, 2 * stateSize))));
        interval = static_cast<size_t>(std::clamp(static_cast<double>(n) / count, 256.0, widest));
        size_t p = 256;
        while (p < interval) p <<= 1;
        interval = p;
    }
    d_->interval = interval;

    // rewind once from the end, saving the state at every interval; where states are captured
    // instead (deviceStatesAfter), materialising those asked for and saving none: that history
    // answers no query
    std::vector<StateCheckpoint> cps;
    if (!captured) cps.push_back(d_->save(w, n - 1));
    auto wanted = capture.begin();
    // The states captured, latest first. Where the pairs are there, each is materialised as it is
    // reached. Otherwise (the pairs made on another thread, or none made: BlockAllocs::Unnamed)
    // each keeps a copy of the working state, resolved (named) and materialised after the rewind,
    // so that the rewind goes on without them (a few MB a state for the 175,000 blocks of real
    // x170's). The state before the first entry is w itself at the end.
    struct Stop {
        int64_t at = 0;
        Working copy;
        std::optional<DeviceState> state;
    };
    std::vector<Stop> stops;
    for (int64_t i = n - 1; i >= 0; --i) {
        d_->undo(w, i, paired);
        int64_t at = i - 1;  // state right after entry i-1
        if (captured) {
            for (; wanted != capture.end() && *wanted == at; ++wanted) {
                if (at == -1) stops.push_back({at, Working(), std::nullopt});
                else if (paired) stops.push_back({at, Working(), d_->materialize(w, at)});
                else stops.push_back({at, w, std::nullopt});
            }
        } else if (at == -1 || ((at + 1) % static_cast<int64_t>(interval)) == 0) {
            cps.push_back(d_->save(w, at));
        }
    }
    if (named && !paired) {  // the pairs (or what making them threw); also where nothing was
                             // captured: the final state's queries need them
        pairs.get();
        d_->resolve(w);
    }
    // handed over earliest first: the state before the first entry as soon as the rewind ends,
    // before the others are materialised; each dropped once handed over
    for (auto s = stops.rbegin(); s != stops.rend(); ++s) {
        if (s->state) {
            (*take)(s->at, std::move(*s->state));
        } else if (s->at == -1) {
            (*take)(-1, d_->materialize(w, -1));  // resolved above, when named
        } else {
            if (named) d_->resolve(s->copy);
            (*take)(s->at, d_->materialize(s->copy, s->at));
        }
        s->copy = Working();
        s->state.reset();
    }
    std::reverse(cps.begin(), cps.end());
    d_->checkpoints = std::move(cps);
}

StateHistory::~StateHistory() = default;
StateHistory::StateHistory(StateHistory&&) noexcept = default;
StateHistory& StateHistory::operator=(StateHistory&&) noexcept = default;

int StateHistory::device() const { return d_->device; }
int64_t StateHistory::entries() const { return static_cast<int64_t>(d_->data->trace.rows()); }
size_t StateHistory::checkpointCount() const { return d_->checkpoints.size(); }

size_t StateHistory::memoryBytes() const {
    size_t n = d_->pairedAlloc.memoryBytes() + d_->finalBlockAlloc.capacity() * sizeof(int64_t);
    for (const auto& c : d_->checkpoints) n += c.memoryBytes();
    return n;
}

DeviceState StateHistory::Impl::finalState(int64_t at) const { return snapshotState(*data, device, finalBlockAlloc, at); }

DeviceState finalDeviceState(const Snapshot& snapshot, int device) {
    const DeviceData* d = snapshot.device(device);
    if (!d) {
        DeviceState st;
        st.device = device;
        return st;
    }
    return snapshotState(*d, device, blockAllocs(*d, lastAllocs(d->trace)), static_cast<int64_t>(d->trace.rows()) - 1);
}

DeviceState initialDeviceState(const Snapshot& snapshot, int device) {
    // Unnamed changes nothing before the first entry: a block alive there that a free of the
    // trace recreated was allocated before the trace (an alloc of the trace at its address would
    // have been undone after it, taking it out), and a block of the snapshot alive there had no
    // alloc at its address in the trace at all
    return std::move(deviceStatesAfter(snapshot, device, {-1}, BlockAllocs::Unnamed).front());
}

void takeDeviceStatesAfter(const Snapshot& snapshot, int device, const std::vector<int64_t>& entries, BlockAllocs allocs,
                           const std::function<void(size_t, DeviceState)>& take) {
    const DeviceData* d = snapshot.device(device);
    const auto n = static_cast<int64_t>(d ? d->trace.rows() : 0);
    auto clamped = [n](int64_t at) { return std::clamp<int64_t>(at, -1, n - 1 < -1 ? -1 : n - 1); };
    // the rewind's stops: every entry asked for but the last (the snapshot's own state), latest first
    std::vector<int64_t> stops;
    for (int64_t at : entries)
        if (clamped(at) != n - 1) stops.push_back(clamped(at));
    std::sort(stops.begin(), stops.end(), std::greater<>());
    stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
    // each state to every place in entries that asks for it (a copy to all but the last)
    const StateHistory::StateTaker hand = [&](int64_t at, DeviceState&& st) {
        std::vector<size_t> places;
        for (size_t k = 0; k < entries.size(); ++k)
            if (clamped(entries[k]) == at) places.push_back(k);
        for (size_t p = 0; p + 1 < places.size(); ++p) take(places[p], st);
        if (!places.empty()) take(places.back(), std::move(st));
    };
    // the interval is not used: a capturing history keeps no checkpoint
    const StateHistory h(snapshot, device, static_cast<size_t>(n) + 1, stops, &hand, allocs);
    if (std::any_of(entries.begin(), entries.end(), [&](int64_t at) { return clamped(at) == n - 1; }))
        hand(clamped(n - 1), h.d_->finalState(clamped(n - 1)));
}

std::vector<DeviceState> deviceStatesAfter(const Snapshot& snapshot, int device, const std::vector<int64_t>& entries,
                                           BlockAllocs allocs) {
    std::vector<DeviceState> out(entries.size());
    takeDeviceStatesAfter(snapshot, device, entries, allocs, [&out](size_t k, DeviceState st) { out[k] = std::move(st); });
    return out;
}

DeviceState StateHistory::stateAfter(int64_t at) const {
    int64_t n = entries();
    at = std::clamp<int64_t>(at, -1, n - 1 < -1 ? -1 : n - 1);
    if (at == n - 1) return d_->finalState(at);
    // the first checkpoint at or after `at`, then undo back to it
    auto it = std::lower_bound(d_->checkpoints.begin(), d_->checkpoints.end(), at,
                               [](const StateCheckpoint& c, int64_t v) { return c.at() < v; });
    if (it == d_->checkpoints.end()) --it;
    Working w = d_->load(*it);
    for (int64_t i = it->at(); i > at; --i) d_->undo(w, i);
    return d_->materialize(w, at);
}

} // namespace memlens::model
