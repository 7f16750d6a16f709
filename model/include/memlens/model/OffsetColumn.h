#pragma once
// A trace column of 64-bit values that move little from one row to the next (an entry's time,
// its address): per block of 64 rows one 64-bit base, and for each row its distance from the
// base in as few signed bytes as the block needs (1 to 4), counted in units of 2^Shift
// (addresses in 512 bytes, the allocator's smallest block; times in microseconds). Most blocks
// of a trace's times span less than 65 ms (2 bytes a row); a block's addresses often span less
// than 8 GiB (3 bytes a row), though on a large GPU most may span more and keep 4. On a torch 2.11
// trace: 2.7 bytes a row for times and 3.5 for addresses, block records included, where a fixed
// 4 bytes took 4.1.
//
// Rows are only appended. The newest block fills at 4 bytes a row; once it has its 64 rows it is
// packed in place at the width its distances need (its base moved so they start at the width's
// smallest). A row whose distance does not fit 32 bits (or is no multiple of the unit: an oom
// entry's device_free in the address column, a missing time of -1 among real ones) is kept aside
// with its value, in row order, and marked by the smallest distance of its block's width;
// reading it costs a binary search over those rows. A block's base is its first row's value,
// unless only that row fits when another does not: then the base moves to the newer row and the
// first goes aside, so one odd first row does not push the rest of its block aside.
#include "memlens/model/ColumnValues.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <utility>
#include <vector>

namespace memlens::model {

template <class T, unsigned Shift>
class OffsetColumn {
    static_assert(sizeof(T) == 8, "a column of 64-bit values");

public:
    using value_type = T;
    static constexpr size_t kBlock = 64;

    OffsetColumn() = default;
    OffsetColumn(std::initializer_list<T> values) {
        for (T v : values) push_back(v);
    }
    OffsetColumn(const OffsetColumn&) = default;
    OffsetColumn& operator=(const OffsetColumn&) = default;
    // A column moved from is empty (its counts go with its rows) and takes new rows.
    OffsetColumn(OffsetColumn&& o) noexcept { swap(o); }
    OffsetColumn& operator=(OffsetColumn&& o) noexcept {
        OffsetColumn gone(std::move(o));
        swap(gone);
        return *this;
    }
    void swap(OffsetColumn& o) noexcept {
        m_bytes.swap(o.m_bytes);
        m_blocks.swap(o.m_blocks);
        m_asideRows.swap(o.m_asideRows);
        m_asideValues.swap(o.m_asideValues);
        std::swap(m_rows, o.m_rows);
        std::swap(m_fitting, o.m_fitting);
        std::swap(m_fitRow, o.m_fitRow);
        std::swap(m_blockAside, o.m_blockAside);
    }
    template <class Range>
    static OffsetColumn of(const Range& values) {
        OffsetColumn c;
        for (T v : values) c.push_back(v);
        return c;
    }

    size_t size() const { return m_rows; }
    bool empty() const { return m_rows == 0; }

    T operator[](size_t i) const {
        const Block& b = m_blocks[i / kBlock];
        return rowValue(m_bytes.data() + b.start(), b.base, i, b.width());
    }
    T front() const { return (*this)[0]; }
    T back() const { return (*this)[size() - 1]; }
    // Calls f(i, value) for i in [from, to), in order: a block at a time, each at its own width,
    // faster than indexing row by row.
    template <class F>
    void scan(size_t from, size_t to, F&& f) const {
        while (from < to) {
            const size_t b = from / kBlock, end = std::min(to, (b + 1) * kBlock);
            switch (m_blocks[b].width()) {
            case 1: scanBlock<1>(b, from, end, f); break;
            case 2: scanBlock<2>(b, from, end, f); break;
            case 3: scanBlock<3>(b, from, end, f); break;
            default: scanBlock<4>(b, from, end, f); break;
            }
            from = end;
        }
    }

    void push_back(T value) {
        const size_t row = m_rows;
        int32_t d;
        if (row % kBlock != 0 && fits(static_cast<uint64_t>(value), m_blocks.back().base, d)) [[likely]] {
            setDistance(row, d);
            ++m_fitting;
        } else {
            pushOther(row, value);
        }
        if (++m_rows % kBlock == 0) [[unlikely]]
            pack();
    }

    // Reserves n rows (at 4 bytes a row: address space, of which the packed blocks touch only
    // what they take).
    void reserve(size_t n) {
        m_bytes.reserve(n * 4 + kPadding);
        m_blocks.reserve(n / kBlock + 1);
    }
    // The rows' packed bytes: for prefaulting them.
    const std::vector<uint8_t>& bytes() const { return m_bytes; }
    size_t asideCount() const { return m_asideRows.size(); }
    size_t memoryBytes() const {
        return m_bytes.size() + m_blocks.capacity() * sizeof(Block) + m_asideRows.capacity() * sizeof(uint64_t) +
               m_asideValues.capacity() * sizeof(T);
    }
    // How many blocks are packed at each width (index 0 for 1 byte a row, ...; the newest block,
    // still at 4 bytes, counts as 4 until it is full).
    std::array<size_t, 4> blocksByWidth() const {
        std::array<size_t, 4> n{};
        for (const Block& b : m_blocks) ++n[b.width() - 1];
        return n;
    }
    bool operator==(const OffsetColumn& o) const { return sameValues(*this, o); }

    // A random-access iterator over the values (for binary searches).
    class const_iterator {
    public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = T;
        using difference_type = ptrdiff_t;
        using reference = T;
        using pointer = void;

        const_iterator() = default;
        const_iterator(const OffsetColumn* c, size_t i) : m_c(c), m_i(i) {}
        T operator*() const { return (*m_c)[m_i]; }
        T operator[](difference_type n) const { return (*m_c)[static_cast<size_t>(static_cast<difference_type>(m_i) + n)]; }
        const_iterator& operator++() { ++m_i; return *this; }
        const_iterator operator++(int) { auto t = *this; ++m_i; return t; }
        const_iterator& operator--() { --m_i; return *this; }
        const_iterator operator--(int) { auto t = *this; --m_i; return t; }
        const_iterator& operator+=(difference_type n) { m_i = static_cast<size_t>(static_cast<difference_type>(m_i) + n); return *this; }
        const_iterator& operator-=(difference_type n) { return *this += -n; }
        friend const_iterator operator+(const_iterator a, difference_type n) { return a += n; }
        friend const_iterator operator+(difference_type n, const_iterator a) { return a += n; }
        friend const_iterator operator-(const_iterator a, difference_type n) { return a -= n; }
        friend difference_type operator-(const const_iterator& a, const const_iterator& b) {
            return static_cast<difference_type>(a.m_i) - static_cast<difference_type>(b.m_i);
        }
        friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.m_i == b.m_i; }
        friend auto operator<=>(const const_iterator& a, const const_iterator& b) { return a.m_i <=> b.m_i; }

    private:
        const OffsetColumn* m_c = nullptr;
        size_t m_i = 0;
    };
    const_iterator begin() const { return {this, 0}; }
    const_iterator end() const { return {this, size()}; }

private:
    // a block's base (as bits), and where its rows start in m_bytes with their width in bytes
    struct Block {
        uint64_t base;
        uint64_t startAndWidth;  // start << 2 | (width - 1)
        size_t start() const { return static_cast<size_t>(startAndWidth >> 2); }
        unsigned width() const { return static_cast<unsigned>(startAndWidth & 3) + 1; }
    };
    // the bytes always end with this many past the last row: every read loads 4 bytes
    static constexpr size_t kPadding = 4;
    // the distance that marks a row kept aside, at each width: the width's smallest
    static constexpr int32_t smallest(unsigned width) { return static_cast<int32_t>(-(int64_t(1) << (8 * width - 1))); }

    static bool fits(uint64_t v, uint64_t base, int32_t& d) {
        const int64_t diff = static_cast<int64_t>(v - base);
        if (diff & ((int64_t(1) << Shift) - 1)) return false;
        const int64_t q = diff >> Shift;
        if (q <= int64_t(INT32_MIN) || q > int64_t(INT32_MAX)) return false;
        d = static_cast<int32_t>(q);
        return true;
    }
    // The newest block's rows sit at 4 bytes each from its start (room for all 64 is made when it
    // starts).
    int32_t distance(size_t k) const {
        int32_t d;
        std::memcpy(&d, m_bytes.data() + m_blocks.back().start() + k * sizeof d, sizeof d);
        return d;
    }
    void setDistance(size_t row, int32_t d) {
        std::memcpy(m_bytes.data() + m_blocks.back().start() + (row % kBlock) * sizeof d, &d, sizeof d);
    }
    // A row that starts a block or does not fit its block's base.
    [[gnu::noinline]] void pushOther(size_t row, T value) {
        const uint64_t v = static_cast<uint64_t>(value);
        if (row % kBlock == 0) {
            const size_t start = m_bytes.empty() ? 0 : m_bytes.size() - kPadding;
            m_bytes.resize(start + kBlock * 4 + kPadding);
            m_blocks.push_back({v, static_cast<uint64_t>(start) << 2 | 3});
            setDistance(row, 0);
            m_fitting = 1;
            m_fitRow = row;
            m_blockAside = 0;
            return;
        }
        if (m_fitting == 1) {
            // only the base's own row fits: it goes aside, this row becomes the base
            const uint64_t old = m_blocks.back().base;
            const auto at = m_asideRows.end() - static_cast<ptrdiff_t>(m_blockAside);
            const auto pos = std::lower_bound(at, m_asideRows.end(), static_cast<uint64_t>(m_fitRow));
            const ptrdiff_t k = pos - m_asideRows.begin();
            m_asideRows.insert(pos, m_fitRow);
            m_asideValues.insert(m_asideValues.begin() + k, static_cast<T>(old));
            setDistance(m_fitRow, smallest(4));
            ++m_blockAside;
            m_blocks.back().base = v;
            setDistance(row, 0);
            m_fitRow = row;
            return;
        }
        m_asideRows.push_back(row);
        m_asideValues.push_back(value);
        setDistance(row, smallest(4));
        ++m_blockAside;
    }
    // The newest block is full: packs its rows in place at the width their distances need.
    [[gnu::noinline]] void pack() {
        Block& b = m_blocks.back();
        int64_t lo = INT64_MAX, hi = INT64_MIN;
        for (size_t k = 0; k < kBlock; ++k) {
            const int32_t d = distance(k);
            if (d == smallest(4)) continue;
            lo = std::min<int64_t>(lo, d);
            hi = std::max<int64_t>(hi, d);
        }
        if (lo > hi) lo = hi = 0;  // every row aside
        unsigned width = 1;
        // distances from lo, moved to start just above the width's smallest (the mark)
        while (width < 4 && hi - lo > (int64_t(1) << (8 * width)) - 2) ++width;
        if (width == 4) return;  // stays as it is
        const int64_t move = lo - (int64_t(smallest(width)) + 1);
        switch (width) {
        case 1: packAt<1>(move); break;
        case 2: packAt<2>(move); break;
        default: packAt<3>(move); break;
        }
        b.base += static_cast<uint64_t>(move) << Shift;
        b.startAndWidth = static_cast<uint64_t>(b.start()) << 2 | (width - 1);
        m_bytes.resize(b.start() + kBlock * width + kPadding);
    }
    // The newest block's distances, less move, W bytes each (a width known to the compiler: a
    // store or two a row, not a copy of a variable length).
    template <unsigned W>
    void packAt(int64_t move) {
        uint8_t* out = m_bytes.data() + m_blocks.back().start();
        for (size_t k = 0; k < kBlock; ++k) {
            const int32_t d = distance(k);  // read before the write below, which ends before it
            const int32_t e = d == smallest(4) ? smallest(W) : static_cast<int32_t>(d - move);
            std::memcpy(out + k * W, &e, W);  // little-endian: its low bytes
        }
    }
    // rows [from, end) of block b, whose width is W
    template <unsigned W, class F>
    void scanBlock(size_t b, size_t from, size_t end, F& f) const {
        // the block's rows and base read once: f may write anywhere
        const uint8_t* rows = m_bytes.data() + m_blocks[b].start();
        const uint64_t base = m_blocks[b].base;
        for (size_t i = from; i < end; ++i) f(i, rowValue(rows, base, i, W));
    }
    // Row i of the block whose rows start at `rows`, with that base and width: a 4-byte load,
    // sign-extended from the width (the bytes' end is padded). scan() names the width, so each of
    // its copies shifts by a constant.
    [[gnu::always_inline]] T rowValue(const uint8_t* rows, uint64_t base, size_t i, unsigned width) const {
        uint32_t raw;
        std::memcpy(&raw, rows + (i % kBlock) * width, sizeof raw);
        const unsigned s = 32 - 8 * width;
        const int32_t d = static_cast<int32_t>(raw << s) >> s;
        if (d == smallest(width)) [[unlikely]]
            return aside(i);
        return static_cast<T>(base + (static_cast<uint64_t>(static_cast<int64_t>(d)) << Shift));
    }
    T aside(size_t i) const {
        const auto it = std::lower_bound(m_asideRows.begin(), m_asideRows.end(), static_cast<uint64_t>(i));
        return m_asideValues[static_cast<size_t>(it - m_asideRows.begin())];
    }

    std::vector<uint8_t> m_bytes;  // the blocks' rows, then kPadding bytes (none while there is no row)
    std::vector<Block> m_blocks;
    std::vector<uint64_t> m_asideRows;  // ascending
    std::vector<T> m_asideValues;
    size_t m_rows = 0;
    // the newest block while it fills: how many of its rows fit, the row of the one that does
    // when only one does, how many went aside
    size_t m_fitting = 0;
    size_t m_fitRow = 0;
    size_t m_blockAside = 0;
};

// An entry's time_us, and its address (or an oom entry's device_free).
using TimeColumn = OffsetColumn<int64_t, 0>;
using AddressColumn = OffsetColumn<uint64_t, 9>;

} // namespace memlens::model
