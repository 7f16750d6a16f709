#include "memlens/model/AllocatorSimulator.h"

#include <algorithm>
#include <cmath>

namespace memlens::model {

namespace {
constexpr uint64_t kMinBlockSize = 512;
constexpr uint64_t kSmallSize = 1ull << 20;
constexpr uint64_t kSmallBuffer = 2ull << 20;
constexpr uint64_t kUnknownCapacityReservation = 1ull << 40;
} // namespace

AllocatorSimulator::AllocatorSimulator(const SimulatorSettings& settings, AddressSpace& addresses)
    : settings_(settings), addresses_(addresses) {
    small_.small = true;
    large_.small = false;
}

AllocatorSimulator::~AllocatorSimulator() = default;

void AllocatorSimulator::reserveIds(size_t count) {
    if (byId_.size() >= count) return;
    if (byId_.capacity() < count) byId_.reserve(count);
    byId_.resize(count, -1);
}

void AllocatorSimulator::reserveEvents(size_t n) {
    events_.reserve(n);
}

int32_t AllocatorSimulator::newBlock() {
    if (!freeSlots_.empty()) {
        int32_t b = freeSlots_.back();
        freeSlots_.pop_back();
        blocks_[b] = Blk{};
        return b;
    }
    blocks_.emplace_back();
    return static_cast<int32_t>(blocks_.size() - 1);
}

void AllocatorSimulator::dropBlock(int32_t b) { freeSlots_.push_back(b); }

void AllocatorSimulator::insertFree(int32_t b) {
    Blk& k = blocks_[b];
    Pool& p = poolOf(k);
    k.gcBase = p.gcCalls;
    k.inFree = true;
    if (spareNodes_.empty()) {
        k.freeIt = p.blocks.insert(key(b)).first;
        return;
    }
    auto node = std::move(spareNodes_.back());
    spareNodes_.pop_back();
    node.value() = key(b);
    k.freeIt = p.blocks.insert(std::move(node)).position;
}

void AllocatorSimulator::eraseFree(Pool& p, std::set<FreeKey>::iterator it) {
    blocks_[it->idx].inFree = false;
    spareNodes_.push_back(p.blocks.extract(it));
}

void AllocatorSimulator::eraseFree(int32_t b) {
    Blk& k = blocks_[b];
    if (k.inFree) eraseFree(poolOf(k), k.freeIt);
}

void AllocatorSimulator::emitEvent(Action a, uint64_t addr, uint64_t size, uint64_t stream) {
    ++eventCount_;
    if (sink_)
        sink_->onEvent(SimEvent{a, op_, addr, size, stream});
    else if (keepEvents_)
        events_.push_back(SimEvent{a, op_, addr, size, stream});
}

uint64_t AllocatorSimulator::pageSize(bool small) const { return small ? kSmallBuffer : settings_.largeSegmentSize; }

uint64_t AllocatorSimulator::reservationSize(bool small) const {
    uint64_t page = pageSize(small);
    uint64_t want = settings_.capacity ? settings_.capacity + settings_.capacity / 8 : kUnknownCapacityReservation;
    return (want + page - 1) / page * page;
}

bool AllocatorSimulator::deviceAllows(uint64_t bytes) const {
    if (refusal_ == DeviceRefusal::Always) return false;
    if (refusal_ == DeviceRefusal::UntilFlush && !flushed_ && (releasesNeeded_ == 0 || released_ < releasesNeeded_))
        return false;
    if (settings_.capacity && reserved_ + bytes > settings_.capacity) return false;
    return true;
}

bool AllocatorSimulator::shouldSplit(const Blk& b, uint64_t size) const {
    uint64_t rem = b.size - size;
    if (b.small || settings_.expandableSegments) return rem >= kMinBlockSize;
    return size < settings_.maxSplitSize && rem > kSmallSize;
}

// ---- the initial state ----

void AllocatorSimulator::addSegment(uint64_t address, uint64_t size, uint64_t stream, bool small,
                                    const std::vector<InitialBlock>& blocks) {
    int32_t prev = -1;
    uint64_t cursor = address;
    auto link = [&](uint64_t ptr, uint64_t sz, const InitialBlock* ib) {
        if (!ib && prev >= 0 && !blocks_[prev].allocated) {  // merge adjacent free space
            eraseFree(prev);
            blocks_[prev].size += sz;
            insertFree(prev);
            return;
        }
        const int32_t b = initialBlock(ptr, sz, stream, small, prev, ib);
        if (!blocks_[b].allocated) insertFree(b);
        prev = b;
    };
    for (const InitialBlock& ib : blocks) {
        if (ib.address < cursor || ib.address >= address + size) continue;
        if (ib.address > cursor) link(cursor, ib.address - cursor, nullptr);
        uint64_t sz = std::min(ib.size, address + size - ib.address);
        link(ib.address, sz, ib.allocated ? &ib : nullptr);
        cursor = ib.address + sz;
    }
    if (cursor < address + size) link(cursor, address + size - cursor, nullptr);
    reserved_ += size;
    ++segments_;
    addresses_.reserveExisting(address, size);
    notePeaks();
}

int32_t AllocatorSimulator::initialBlock(uint64_t ptr, uint64_t sz, uint64_t stream, bool small, int32_t prev,
                                         const InitialBlock* ib) {
    const int32_t b = newBlock();
    Blk& k = blocks_[b];
    k.ptr = ptr;
    k.size = sz;
    k.stream = stream;
    k.small = small;
    k.prev = prev;
    if (prev >= 0) blocks_[prev].next = b;
    if (ib) k.requested = ib->requested;
    if (ib && ib->allocated) {
        k.allocated = true;
        k.id = ib->id;
        reserveIds(ib->id + 1);
        byId_[ib->id] = b;
        allocated_ += sz;
        requested_ += ib->requested;
    }
    return b;
}

void AllocatorSimulator::addReservation(uint64_t base, uint64_t size, uint64_t stream, bool small,
                                        const std::vector<InitialBlock>& mapped) {
    auto r = static_cast<int32_t>(reservations_.size());
    reservations_.push_back(Reservation{base, size, pageSize(small), stream, small, true});
    int32_t prev = -1;
    uint64_t cursor = base;
    uint64_t highest = base + pageSize(small);
    auto link = [&](uint64_t ptr, uint64_t sz, bool isMapped, const InitialBlock* ib) {
        if (prev >= 0 && !blocks_[prev].allocated && blocks_[prev].mapped == isMapped && !(ib && ib->allocated)) {
            Pool& p = poolOf(blocks_[prev]);
            if (isMapped) {
                eraseFree(prev);
                blocks_[prev].size += sz;
                insertFree(prev);
            } else {
                p.unmapped.erase(akey(prev));
                blocks_[prev].size += sz;
                p.unmapped.insert(akey(prev));
            }
            return;
        }
        const int32_t b = initialBlock(ptr, sz, stream, small, prev, ib);
        blocks_[b].res = r;
        blocks_[b].mapped = isMapped;
        if (!blocks_[b].allocated) {
            if (isMapped) insertFree(b);
            else poolOf(blocks_[b]).unmapped.insert(akey(b));
        }
        prev = b;
    };
    for (const InitialBlock& ib : mapped) {
        if (ib.address < cursor || ib.address >= base + size) continue;
        if (ib.address > cursor) link(cursor, ib.address - cursor, false, nullptr);
        uint64_t sz = std::min(ib.size, base + size - ib.address);
        link(ib.address, sz, true, &ib);
        reserved_ += sz;
        cursor = ib.address + sz;
        highest = std::max(highest, cursor);
    }
    if (cursor < base + size) link(cursor, base + size - cursor, false, nullptr);
    addresses_.reserveExisting(base, highest - base);
    notePeaks();
}

// ---- malloc ----

int32_t AllocatorSimulator::getFreeBlock(Pool& p, uint64_t size, uint64_t stream) {
    if (settings_.gcActive()) ++p.gcCalls;
    auto it = p.blocks.lower_bound(FreeKey{stream, size, 0, 0});
    if (it == p.blocks.end() || it->stream != stream) return -1;
    if (blocks_[it->idx].res >= 0) {
        if (settings_.expandableSegments) {
            auto xsize = [&](int32_t b) {
                const Blk& k = blocks_[b];
                return k.size + (k.next >= 0 && !blocks_[k.next].mapped ? blocks_[k.next].size : 0);
            };
            auto next = std::next(it);
            while (blocks_[it->idx].res >= 0 && next != p.blocks.end() && next->stream == stream &&
                   xsize(next->idx) < xsize(it->idx))
                it = next++;
        } else {
            do {
                ++it;
            } while (it != p.blocks.end() && blocks_[it->idx].res >= 0 && it->stream == stream);
            if (it == p.blocks.end() || it->stream != stream) return -1;
        }
    }
    const uint64_t m = settings_.maxSplitSize;
    const uint64_t bs = it->size;
    if (size < m && bs >= m) return -1;
    if (size >= m && bs >= size + settings_.maxNonSplitRounding) return -1;
    int32_t b = it->idx;
    eraseFree(p, it);
    return b;
}

int32_t AllocatorSimulator::allocBlock(Pool& p, uint64_t size, uint64_t allocSize, uint64_t stream) {
    if (settings_.fractionSet() && reserved_ + allocSize > settings_.allowedMaximum()) return -1;
    if (settings_.expandableSegments) return tryAllocateExpandable(p, size, stream);
    if (!deviceAllows(allocSize)) return -1;
    uint64_t addr = addresses_.takeSegment(allocSize);
    int32_t b = newBlock();
    Blk& k = blocks_[b];
    k.ptr = addr;
    k.size = allocSize;
    k.stream = stream;
    k.small = p.small;
    reserved_ += allocSize;
    ++segments_;
    emitEvent(Action::SegmentAlloc, addr, allocSize, stream);
    return b;
}

int32_t AllocatorSimulator::findExpandableBlock(Pool& p, uint64_t stream, uint64_t size) {
    auto allocatable = [&](int32_t b) { return b >= 0 && !blocks_[b].allocated; };
    for (auto it = p.unmapped.lower_bound(AddrKey{stream, 0, 0}); it != p.unmapped.end() && it->stream == stream; ++it) {
        int32_t c = it->idx;
        if (allocatable(blocks_[c].prev)) c = blocks_[c].prev;
        uint64_t bytes = 0;
        for (int32_t b = c; bytes < size && allocatable(b); b = blocks_[b].next) bytes += blocks_[b].size;
        if (bytes >= size) return c;
    }
    uint64_t page = pageSize(p.small);
    uint64_t rsize = reservationSize(p.small);
    uint64_t base = addresses_.takeReservation(stream, rsize, page, position_);
    auto r = static_cast<int32_t>(reservations_.size());
    reservations_.push_back(Reservation{base, rsize, page, stream, p.small, true});
    int32_t b = newBlock();
    Blk& k = blocks_[b];
    k.ptr = base;
    k.size = rsize;
    k.stream = stream;
    k.small = p.small;
    k.res = r;
    k.mapped = false;
    p.unmapped.insert(akey(b));
    return b;
}

bool AllocatorSimulator::tryMerge(int32_t dst, int32_t src) {
    if (src < 0) return false;
    Blk& s = blocks_[src];
    Blk& d = blocks_[dst];
    if (s.allocated || s.mapped != d.mapped) return false;
    Pool& p = poolOf(s);
    if (s.mapped) eraseFree(src); else p.unmapped.erase(akey(src));
    if (d.prev == src) {
        d.ptr = s.ptr;
        d.prev = s.prev;
        if (d.prev >= 0) blocks_[d.prev].next = dst;
    } else {
        d.next = s.next;
        if (d.next >= 0) blocks_[d.next].prev = dst;
    }
    d.size += s.size;
    dropBlock(src);
    return true;
}

bool AllocatorSimulator::mapBlock(int32_t u, uint64_t size) {
    Blk& k = blocks_[u];
    const Reservation& r = reservations_[static_cast<size_t>(k.res)];
    uint64_t pages = (size + r.page - 1) / r.page;
    uint64_t bytes = pages * r.page;
    if (bytes > k.size) bytes = k.size;
    if (!deviceAllows(bytes)) return false;
    Pool& p = poolOf(k);
    p.unmapped.erase(akey(u));
    k.mapped = true;
    uint64_t ptr = k.ptr;
    if (bytes < k.size) {
        int32_t rem = newBlock();
        Blk& kk = blocks_[u];  // blocks_ may have moved
        Blk& rb = blocks_[rem];
        rb.ptr = kk.ptr + bytes;
        rb.size = kk.size - bytes;
        rb.stream = kk.stream;
        rb.small = kk.small;
        rb.res = kk.res;
        rb.mapped = false;
        rb.prev = u;
        rb.next = kk.next;
        if (kk.next >= 0) blocks_[kk.next].prev = rem;
        kk.next = rem;
        kk.size = bytes;
        p.unmapped.insert(akey(rem));
    }
    tryMerge(u, blocks_[u].prev);
    tryMerge(u, blocks_[u].next);
    insertFree(u);
    reserved_ += bytes;
    addresses_.extend(reservations_[static_cast<size_t>(blocks_[u].res)].base, ptr + bytes);
    emitEvent(Action::SegmentMap, ptr, bytes, blocks_[u].stream);
    return true;
}

int32_t AllocatorSimulator::tryAllocateExpandable(Pool& p, uint64_t size, uint64_t stream) {
    int32_t c = findExpandableBlock(p, stream, size);
    if (!blocks_[c].mapped && !mapBlock(c, std::min(blocks_[c].size, size))) return -1;
    while (blocks_[c].size < size) {
        int32_t n = blocks_[c].next;
        if (!mapBlock(n, std::min(size - blocks_[c].size, blocks_[n].size))) return -1;
        c = n;
    }
    eraseFree(c);
    return c;
}

void AllocatorSimulator::releaseBlock(int32_t b) {
    Blk& k = blocks_[b];
    emitEvent(Action::SegmentFree, k.ptr, k.size, k.stream);
    ++released_;
    reserved_ -= k.size;
    --segments_;
    addresses_.release(k.ptr);
    eraseFree(b);
    dropBlock(b);
}

void AllocatorSimulator::unmapBlock(int32_t b) {
    Blk* k = &blocks_[b];
    const Reservation r = reservations_[static_cast<size_t>(k->res)];
    uint64_t first = (k->ptr - r.base + r.page - 1) / r.page;
    uint64_t last = (k->ptr + k->size - r.base) / r.page;
    if (first >= last) return;
    uint64_t uptr = r.base + first * r.page;
    uint64_t usize = (last - first) * r.page;
    Pool& p = poolOf(*k);
    eraseFree(b);
    uint64_t before = uptr - k->ptr;
    uint64_t after = k->size - before - usize;
    if (before > 0) {
        int32_t nb = newBlock();
        k = &blocks_[b];
        Blk& x = blocks_[nb];
        x.ptr = k->ptr;
        x.size = before;
        x.stream = k->stream;
        x.small = k->small;
        x.res = k->res;
        x.prev = k->prev;
        x.next = b;
        if (k->prev >= 0) blocks_[k->prev].next = nb;
        k->prev = nb;
        insertFree(nb);
    }
    if (after > 0) {
        int32_t na = newBlock();
        k = &blocks_[b];
        Blk& x = blocks_[na];
        x.ptr = uptr + usize;
        x.size = after;
        x.stream = k->stream;
        x.small = k->small;
        x.res = k->res;
        x.prev = b;
        x.next = k->next;
        if (k->next >= 0) blocks_[k->next].prev = na;
        k->next = na;
        insertFree(na);
    }
    k = &blocks_[b];
    k->ptr = uptr;
    k->size = usize;
    k->mapped = false;
    k->requested = 0;
    tryMerge(b, blocks_[b].prev);
    tryMerge(b, blocks_[b].next);
    p.unmapped.insert(akey(b));
    reserved_ -= usize;
    emitEvent(Action::SegmentUnmap, uptr, usize, blocks_[b].stream);
    ++released_;
}

void AllocatorSimulator::releaseBlocks(Pool& p) {
    std::vector<int32_t> toUnmap;
    for (auto it = p.blocks.begin(); it != p.blocks.end();) {
        int32_t b = it->idx;
        ++it;
        const Blk& k = blocks_[b];
        if (k.res >= 0)
            toUnmap.push_back(b);
        else if (k.prev < 0 && k.next < 0)
            releaseBlock(b);
    }
    for (int32_t b : toUnmap) {
        unmapBlock(b);
        const Blk& k = blocks_[b];
        if (!k.mapped && k.prev < 0 && k.next < 0) {  // the whole reservation is unmapped: it goes
            Reservation& r = reservations_[static_cast<size_t>(k.res)];
            r.alive = false;
            addresses_.release(r.base);
            p.unmapped.erase(akey(b));
            dropBlock(b);
        }
    }
}

void AllocatorSimulator::releaseCached() {
    releaseBlocks(large_);
    releaseBlocks(small_);
}

bool AllocatorSimulator::releaseAvailable(Pool& p, uint64_t size, uint64_t stream) {
    const uint64_t m = settings_.maxSplitSize;
    if (m == SimulatorSettings::kUnlimited) return false;
    auto releasable = [&](int32_t b) {
        const Blk& k = blocks_[b];
        return k.res < 0 && k.prev < 0 && k.next < 0;
    };
    uint64_t want = std::max(size, m);
    auto it = p.blocks.lower_bound(FreeKey{stream, want, 0, 0});
    if (it == p.blocks.end() || it->stream != stream) {
        if (it == p.blocks.begin()) return false;
        uint64_t released = 0;
        --it;
        while (released < want && it->size >= m && it->stream == stream) {
            auto cur = it;
            int32_t b = cur->idx;
            bool atBegin = it == p.blocks.begin();
            if (!atBegin) --it;
            if (releasable(b)) {
                released += blocks_[b].size;
                releaseBlock(b);
            }
            if (atBegin) break;
        }
        return released >= want;
    }
    if (!releasable(it->idx)) return false;
    releaseBlock(it->idx);
    return true;
}

void AllocatorSimulator::garbageCollect() {
    const auto thr = static_cast<uint64_t>(settings_.garbageCollectionThreshold *
                                           static_cast<double>(settings_.allowedMaximum()));
    if (reserved_ <= thr) return;
    const uint64_t target = reserved_ - thr;
    auto candidate = [&](int32_t b) {
        const Blk& k = blocks_[b];
        return k.prev < 0 && k.next < 0 && k.res < 0;
    };
    uint64_t totalAge = 0;
    int64_t count = 0;
    for (const FreeKey& f : large_.blocks)
        if (candidate(f.idx)) {
            totalAge += static_cast<uint64_t>(large_.gcCalls - blocks_[f.idx].gcBase);
            ++count;
        }
    if (count == 0) return;
    uint64_t reclaimed = 0;
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double threshold = static_cast<double>(totalAge) / static_cast<double>(count);
        freed = false;
        for (auto it = large_.blocks.begin(); it != large_.blocks.end();) {
            int32_t b = it->idx;
            ++it;
            if (!candidate(b)) continue;
            auto age = static_cast<uint64_t>(large_.gcCalls - blocks_[b].gcBase);
            if (static_cast<double>(age) >= threshold) {
                freed = true;
                reclaimed += blocks_[b].size;
                totalAge -= age;
                --count;
                releaseBlock(b);
            }
        }
    }
}

bool AllocatorSimulator::malloc(uint32_t id, uint64_t orig, uint64_t stream, DeviceRefusal refusal, uint64_t deviceFree,
                                uint32_t releases) {
    refusal_ = refusal;
    flushed_ = false;
    releasesNeeded_ = releases;
    released_ = 0;
    const uint64_t size = settings_.roundSize(orig);
    Pool& p = size <= kSmallSize ? small_ : large_;
    const uint64_t allocSize = settings_.allocationSize(size);
    int32_t b = getFreeBlock(p, size, stream);
    if (b < 0) {
        if (settings_.gcActive()) garbageCollect();
        b = allocBlock(p, size, allocSize, stream);
        if (b < 0 && releaseAvailable(p, size, stream)) b = allocBlock(p, size, allocSize, stream);
        if (b < 0) {
            releaseCached();
            flushed_ = true;
            ++retries_;
            b = allocBlock(p, size, allocSize, stream);
        }
        if (b < 0) {
            SimOom o;
            o.op = op_;
            o.sizeAsked = orig;
            o.roundedSize = size;
            o.reserved = reserved_;
            o.allocated = allocated_;
            o.freeBytes = reserved_ - allocated_;
            o.largestFreeBlock = largestFreeBlock();
            o.deviceFree = settings_.capacity ? (settings_.capacity > reserved_ ? settings_.capacity - reserved_ : 0)
                                              : deviceFree;
            ooms_.push_back(o);
            emitEvent(Action::Oom, o.deviceFree, size, stream);
            refusal_ = DeviceRefusal::None;
            notePeaks();
            return false;
        }
    }
    refusal_ = DeviceRefusal::None;
    if (shouldSplit(blocks_[b], size)) {
        int32_t n = newBlock();
        Blk& rem = blocks_[b];
        Blk& nb = blocks_[n];
        nb.ptr = rem.ptr;
        nb.size = size;
        nb.stream = stream;
        nb.small = rem.small;
        nb.res = rem.res;
        nb.prev = rem.prev;
        if (nb.prev >= 0) blocks_[nb.prev].next = n;
        nb.next = b;
        rem.prev = n;
        rem.ptr += size;
        rem.size -= size;
        insertFree(b);
        b = n;
    }
    Blk& k = blocks_[b];
    k.allocated = true;
    k.requested = orig;
    k.id = id;
    if (byId_.size() <= id) byId_.resize(static_cast<size_t>(id) + 1, -1);
    byId_[id] = b;
    allocated_ += k.size;
    requested_ += orig;
    emitEvent(Action::Alloc, k.ptr, orig, stream);
    notePeaks();
    return true;
}

void AllocatorSimulator::notePeaks() {
    if (allocated_ > peakAllocated_) peakAllocated_ = allocated_;
    if (requested_ > peakRequested_) peakRequested_ = requested_;
    if (reserved_ > peak_.reserved || (reserved_ == peak_.reserved && requested_ > peak_.requested && reserved_ != 0)) {
        peak_.op = op_;
        peak_.reserved = reserved_;
        peak_.allocated = allocated_;
        peak_.requested = requested_;
        peak_.freeBytes = reserved_ - allocated_;
        peak_.largestFreeBlock = largestFreeBlock();
    }
}

// ---- free, empty_cache ----

bool AllocatorSimulator::free(uint32_t id) {
    if (id >= byId_.size() || byId_[id] < 0) return false;
    int32_t b = byId_[id];
    byId_[id] = -1;
    Blk& k = blocks_[b];
    emitEvent(Action::FreeCompleted, k.ptr, k.requested, k.stream);
    k.allocated = false;
    allocated_ -= k.size;
    requested_ -= k.requested;
    tryMerge(b, blocks_[b].prev);
    tryMerge(b, blocks_[b].next);
    insertFree(b);
    return true;
}

void AllocatorSimulator::emptyCache() { releaseCached(); }

bool AllocatorSimulator::isAllocated(uint32_t id) const { return id < byId_.size() && byId_[id] >= 0; }

uint64_t AllocatorSimulator::addressOf(uint32_t id) const { return isAllocated(id) ? blocks_[byId_[id]].ptr : 0; }

uint64_t AllocatorSimulator::largestFreeBlock() const {
    uint64_t best = 0;
    for (const Pool* p : {&small_, &large_}) {
        auto it = p->blocks.end();
        while (it != p->blocks.begin()) {
            --it;  // the largest block of this stream
            best = std::max(best, it->size);
            it = p->blocks.lower_bound(FreeKey{it->stream, 0, 0, 0});
        }
    }
    return best;
}

std::vector<AllocatorSimulator::SegmentView> AllocatorSimulator::segments() const {
    std::vector<SegmentView> out;
    std::vector<int32_t> heads;
    std::vector<bool> dead(blocks_.size(), false);
    for (int32_t f : freeSlots_) dead[static_cast<size_t>(f)] = true;
    for (size_t i = 0; i < blocks_.size(); ++i) {
        const Blk& k = blocks_[i];
        if (dead[i] || !k.mapped) continue;
        if (k.prev >= 0 && blocks_[k.prev].mapped) continue;
        heads.push_back(static_cast<int32_t>(i));
    }
    for (int32_t h : heads) {
        SegmentView s;
        s.address = blocks_[h].ptr;
        s.stream = blocks_[h].stream;
        s.small = blocks_[h].small;
        s.expandable = blocks_[h].res >= 0;
        for (int32_t b = h; b >= 0 && blocks_[b].mapped; b = blocks_[b].next) {
            s.blocks.push_back({blocks_[b].ptr, blocks_[b].size, blocks_[b].requested, blocks_[b].allocated});
            s.size += blocks_[b].size;
        }
        out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const SegmentView& a, const SegmentView& b) { return a.address < b.address; });
    return out;
}

} // namespace memlens::model
