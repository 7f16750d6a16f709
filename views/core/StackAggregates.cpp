#include "core/StackAggregates.h"

#include <algorithm>
#include <cmath>

namespace memlens::views {

StackAggregates StackAggregates::compute(const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                                         int64_t first, int64_t last, const Options& options) {
    const size_t maxGroups = options.maxGroups, samples = options.samples;
    StackAggregates out;
    if (last < first || maxGroups == 0 || samples < 2) return out;
    const auto& all = lifetimes.all();
    // whether lifetime i is chosen: chosen is ascending, and i only grows
    size_t next = 0;
    const auto isChosen = [&](size_t i) {
        while (next < chosen.size() && chosen[next] < i) ++next;
        return next < chosen.size() && chosen[next] == i;
    };
    // the area of each stack's allocations inside [first, last], in bytes x entries
    struct Area {
        double bytesEntries = 0;
        size_t count = 0;
    };
    std::vector<Area> areas;  // by stack id (dense: a snapshot's stacks are numbered from 0)
    double total = 0, chosenTotal = 0;
    const auto inside = [&](const AllocationLifetime& l) {
        return std::max<int64_t>(0, std::min<int64_t>(l.end, last + 1) - std::max<int64_t>(l.begin, first));
    };
    for (size_t i = 0; i < all.size(); ++i) {
        const AllocationLifetime& l = all[i];
        if (l.begin > last) break;  // sorted by begin
        const int64_t span = inside(l);
        if (span == 0) continue;
        const double a = static_cast<double>(lifetimes.bytes(i)) * static_cast<double>(span);
        if (isChosen(i)) {
            chosenTotal += a;
            continue;
        }
        const model::StackId stack = lifetimes.stack(i);
        if (stack >= areas.size()) areas.resize(static_cast<size_t>(stack) + 1);
        Area& s = areas[stack];
        s.bytesEntries += a;
        ++s.count;
        total += a;
    }
    if (total <= 0 || total < options.minOtherShare * (total + chosenTotal)) return out;
    std::vector<std::pair<double, model::StackId>> ranked;
    for (size_t stack = 0; stack < areas.size(); ++stack)
        if (areas[stack].bytesEntries > 0 && areas[stack].bytesEntries >= options.minShare * total &&
            areas[stack].count >= options.minAllocations)
            ranked.push_back({areas[stack].bytesEntries, static_cast<model::StackId>(stack)});
    // largest first; ties: the smaller stack id
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (ranked.size() > maxGroups) ranked.resize(maxGroups);
    if (ranked.empty()) return out;

    out.m_first = first;
    out.m_last = last;
    out.m_samples = samples;
    for (const auto& [area, stack] : ranked) {
        out.m_stacks.push_back(stack);
        out.m_counts.push_back(areas[stack].count);
    }
    // a lifetime live in [begin, end) adds its bytes to the samples in that range (a difference
    // array per group)
    const auto span = static_cast<double>(last - first);
    // the first sample at or after entry e (samples: none)
    const auto firstSampleFrom = [&](int64_t e) -> size_t {
        if (e <= first) return 0;
        if (e > last) return samples;
        auto s = static_cast<size_t>(std::ceil(static_cast<double>(e - first) * static_cast<double>(samples - 1) / span));
        s = std::min(s, samples);
        while (s > 0 && out.sampleEntry(s - 1) >= e) --s;
        while (s < samples && out.sampleEntry(s) < e) ++s;
        return s;
    };
    std::vector<int32_t> groupOfStack(areas.size(), -1);
    for (size_t g = 0; g < out.m_stacks.size(); ++g) groupOfStack[out.m_stacks[g]] = static_cast<int32_t>(g);
    std::vector<int64_t> diff(out.m_stacks.size() * (samples + 1), 0);
    next = 0;
    for (size_t i = 0; i < all.size(); ++i) {
        const AllocationLifetime& l = all[i];
        if (l.begin > last) break;
        const model::StackId stack = lifetimes.stack(i);
        if (stack >= groupOfStack.size() || groupOfStack[stack] < 0 || isChosen(i)) continue;
        const size_t s0 = firstSampleFrom(l.begin), s1 = firstSampleFrom(l.end);
        if (s0 >= s1) continue;  // live between two samples only, or outside the range
        int64_t* d = diff.data() + static_cast<size_t>(groupOfStack[stack]) * (samples + 1);
        const auto bytes = static_cast<int64_t>(lifetimes.bytes(i));
        d[s0] += bytes;
        d[s1] -= bytes;
    }
    out.m_bytes.assign(out.m_stacks.size() * samples, 0);
    for (size_t g = 0; g < out.m_stacks.size(); ++g) {
        int64_t run = 0;
        for (size_t s = 0; s < samples; ++s) {
            run += diff[g * (samples + 1) + s];
            out.m_bytes[g * samples + s] = run;
        }
    }
    return out;
}

int64_t StackAggregates::sampleEntry(size_t s) const {
    return m_first + static_cast<int64_t>(static_cast<double>(m_last - m_first) * static_cast<double>(s) /
                                          static_cast<double>(m_samples - 1));
}

int64_t StackAggregates::bytesAt(size_t group, int64_t entry) const {
    if (group >= m_stacks.size() || entry < m_first || entry > m_last) return 0;
    const auto span = static_cast<double>(m_last - m_first);
    // the last sample at or before entry (samples round down, so step back while past it)
    auto s = span > 0 ? static_cast<size_t>(static_cast<double>(entry - m_first) * static_cast<double>(m_samples - 1) / span)
                      : size_t(0);
    s = std::min(s, m_samples - 1);
    while (s > 0 && sampleEntry(s) > entry) --s;
    while (s + 1 < m_samples && sampleEntry(s + 1) <= entry) ++s;
    return m_bytes[group * m_samples + s];
}

} // namespace memlens::views
