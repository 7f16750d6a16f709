#include "core/TimelineBands.h"

#include <algorithm>

namespace memlens::views {

TimelineBands::TimelineBands(const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                             std::span<const int64_t> entries, std::span<const int64_t> live,
                             const StackAggregates* groups)
    : m_lifetimes(&lifetimes), m_entries(entries.begin(), entries.end()) {
    const auto& all = lifetimes.all();
    const size_t width = entries.size();
    m_other.assign(width, 0);
    m_offsets.assign(width + 1, 0);
    std::vector<uint32_t> active;  // chosen lifetimes begun so far, in allocation order
    size_t next = 0;
    for (size_t c = 0; c < width; ++c) {
        m_offsets[c] = static_cast<uint32_t>(m_ids.size());
        const int64_t e = entries[c];
        if (e == kNoEntry) continue;
        while (next < chosen.size() && all[chosen[next]].begin <= e) active.push_back(chosen[next++]);
        // drop those that ended (entries never go back, so they stay dead), sum the rest
        size_t w = 0;
        int64_t sum = 0;
        for (uint32_t id : active) {
            const AllocationLifetime& l = all[id];
            if (l.end <= e) continue;
            active[w++] = id;
            sum += static_cast<int64_t>(lifetimes.bytes(id));
            if (l.begin <= e) m_ids.push_back(id);
        }
        active.resize(w);
        m_other[c] = std::max<int64_t>(0, (c < live.size() ? live[c] : 0) - sum);
    }
    m_offsets[width] = static_cast<uint32_t>(m_ids.size());
    if (!groups || groups->groupCount() == 0) return;
    const size_t n = groups->groupCount();
    for (size_t g = 0; g < n; ++g) {
        m_groupStacks.push_back(groups->stack(g));
        m_groupCounts.push_back(groups->allocationCount(g));
    }
    m_groupBytes.assign(width * n, 0);
    for (size_t c = 0; c < width; ++c) {
        if (entries[c] == kNoEntry) continue;
        int64_t left = m_other[c];  // sampled, a group may claim more than the column has: clamp
        for (size_t g = 0; g < n && left > 0; ++g) {
            const int64_t b = std::min(left, std::max<int64_t>(0, groups->bytesAt(g, entries[c])));
            m_groupBytes[c * n + g] = b;
            left -= b;
        }
    }
}

std::span<const uint32_t> TimelineBands::lifetimes(int column) const {
    const auto c = static_cast<size_t>(column);
    return {m_ids.data() + m_offsets[c], m_ids.data() + m_offsets[c + 1]};
}

std::vector<BandSegment> TimelineBands::segments(int column) const {
    std::vector<BandSegment> out;
    int64_t y = other(column);
    for (uint32_t id : lifetimes(column)) {
        const auto size = static_cast<int64_t>(m_lifetimes->bytes(id));
        out.push_back({id, y, y + size});
        y += size;
    }
    return out;
}

int64_t TimelineBands::hit(int column, int64_t bytes) const {
    if (column < 0 || column >= width() || m_entries[static_cast<size_t>(column)] == kNoEntry || bytes < 0)
        return kNothing;
    int64_t y = other(column);
    if (bytes < y) {
        int64_t top = 0;
        for (size_t g = 0; g < groupCount(); ++g) {
            top += groupBytes(column, g);
            if (bytes < top) return groupHit(g);
        }
        return kOther;
    }
    for (uint32_t id : lifetimes(column)) {
        y += static_cast<int64_t>(m_lifetimes->bytes(id));
        if (bytes < y) return id;
    }
    return kNothing;
}

} // namespace memlens::views
