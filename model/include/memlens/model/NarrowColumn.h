#pragma once
// A trace column of 64-bit values nearly all of which fit in 32 bits (an entry's size: blocks of
// 4 GiB or more are rare): 4 bytes a row instead of 8, and the rows whose value does not fit kept
// aside with their values, in row order (rows are only appended). A 3.8-million entry trace
// saves 15 MB. Reading a row that does not fit costs a binary search over those rows.
#include "memlens/model/ColumnValues.h"
#include "memlens/model/HugePages.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memlens::model {

class NarrowColumn {
public:
    using value_type = uint64_t;

    size_t size() const { return m_narrow.size(); }
    bool empty() const { return m_narrow.empty(); }

    uint64_t operator[](size_t i) const {
        const uint32_t v = m_narrow[i];
        return v != kWide ? v : wide(i);
    }
    uint64_t back() const { return (*this)[size() - 1]; }

    void push_back(uint64_t v) {
        if (v < kWide) {
            m_narrow.push_back(static_cast<uint32_t>(v));
        } else {
            m_wideRows.push_back(m_narrow.size());
            m_wideValues.push_back(v);
            m_narrow.push_back(kWide);
        }
    }
    // Reserves n rows (the narrow values, advised for huge pages: reserved up front and written once).
    void reserve(size_t n) { reserveHugePages(m_narrow, n); }
    // The rows' 32-bit values (kWide where the value is kept aside): for prefaulting them.
    const std::vector<uint32_t>& narrow() const { return m_narrow; }
    size_t memoryBytes() const {
        return m_narrow.size() * sizeof(uint32_t) + m_wideRows.capacity() * sizeof(uint64_t) +
               m_wideValues.capacity() * sizeof(uint64_t);
    }
    bool operator==(const NarrowColumn& o) const { return sameValues(*this, o); }

    static constexpr uint32_t kWide = ~uint32_t(0);

private:
    uint64_t wide(size_t i) const {
        const auto it = std::lower_bound(m_wideRows.begin(), m_wideRows.end(), static_cast<uint64_t>(i));
        return m_wideValues[static_cast<size_t>(it - m_wideRows.begin())];
    }

    std::vector<uint32_t> m_narrow;
    std::vector<uint64_t> m_wideRows;    // ascending
    std::vector<uint64_t> m_wideValues;  // their values, each kWide or more
};

} // namespace memlens::model
