#include "memlens/model/StateCheckpoint.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace memlens::model {

namespace {

void writeVarint(std::vector<uint8_t>& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<uint8_t>(v | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<uint8_t>(v));
}

uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }

void checkEntry(int64_t index, const char* what) {
    if (index < -1 || index > StateCheckpoint::kMaxAllocIndex)
        throw std::invalid_argument(std::string("a state checkpoint's ") + what + " " + std::to_string(index) +
                                    " is outside -1 to 2^40 - 1");
}

} // namespace

StateCheckpoint::StateCheckpoint(int64_t at, std::span<const StateSegment> segments,
                                 std::vector<CheckpointBlock> blocks)
    : m_at(at), m_segments(static_cast<uint32_t>(segments.size())), m_blocks(static_cast<uint32_t>(blocks.size())) {
    checkEntry(at, "entry");
    if (segments.size() > UINT32_MAX || blocks.size() > UINT32_MAX)
        throw std::invalid_argument("a state checkpoint holds at most 2^32 - 1 segments and as many blocks");
    std::sort(blocks.begin(), blocks.end(),
              [](const CheckpointBlock& x, const CheckpointBlock& y) { return x.address < y.address; });
    m_bytes.reserve(segments.size() * 8 + blocks.size() * 14);
    uint64_t previous = 0;
    for (const StateSegment& s : segments) {
        writeVarint(m_bytes, s.address - previous);
        previous = s.address;
        writeVarint(m_bytes, s.totalSize);
        writeVarint(m_bytes, s.stream);
        const bool pooled = !s.pool.isDefault();
        m_bytes.push_back(static_cast<uint8_t>((s.isExpandable ? 1 : 0) | (s.isLarge ? 2 : 0) | (pooled ? 4 : 0)));
        if (pooled) {
            writeVarint(m_bytes, zigzag(s.pool.owner));
            writeVarint(m_bytes, zigzag(s.pool.id));
        }
    }
    previous = 0;
    for (const CheckpointBlock& b : blocks) {
        checkEntry(b.allocIndex, "alloc entry");
        if (b.flags > 7) throw std::invalid_argument("a state checkpoint's block flags are 3 bits");
        writeVarint(m_bytes, b.address - previous);
        previous = b.address;
        const bool units = b.size % 512 == 0;
        const uint64_t allocCode = b.allocIndex < 0 ? 0 : 1 + zigzag(at - b.allocIndex);
        writeVarint(m_bytes, allocCode << 4 | (units ? 8u : 0u) | b.flags);
        writeVarint(m_bytes, units ? b.size >> 9 : b.size);
        writeVarint(m_bytes, zigzag(static_cast<int64_t>(b.size - b.requested)));
        writeVarint(m_bytes, b.stack);
    }
    m_bytes.shrink_to_fit();
}

} // namespace memlens::model
