#pragma once
// A trace column of 64-bit values that move little from one row to the next (an entry's time,
// its address): per block of 64 rows one 64-bit base, and for each row its distance from the
// base in 32 signed bits, counted in units of 2^Shift (addresses in 512 bytes, the allocator's
// smallest block; times in microseconds). 4.125 bytes a row instead of 8: a 3.8-million entry
// trace saves 15 MB a column. A row whose distance does not fit (or is no multiple of the unit:
// an oom entry's device_free in the address column, a missing time of -1 among real ones) is
// kept aside with its value, in row order (rows are only appended); reading it costs a binary
// search over those rows. A block's base is its first row's value, unless only that row fits
// when another does not: then the base moves to the newer row and the first goes aside, so one
// odd first row does not push the rest of its block aside.
#include "memlens/model/ColumnValues.h"
#include "memlens/model/HugePages.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <vector>

namespace memlens::model {

template <class T, unsigned Shift>
class OffsetColumn {
    static_assert(sizeof(T) == 8, "a column of 64-bit values");

public:
    using value_type = T;
    static constexpr size_t kBlock = 64;
    static constexpr int32_t kAside = INT32_MIN;

    OffsetColumn() = default;
    OffsetColumn(std::initializer_list<T> values) {
        for (T v : values) push_back(v);
    }
    template <class Range>
    static OffsetColumn of(const Range& values) {
        OffsetColumn c;
        for (T v : values) c.push_back(v);
        return c;
    }

    size_t size() const { return m_offsets.size(); }
    bool empty() const { return m_offsets.empty(); }

    T operator[](size_t i) const {
        const int32_t d = m_offsets[i];
        if (d == kAside) [[unlikely]]
            return aside(i);
        return static_cast<T>(m_bases[i / kBlock] + (static_cast<uint64_t>(static_cast<int64_t>(d)) << Shift));
    }
    T front() const { return (*this)[0]; }
    T back() const { return (*this)[size() - 1]; }

    void push_back(T value) {
        const size_t row = m_offsets.size();
        int32_t d;
        if (row % kBlock != 0 && fits(static_cast<uint64_t>(value), m_bases.back(), d)) [[likely]] {
            m_offsets.push_back(d);
            ++m_fitting;
        } else {
            pushOther(row, value);
        }
    }

    // Reserves n rows (the offsets advised for huge pages: reserved up front and written once).
    void reserve(size_t n) {
        reserveHugePages(m_offsets, n);
        m_bases.reserve(n / kBlock + 1);
    }
    // The rows' offsets (kAside where the value is kept aside): for prefaulting them.
    const std::vector<int32_t>& offsets() const { return m_offsets; }
    size_t asideCount() const { return m_asideRows.size(); }
    size_t memoryBytes() const {
        return m_offsets.size() * sizeof(int32_t) + m_bases.capacity() * sizeof(uint64_t) +
               m_asideRows.capacity() * sizeof(uint64_t) + m_asideValues.capacity() * sizeof(T);
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
    static bool fits(uint64_t v, uint64_t base, int32_t& d) {
        const int64_t diff = static_cast<int64_t>(v - base);
        if (diff & ((int64_t(1) << Shift) - 1)) return false;
        const int64_t q = diff >> Shift;
        if (q <= int64_t(INT32_MIN) || q > int64_t(INT32_MAX)) return false;
        d = static_cast<int32_t>(q);
        return true;
    }
    // A row that starts a block or does not fit its block's base.
    [[gnu::noinline]] void pushOther(size_t row, T value) {
        const uint64_t v = static_cast<uint64_t>(value);
        if (row % kBlock == 0) {
            m_bases.push_back(v);
            m_offsets.push_back(0);
            m_fitting = 1;
            m_fitRow = row;
            m_blockAside = 0;
            return;
        }
        if (m_fitting == 1) {
            // only the base's own row fits: it goes aside, this row becomes the base
            const uint64_t old = m_bases.back();
            const auto at = m_asideRows.end() - static_cast<ptrdiff_t>(m_blockAside);
            const auto pos = std::lower_bound(at, m_asideRows.end(), static_cast<uint64_t>(m_fitRow));
            const ptrdiff_t k = pos - m_asideRows.begin();
            m_asideRows.insert(pos, m_fitRow);
            m_asideValues.insert(m_asideValues.begin() + k, static_cast<T>(old));
            m_offsets[m_fitRow] = kAside;
            ++m_blockAside;
            m_bases.back() = v;
            m_offsets.push_back(0);
            m_fitRow = row;
            return;
        }
        m_asideRows.push_back(row);
        m_asideValues.push_back(value);
        m_offsets.push_back(kAside);
        ++m_blockAside;
    }
    T aside(size_t i) const {
        const auto it = std::lower_bound(m_asideRows.begin(), m_asideRows.end(), static_cast<uint64_t>(i));
        return m_asideValues[static_cast<size_t>(it - m_asideRows.begin())];
    }

    std::vector<int32_t> m_offsets;
    std::vector<uint64_t> m_bases;      // a block's base, as bits
    std::vector<uint64_t> m_asideRows;  // ascending
    std::vector<T> m_asideValues;
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
