#pragma once
// The device's virtual addresses for a simulated allocator. cudaMalloc's addresses are arbitrary,
// and they matter only through tie-breaks (equal-size free blocks: the lowest address wins), so a
// replay takes the recording's own: a new segment of a size the recording cudaMalloc'ed gets the
// address recorded for it (in trace order, when that range is not in use), a new expandable
// reservation the address of the recording's next segment_map of that stream. Anything else gets
// an invented address above every recorded one.
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace memlens::model {

class AddressSpace {
public:
    // The recording's cudaMalloc'ed segments, in trace order.
    void addRecordedSegment(uint64_t size, uint64_t address);
    // The recording's segment_map entries, in trace order (position: the trace index).
    void addRecordedMap(uint64_t stream, uint64_t address, int64_t position);
    // A range in use from the start (the segments before the trace's first entry).
    void reserveExisting(uint64_t address, uint64_t size);

    // A cudaMalloc of `size` bytes: its address, marked in use.
    uint64_t takeSegment(uint64_t size);
    // A new expandable reservation of `size` bytes for `stream`, made at or after trace position
    // `position`: its base, marked in use for its first `pageSize` bytes (see extend()).
    uint64_t takeReservation(uint64_t stream, uint64_t size, uint64_t pageSize, int64_t position);
    // The mapped part of the reservation at `base` now reaches `end`.
    void extend(uint64_t base, uint64_t end);
    // cudaFree, or the end of a reservation.
    void release(uint64_t address);

    uint64_t recordedTaken() const { return recordedTaken_; }
    uint64_t invented() const { return invented_; }

private:
    bool overlaps(uint64_t address, uint64_t size) const;
    uint64_t invent(uint64_t size);

    struct Recorded {
        std::vector<uint64_t> addresses;
        std::vector<bool> used;
        size_t cursor = 0;
    };
    struct RecordedMap {
        uint64_t address;
        int64_t position;
    };
    std::unordered_map<uint64_t, Recorded> bySize_;
    std::unordered_map<uint64_t, std::vector<RecordedMap>> maps_;  // by stream
    std::map<uint64_t, uint64_t> live_;  // start -> end
    uint64_t highest_ = 0;               // end of the highest address seen
    uint64_t next_ = 0;                  // next invented address; 0 until the first
    uint64_t recordedTaken_ = 0;
    uint64_t invented_ = 0;
};

} // namespace memlens::model
