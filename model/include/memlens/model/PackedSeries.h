#pragma once
// A long series of 64-bit values that change little from one to the next (the live and reserved
// bytes after each trace entry). Per block of 64 values: the first in full, and the differences
// of all 64 from it in the fewest bytes that hold them all (0 for a block that does not change,
// 1, 2, 4, or 8 where they span more than 2 GiB). The reserved bytes change only when a segment
// is mapped or returned: most of their blocks take no bytes but the block's own 16. Exact: every
// value reads back as it was given.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace memlens::model {

class PackedSeries {
public:
    static constexpr size_t kBlock = 64;

    PackedSeries() = default;
    explicit PackedSeries(std::span<const int64_t> values);

    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    int64_t operator[](size_t i) const {
        const size_t b = i / kBlock;
        return static_cast<int64_t>(static_cast<uint64_t>(m_base[b]) + static_cast<uint64_t>(delta(m_blocks[b], i % kBlock)));
    }
    int64_t back() const { return (*this)[m_size - 1]; }
    // Calls f(i, value) for i in [from, to), in order; faster than indexing one by one.
    template <class F>
    void scan(size_t from, size_t to, F&& f) const {
        while (from < to) {
            const size_t b = from / kBlock, first = b * kBlock, end = std::min(to, first + kBlock);
            const uint64_t block = m_blocks[b];
            const int64_t base = m_base[b];
            const uint8_t* d = differencesOf(block);
            switch (widthOf(block)) {
            case 0:
                for (size_t i = from; i < end; ++i) f(i, base);
                break;
            case 1: scanWidth<int8_t>(d, base, first, from, end, f); break;
            case 2: scanWidth<int16_t>(d, base, first, from, end, f); break;
            case 4: scanWidth<int32_t>(d, base, first, from, end, f); break;
            default: scanWidth<int64_t>(d, base, first, from, end, f); break;
            }
            from = end;
        }
    }
    std::vector<int64_t> toVector() const;
    size_t memoryBytes() const;
    // Blocks whose differences take 8 bytes each (they span more than 2 GiB).
    size_t wideBlocks() const;
    // Blocks whose values are all the same (no bytes of differences).
    size_t constantBlocks() const;

    // The least and the greatest value of block b (values [b * kBlock, min(size, (b + 1) * kBlock)))
    // and the first index of the greatest. A block of one value answers without reading any.
    struct BlockExtremes {
        int64_t min = 0;
        int64_t max = 0;
        size_t maxIndex = 0;
    };
    BlockExtremes blockExtremes(size_t b) const;

    // Fills a series of n values from the last to the first (below).
    class BackwardWriter;

private:
    void setBlock(size_t b, const int64_t* values, size_t count);  // values of block b, count <= kBlock
    // A block's descriptor (m_blocks): the offset of its differences in m_bytes << 8 | their width
    static uint64_t descriptor(size_t offset, size_t width) { return (static_cast<uint64_t>(offset) << 8) | width; }
    static unsigned widthOf(uint64_t block) { return static_cast<unsigned>(block & 0xff); }
    const uint8_t* differencesOf(uint64_t block) const { return m_bytes.data() + (block >> 8); }
    // the difference at j of a block whose descriptor is block
    int64_t delta(uint64_t block, size_t j) const {
        const uint8_t* d = differencesOf(block);
        switch (widthOf(block)) {
        case 0: return 0;
        case 1: return load<int8_t>(d, j);
        case 2: return load<int16_t>(d, j);
        case 4: return load<int32_t>(d, j);
        default: return load<int64_t>(d, j);
        }
    }
    template <class T>
    static int64_t load(const uint8_t* d, size_t j) {
        T x;
        std::memcpy(&x, d + j * sizeof(T), sizeof(T));
        return x;
    }
    template <class T, class F>
    static void scanWidth(const uint8_t* d, int64_t base, size_t first, size_t from, size_t end, F& f) {
        for (size_t i = from; i < end; ++i)
            // 8-byte differences wrap around (base + difference modulo 2^64 is the value)
            f(i, static_cast<int64_t>(static_cast<uint64_t>(base) + static_cast<uint64_t>(load<T>(d, i - first))));
    }
    size_t m_size = 0;
    std::vector<int64_t> m_base;    // per block: its first value
    std::vector<uint64_t> m_blocks;  // per block: its descriptor (above); the width in bytes, 0 to 8
    std::vector<uint8_t> m_bytes;    // the blocks' differences, in the order the blocks were given
};

// Fills a series of n values from the last to the first (as a trace is rewound): push(v)
// gives value n-1 first, then n-2, ..., then 0; take() once all n are given.
class PackedSeries::BackwardWriter {
public:
    explicit BackwardWriter(size_t n);
    void push(int64_t v) {
        m_buffer[--m_next % kBlock] = v;
        if (m_next % kBlock == 0) flush();
    }
    PackedSeries take();

private:
    void flush();
    PackedSeries m_out;
    size_t m_next;  // the index the next push gives
    int64_t m_buffer[kBlock] = {};
};

} // namespace memlens::model
