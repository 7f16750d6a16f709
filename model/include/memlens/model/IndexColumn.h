#pragma once
// A trace column of small unsigned ids (stack ids; the index of an entry's size among the
// trace's distinct sizes, DictionaryColumn): each row in the fewest bytes that hold every id
// written so far, 1, 2 or 4. A trace's distinct stacks and sizes are few (18 stacks and 18 sizes
// on a torch 2.11 trace of 6.85 million entries, 189 and 23 on a real training trace, thousands
// with C++ frames or variable lengths): 1 or 2 bytes a row instead of 4. The column widens
// itself, once per width, when an id does not fit; reads branch on the width, which never
// changes while a trace is read.
#include "memlens/model/ColumnValues.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace memlens::model {

class IndexColumn {
public:
    using value_type = uint32_t;

    size_t size() const { return m_bytes.size() >> m_shift; }
    bool empty() const { return m_bytes.empty(); }

    uint32_t operator[](size_t i) const {
        const uint8_t* p = m_bytes.data() + (i << m_shift);
        switch (m_shift) {
        case 0: return *p;
        case 1: {
            uint16_t v;
            std::memcpy(&v, p, 2);
            return v;
        }
        default: {
            uint32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
        }
    }
    uint32_t back() const { return (*this)[size() - 1]; }

    [[gnu::always_inline]] void push_back(uint32_t v) {
        if (v > m_max) [[unlikely]]
            widenFor(v);
        if (m_shift == 0) {
            m_bytes.push_back(static_cast<uint8_t>(v));
            return;
        }
        pushWide(v);
    }
    // Reserves n rows at the present width (reserved up front, written once).
    void reserve(size_t n) { m_bytes.reserve(n << m_shift); }
    // The rows' bytes: for prefaulting them (a widening replaces them).
    const std::vector<uint8_t>& bytes() const { return m_bytes; }
    // Bytes a row.
    size_t width() const { return size_t(1) << m_shift; }
    size_t memoryBytes() const { return m_bytes.size(); }
    bool operator==(const IndexColumn& o) const { return sameValues(*this, o); }

private:
    [[gnu::noinline]] void pushWide(uint32_t v) {
        const size_t at = m_bytes.size();
        m_bytes.resize(at + (size_t(1) << m_shift));
        store(m_bytes.data() + at, v, m_shift);
    }
    [[gnu::noinline]] void widenFor(uint32_t v) {
        const unsigned shift = v <= 0xFFFF ? 1 : 2;
        const size_t rows = size(), reserved = m_bytes.capacity() >> m_shift;
        std::vector<uint8_t> wider;
        wider.reserve(std::max(reserved, rows) << shift);
        wider.resize(rows << shift);
        for (size_t i = 0; i < rows; ++i) store(wider.data() + (i << shift), (*this)[i], shift);
        m_bytes = std::move(wider);
        m_shift = shift;
        m_max = shift == 1 ? 0xFFFF : 0xFFFFFFFF;
    }

    static void store(uint8_t* p, uint32_t v, unsigned shift) {
        if (shift == 0) {
            *p = static_cast<uint8_t>(v);
        } else if (shift == 1) {
            const auto x = static_cast<uint16_t>(v);
            std::memcpy(p, &x, 2);
        } else {
            std::memcpy(p, &v, 4);
        }
    }

    std::vector<uint8_t> m_bytes;
    unsigned m_shift = 0;     // log2 of the bytes a row
    uint32_t m_max = 0xFF;    // the largest id the width holds
};

} // namespace memlens::model
