#pragma once
// A long series of 64-bit values that change little from one to the next (the live and reserved
// bytes after each trace entry), in about 4 bytes a value instead of 8: per block of 64 values
// the first in full and the others as 32-bit differences from it; a block whose differences do
// not fit (more than 2 GiB allocated or freed within 64 entries) keeps its 64 values whole.
// Exact: every value reads back as it was given.
#include <algorithm>
#include <cstddef>
#include <cstdint>
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
        if (const uint32_t w = m_wide[b]) [[unlikely]]
            return m_wideValues[(w - 1) * kBlock + i % kBlock];
        return m_base[b] + m_delta[i];
    }
    int64_t back() const { return (*this)[m_size - 1]; }
    // Calls f(i, value) for i in [from, to), in order; faster than indexing one by one.
    template <class F>
    void scan(size_t from, size_t to, F&& f) const {
        while (from < to) {
            const size_t b = from / kBlock, end = std::min(to, (b + 1) * kBlock);
            if (const uint32_t w = m_wide[b]) {
                const int64_t* v = m_wideValues.data() + (w - 1) * kBlock - b * kBlock;
                for (size_t i = from; i < end; ++i) f(i, v[i]);
            } else {
                const int64_t base = m_base[b];
                for (size_t i = from; i < end; ++i) f(i, base + m_delta[i]);
            }
            from = end;
        }
    }
    std::vector<int64_t> toVector() const;
    size_t memoryBytes() const;
    // Blocks kept whole (their differences did not fit in 32 bits).
    size_t wideBlocks() const { return m_wideValues.size() / kBlock; }

    // Fills a series of n values from the last to the first (below).
    class BackwardWriter;

private:
    void setBlock(size_t b, const int64_t* values, size_t count);  // values of block b, count <= kBlock
    size_t m_size = 0;
    std::vector<int64_t> m_base;         // per block: its first value
    std::vector<int32_t> m_delta;        // per value: it less its block's base (0 in wide blocks)
    std::vector<uint32_t> m_wide;        // per block: 0, or 1 + its index among the wide blocks
    std::vector<int64_t> m_wideValues;   // the wide blocks' values, kBlock each
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
