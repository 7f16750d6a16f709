#pragma once
// A trace column where nearly every row holds one value: the stream of a job on one stream, the
// compile context "N/A", the user metadata nobody set, the text of the few actions the reader
// does not know. It keeps that value once and the rows that differ (sorted), so a 3.8-million
// entry trace spends bytes on its exceptions only instead of 4-8 bytes a row.
//
// Where values differ often (more than one row in 16, past the first 4,096 rows) it becomes a
// plain column, unless another value turns out to be the common one (the first row was the odd
// one out): then it starts over around that value. Reading a row costs a binary search over the
// exceptions (none, usually), or an index where the column is plain.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace memlens::model {

template <typename T>
class SparseColumn {
public:
    using value_type = T;

    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    bool isPlain() const { return m_plain; }

    T operator[](size_t i) const {
        if (m_plain) return m_values[i];
        if (m_rows.empty()) return m_common;
        const auto it = std::lower_bound(m_rows.begin(), m_rows.end(), static_cast<uint64_t>(i));
        return it != m_rows.end() && *it == i ? m_values[static_cast<size_t>(it - m_rows.begin())] : m_common;
    }

    void push_back(T v) {
        // the common case in one compare: a row of the common value, the column sparse
        if (v == m_common && m_sparse) [[likely]] {
            ++m_size;
            return;
        }
        pushOther(v);
    }

    // Nothing to reserve: exceptions are few, and a column that turns plain grows as a vector does.
    void reserve(size_t) {}
    void clear() { *this = SparseColumn(); }

    // Whether any row holds a value for which pred is true.
    template <typename Pred>
    bool any(Pred pred) const {
        if (m_plain) return std::any_of(m_values.begin(), m_values.end(), pred);
        if (m_rows.size() < m_size && pred(m_common)) return true;
        return std::any_of(m_values.begin(), m_values.end(), pred);
    }

    size_t memoryBytes() const { return m_rows.capacity() * sizeof(uint64_t) + m_values.capacity() * sizeof(T); }

private:
    static constexpr size_t kPlainFrom = 4096;

    [[gnu::noinline]] void pushOther(T v) {
        if (m_plain) {
            m_values.push_back(v);
        } else if (m_size == 0) {
            m_common = v;
        } else if (v != m_common) {
            m_rows.push_back(m_size);
            m_values.push_back(v);
            if (m_rows.size() > kPlainFrom / 16 && m_rows.size() * 16 > m_size + 1) rebalance(m_size + 1);
        }
        ++m_size;
        m_sparse = !m_plain;
    }

    // Too many exceptions once the column has `size` rows: the most frequent exception may be
    // the true common value (taken only when well under the limit with it, so that a column near
    // the limit does not start over at every row); otherwise every row is kept.
    void rebalance(size_t size) {
        std::unordered_map<T, size_t> counts;
        for (const T& v : m_values) ++counts[v];
        auto best = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
        const size_t differing = size - best->second;  // rows that would not hold best
        if (differing * 32 < size) {
            std::vector<uint64_t> rows;
            std::vector<T> values;
            size_t e = 0;
            for (size_t i = 0; i < size; ++i) {
                const bool exception = e < m_rows.size() && m_rows[e] == i;
                const T v = exception ? m_values[e++] : m_common;
                if (v != best->first) {
                    rows.push_back(i);
                    values.push_back(v);
                }
            }
            m_common = best->first;
            m_rows = std::move(rows);
            m_values = std::move(values);
            return;
        }
        std::vector<T> all;
        all.reserve(size + size / 4);
        size_t e = 0;
        for (size_t i = 0; i < size; ++i) all.push_back(e < m_rows.size() && m_rows[e] == i ? m_values[e++] : m_common);
        m_values = std::move(all);
        m_rows = {};
        m_plain = true;
    }

    size_t m_size = 0;
    T m_common{};
    bool m_plain = false;
    bool m_sparse = false;  // not plain and not empty: a row of m_common is only counted
    std::vector<uint64_t> m_rows;  // rows whose value is not m_common, ascending (unused when plain)
    std::vector<T> m_values;       // their values; when plain, every row's
};

} // namespace memlens::model
