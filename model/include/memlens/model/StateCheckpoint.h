#pragma once
// One checkpoint of a state history (StateHistory): the segments and live blocks of a device's
// allocator state right after one trace entry, coded in variable-length integers. A checkpoint
// of a 600 MB trace holds some 175,000 blocks and 40,000 segments, and a history keeps nine: as
// plain records (32 bytes and a flag byte a block, 48 a segment) they took 57 MB; coded, a block
// takes about 13 bytes, a segment about 8.
//
// Blocks and segments are kept in address order, each address as its distance from the one
// before; a block's size in units of 512 bytes where it is a multiple of them (the allocator
// rounds to 512), its requested size as its distance from its size, its alloc entry as its
// distance from the checkpoint's entry. Arithmetic wraps, so any values come back as they were,
// whatever their order; only entry indices have a range: -1 to 2^40 - 1.
#include "memlens/model/AllocatorState.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace memlens::model {

struct CheckpointBlock {
    uint64_t address = 0;
    uint64_t size = 0;
    uint64_t requested = 0;
    StackId stack = 0;
    int64_t allocIndex = -1;  // -1: none
    uint8_t flags = 0;        // the history's own (its low 3 bits are kept)
    bool operator==(const CheckpointBlock&) const = default;
};

class StateCheckpoint {
public:
    static constexpr int64_t kMaxAllocIndex = (int64_t(1) << 40) - 1;

    StateCheckpoint() = default;
    // segments in ascending address order (as a std::map walks them; their blocks are not looked
    // at: the live ones come apart, in any order, and are sorted here). Throws
    // std::invalid_argument for at or an alloc entry outside [-1, kMaxAllocIndex], or flags above 7.
    StateCheckpoint(int64_t at, std::span<const StateSegment> segments, std::vector<CheckpointBlock> blocks);

    int64_t at() const { return m_at; }
    size_t segmentCount() const { return m_segments; }
    size_t blockCount() const { return m_blocks; }
    // Calls onSegment(const StateSegment&) for each segment (without blocks), then onBlock(const
    // CheckpointBlock&) for each block, each in ascending address order.
    template <class OnSegment, class OnBlock>
    void decode(OnSegment&& onSegment, OnBlock&& onBlock) const;
    size_t memoryBytes() const { return m_bytes.capacity() + sizeof(*this); }

private:
    static uint64_t readVarint(const uint8_t*& p) {
        uint64_t v = 0;
        for (int shift = 0;; shift += 7) {
            const uint8_t b = *p++;
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
    }
    static int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

    int64_t m_at = -1;
    uint32_t m_segments = 0;
    uint32_t m_blocks = 0;
    std::vector<uint8_t> m_bytes;
};

template <class OnSegment, class OnBlock>
void StateCheckpoint::decode(OnSegment&& onSegment, OnBlock&& onBlock) const {
    const uint8_t* p = m_bytes.data();
    uint64_t address = 0;
    for (uint32_t i = 0; i < m_segments; ++i) {
        StateSegment s;
        address += readVarint(p);
        s.address = address;
        s.totalSize = readVarint(p);
        s.stream = readVarint(p);
        const uint8_t flags = *p++;
        s.isExpandable = (flags & 1) != 0;
        s.isLarge = (flags & 2) != 0;
        if (flags & 4) {
            s.pool.owner = unzigzag(readVarint(p));
            s.pool.id = unzigzag(readVarint(p));
        }
        onSegment(static_cast<const StateSegment&>(s));
    }
    address = 0;
    for (uint32_t i = 0; i < m_blocks; ++i) {
        CheckpointBlock b;
        address += readVarint(p);
        b.address = address;
        const uint64_t head = readVarint(p);
        b.flags = static_cast<uint8_t>(head & 7);
        const uint64_t allocCode = head >> 4;
        b.allocIndex = allocCode == 0 ? -1 : m_at - unzigzag(allocCode - 1);
        const uint64_t size = readVarint(p);
        b.size = (head & 8) ? size << 9 : size;
        b.requested = b.size - static_cast<uint64_t>(unzigzag(readVarint(p)));
        b.stack = static_cast<StackId>(readVarint(p));
        onBlock(static_cast<const CheckpointBlock&>(b));
    }
}

} // namespace memlens::model
