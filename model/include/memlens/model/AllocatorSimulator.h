#pragma once
// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, the native
// backend, torch 2.0-2.11) for one device: small (<= 1 MiB) and large pools kept per stream,
// 512-byte and roundup_power2_divisions rounding, 2 MiB / 20 MiB / rounded-up segments, best fit
// by (stream, size, address), splitting, max_split_size_mb and oversize blocks, merging on free,
// empty_cache, garbage_collection_threshold, the out-of-memory path (release oversize blocks,
// release every cached block, retry) and expandable segments (segment_map / segment_unmap in
// whole pages), on a device of a given capacity or per-process fraction.
//
// It takes the allocator's inputs (malloc, free, empty_cache) and writes the trace events the
// allocator would: alloc, free_completed, segment_alloc, segment_free, segment_map,
// segment_unmap, oom. Not modelled: private pools (CUDA graphs, MemPool), record_stream events
// (a free is its free_completed), free-memory callbacks, IPC.
#include "memlens/model/AddressSpace.h"
#include "memlens/model/SimEventSink.h"
#include "memlens/model/SimulatorSettings.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <set>
#include <vector>

namespace memlens::model {

constexpr uint32_t kBeforeFirstOp = 0xffffffffu;  // SimEvent::op / PeakState::op of the initial state

struct SimEvent {
    Action action = Action::Alloc;
    uint32_t op = 0;  // the input (see setPosition) that caused it
    uint64_t addr = 0;  // for oom: device_free
    uint64_t size = 0;  // alloc: the size asked; free_completed: requested size; oom: rounded size
    uint64_t stream = 0;
};

struct SimOom {
    uint32_t op = 0;
    uint64_t sizeAsked = 0;
    uint64_t roundedSize = 0;
    uint64_t reserved = 0;
    uint64_t allocated = 0;
    uint64_t largestFreeBlock = 0;
    uint64_t freeBytes = 0;  // reserved but not allocated
    uint64_t deviceFree = 0;
};

// What the device answers to cudaMalloc / cuMemCreate in one malloc, when a replay already knows
// (the recording ran out of memory there) rather than from a capacity.
enum class DeviceRefusal : uint8_t {
    None,        // the capacity decides
    UntilFlush,  // refuses until the malloc released as many segments / pages as the recording did
                 // before its retry succeeded (see malloc's releases), or every cached block
    Always,      // refuses every attempt: the malloc ends in oom
};

struct InitialBlock {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested = 0;
    bool allocated = false;
    uint32_t id = 0;  // allocation id, for allocated blocks
};

struct PeakState {
    uint32_t op = kBeforeFirstOp;
    uint64_t reserved = 0;
    uint64_t allocated = 0;
    uint64_t requested = 0;
    uint64_t largestFreeBlock = 0;
    uint64_t freeBytes = 0;
    double fragmentation() const {
        return freeBytes ? 1.0 - static_cast<double>(largestFreeBlock) / static_cast<double>(freeBytes) : 0.0;
    }
};

class AllocatorSimulator {
public:
    AllocatorSimulator(const SimulatorSettings& settings, AddressSpace& addresses);
    ~AllocatorSimulator();
    AllocatorSimulator(const AllocatorSimulator&) = delete;
    AllocatorSimulator& operator=(const AllocatorSimulator&) = delete;

    // Allocation ids are 0 .. count-1.
    void reserveIds(size_t count);

    // The state before the first input. A cudaMalloc'ed segment: its blocks cover it in address
    // order (adjacent free blocks are merged here).
    void addSegment(uint64_t address, uint64_t size, uint64_t stream, bool small, const std::vector<InitialBlock>& blocks);
    // An expandable reservation [base, base+size): `mapped` lists its mapped blocks in address
    // order (runs of pages); everything else is unmapped.
    void addReservation(uint64_t base, uint64_t size, uint64_t stream, bool small, const std::vector<InitialBlock>& mapped);
    // The page size of an expandable reservation of that pool.
    uint64_t pageSize(bool small) const;
    // The size of a new reservation (1.125 x capacity, or 1 TiB when the capacity is unknown).
    uint64_t reservationSize(bool small) const;

    // The input about to run: events get `op`; new reservations look for the recording's
    // segment_map at or after trace position `position`.
    void setPosition(uint32_t op, int64_t position) {
        op_ = op;
        position_ = position;
    }

    // Returns false when it ran out of memory (an oom event was written). deviceFree: what the
    // oom event reports when the capacity is unknown. releases: with UntilFlush, the number of
    // segment_free / segment_unmap after which the device accepts (0: only after the flush).
    bool malloc(uint32_t id, uint64_t size, uint64_t stream, DeviceRefusal refusal = DeviceRefusal::None,
                uint64_t deviceFree = 0, uint32_t releases = 0);
    // Returns false when `id` is not allocated.
    bool free(uint32_t id);
    void emptyCache();

    bool isAllocated(uint32_t id) const;
    uint64_t addressOf(uint32_t id) const;  // 0 when not allocated

    uint64_t reservedBytes() const { return reserved_; }
    uint64_t allocatedBytes() const { return allocated_; }  // block sizes
    uint64_t requestedBytes() const { return requested_; }  // sizes asked
    uint64_t largestFreeBlock() const;
    const PeakState& peak() const { return peak_; }        // when reserved was highest (first time)
    uint64_t peakAllocated() const { return peakAllocated_; }
    uint64_t peakRequested() const { return peakRequested_; }
    uint64_t segmentCount() const { return segments_; }
    uint64_t allocRetries() const { return retries_; }

    // false: events are not kept (what-if needs only the figures; millions of 32-byte events)
    void keepEvents(bool keep) { keepEvents_ = keep; }
    // each event goes to the sink as it is made, and is not kept (nullptr: kept, per keepEvents)
    void setEventSink(SimEventSink* sink) { sink_ = sink; }
    uint64_t eventCount() const { return eventCount_; }  // events made, kept or not
    const std::vector<SimEvent>& events() const { return events_; }
    std::vector<SimEvent> takeEvents() { return std::move(events_); }
    void reserveEvents(size_t n);  // millions of events, written once
    const std::vector<SimOom>& ooms() const { return ooms_; }

    // Every block, for tests and reports: segments (each cudaMalloc'ed segment or mapped run) in
    // address order.
    struct BlockView {
        uint64_t address, size, requested;
        bool allocated;
    };
    struct SegmentView {
        uint64_t address = 0, size = 0, stream = 0;
        bool small = false, expandable = false;
        std::vector<BlockView> blocks;
    };
    std::vector<SegmentView> segments() const;

private:
    struct FreeKey;
    struct Blk;
    struct FreeKey {
        uint64_t stream, size, ptr;
        int32_t idx;
        bool operator<(const FreeKey& o) const {
            if (stream != o.stream) return stream < o.stream;
            if (size != o.size) return size < o.size;
            return ptr < o.ptr;
        }
    };
    struct Blk {
        uint64_t ptr = 0, size = 0, requested = 0, stream = 0;
        int64_t gcBase = 0;
        int32_t prev = -1, next = -1, res = -1;
        uint32_t id = 0;
        bool small = false, allocated = false, mapped = true, inFree = false;
        std::set<FreeKey>::iterator freeIt{};  // where it is in its pool's free set, when inFree
    };
    struct AddrKey {
        uint64_t stream, ptr;
        int32_t idx;
        bool operator<(const AddrKey& o) const { return stream != o.stream ? stream < o.stream : ptr < o.ptr; }
    };
    struct Pool {
        bool small = false;
        std::set<FreeKey> blocks;
        std::set<AddrKey> unmapped;
        int64_t gcCalls = 0;
    };
    struct Reservation {
        uint64_t base = 0, size = 0, page = 0, stream = 0;
        bool small = false, alive = true;
    };

    int32_t newBlock();
    // A block of the initial state, linked after `prev`: allocated (counted, found by its id) when
    // ib says so; otherwise the caller files it as free or unmapped.
    int32_t initialBlock(uint64_t ptr, uint64_t sz, uint64_t stream, bool small, int32_t prev, const InitialBlock* ib);
    void dropBlock(int32_t b);
    Pool& poolOf(const Blk& b) { return b.small ? small_ : large_; }
    FreeKey key(int32_t b) const { return {blocks_[b].stream, blocks_[b].size, blocks_[b].ptr, b}; }
    AddrKey akey(int32_t b) const { return {blocks_[b].stream, blocks_[b].ptr, b}; }
    void insertFree(int32_t b);
    void eraseFree(int32_t b);
    void eraseFree(Pool& p, std::set<FreeKey>::iterator it);  // keeps the set's node for reuse
    void emitEvent(Action a, uint64_t addr, uint64_t size, uint64_t stream);
    bool deviceAllows(uint64_t bytes) const;

    int32_t getFreeBlock(Pool& p, uint64_t size, uint64_t stream);
    int32_t allocBlock(Pool& p, uint64_t size, uint64_t allocSize, uint64_t stream);
    int32_t tryAllocateExpandable(Pool& p, uint64_t size, uint64_t stream);
    int32_t findExpandableBlock(Pool& p, uint64_t stream, uint64_t size);
    bool mapBlock(int32_t u, uint64_t size);
    void unmapBlock(int32_t b);
    bool tryMerge(int32_t dst, int32_t src);
    bool releaseAvailable(Pool& p, uint64_t size, uint64_t stream);
    void releaseCached();
    void releaseBlocks(Pool& p);
    void releaseBlock(int32_t b);
    void garbageCollect();
    bool shouldSplit(const Blk& b, uint64_t size) const;
    void notePeaks();

    SimulatorSettings settings_;
    AddressSpace& addresses_;
    std::vector<Blk> blocks_;
    std::vector<int32_t> freeSlots_;
    std::vector<int32_t> byId_;
    std::vector<Reservation> reservations_;
    Pool small_, large_;
    std::vector<std::set<FreeKey>::node_type> spareNodes_;  // free-set nodes, reused: no allocation per split or merge
    std::vector<SimEvent> events_;
    bool keepEvents_ = true;
    SimEventSink* sink_ = nullptr;
    uint64_t eventCount_ = 0;
    std::vector<SimOom> ooms_;
    uint64_t reserved_ = 0, allocated_ = 0, requested_ = 0, segments_ = 0, retries_ = 0;
    uint64_t peakAllocated_ = 0, peakRequested_ = 0;
    PeakState peak_;
    uint32_t op_ = kBeforeFirstOp;
    int64_t position_ = 0;
    DeviceRefusal refusal_ = DeviceRefusal::None;
    bool flushed_ = false;
    uint32_t releasesNeeded_ = 0, released_ = 0;  // in the current malloc
};

} // namespace memlens::model
