#pragma once
// A trace column of 64-bit values that repeat (an entry's size: a training loop allocates the
// same few shapes over and over; 18 distinct sizes in 6.85 million entries of a torch 2.11 trace,
// 23 in a real one): the distinct values once, in the order first seen, and each row as the
// index of its value in an IndexColumn, 1 byte a row for up to 256 distinct values, 2 for up to
// 65,536. A trace whose values seldom repeat pays 4 bytes a row plus 8 and a hash slot per
// distinct value. Reading a row costs two loads, the second from a small table.
#include "memlens/model/AddressMap.h"
#include "memlens/model/ColumnValues.h"
#include "memlens/model/IndexColumn.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memlens::model {

class DictionaryColumn {
public:
    using value_type = uint64_t;

    size_t size() const { return m_rows.size(); }
    bool empty() const { return m_rows.empty(); }

    uint64_t operator[](size_t i) const { return m_values[m_rows[i]]; }
    uint64_t back() const { return (*this)[size() - 1]; }

    void push_back(uint64_t v) {
        // the few values a trace repeats are found in a small table of recent ones, the rest in
        // the map (the reader writes a row per trace entry: this is on its hottest path)
        Recent& r = m_recent[(v ^ (v >> 9) ^ (v >> 21)) & (kRecent - 1)];
        if (r.id == 0 || r.value != v) [[unlikely]] {
            uint32_t& id = m_ids[v];  // the value's index + 1; 0: new
            if (id == 0) {
                m_values.push_back(v);
                id = static_cast<uint32_t>(m_values.size());
            }
            r = {v, id};
        }
        m_rows.push_back(r.id - 1);
    }
    // Reserves n rows (the indices, at 1 byte a row until a 257th value).
    void reserve(size_t n) { m_rows.reserve(n); }
    // The rows' index bytes: for prefaulting them (a widening replaces them).
    const std::vector<uint8_t>& bytes() const { return m_rows.bytes(); }
    size_t distinctValues() const { return m_values.size(); }
    size_t memoryBytes() const {
        return m_rows.memoryBytes() + m_values.capacity() * sizeof(uint64_t) + m_ids.memoryBytes();
    }
    bool operator==(const DictionaryColumn& o) const { return sameValues(*this, o); }

private:
    struct Recent {
        uint64_t value = 0;
        uint32_t id = 0;  // index + 1; 0: none
    };
    static constexpr size_t kRecent = 64;

    IndexColumn m_rows;
    std::vector<uint64_t> m_values;
    AddressMap<uint32_t> m_ids{16};  // value -> its index + 1
    std::array<Recent, kRecent> m_recent{};
};

} // namespace memlens::model
