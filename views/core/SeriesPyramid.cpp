#include "core/SeriesPyramid.h"

#include <algorithm>
#include <type_traits>

namespace memlens::views {

void foldExtremes(std::span<const int64_t> v, int64_t from, int64_t to, RangeExtremes& r) {
    for (int64_t i = from; i < to; ++i) {
        const int64_t x = v[static_cast<size_t>(i)];
        if (x < r.min) r.min = x;
        if (x > r.max) {
            r.max = x;
            r.maxIndex = i;
        }
    }
}

void foldExtremes(const model::PackedSeries& v, int64_t from, int64_t to, RangeExtremes& r) {
    if (from >= to) return;
    v.scan(static_cast<size_t>(from), static_cast<size_t>(to), [&r](size_t i, int64_t x) {
        if (x < r.min) r.min = x;
        if (x > r.max) {
            r.max = x;
            r.maxIndex = static_cast<int64_t>(i);
        }
    });
}

SeriesPyramid::SeriesPyramid(std::span<const int64_t> series) { build(series); }
SeriesPyramid::SeriesPyramid(const model::PackedSeries& series) { build(series); }

template <class Series>
void SeriesPyramid::build(const Series& series) {
    static_assert(kBlock == 64, "blockValues() counts in powers of 64");
    m_size = static_cast<int64_t>(series.size());
    m_levels.clear();
    if (m_size == 0) return;
    std::vector<RangeExtremes> level(static_cast<size_t>((m_size + kBlock - 1) / kBlock));
    if constexpr (std::is_same_v<Series, model::PackedSeries>) {
        // the series' own blocks are these: one of a single value (most of the reserved bytes')
        // is not read value by value
        static_assert(model::PackedSeries::kBlock == kBlock);
        for (size_t b = 0; b < level.size(); ++b) {
            const auto e = series.blockExtremes(b);
            level[b] = {e.min, e.max, static_cast<int64_t>(e.maxIndex)};
        }
    } else {
        for (size_t b = 0; b < level.size(); ++b) {
            const int64_t from = static_cast<int64_t>(b) * kBlock, to = std::min(m_size, from + kBlock);
            RangeExtremes r{series[static_cast<size_t>(from)], series[static_cast<size_t>(from)], from};
            foldExtremes(series, from + 1, to, r);
            level[b] = r;
        }
    }
    m_levels.push_back(std::move(level));
    // a level above pays only where a range can hold two of its blocks
    while (m_levels.back().size() >= 2 * static_cast<size_t>(kBlock)) {
        const auto& below = m_levels.back();
        std::vector<RangeExtremes> above((below.size() + kBlock - 1) / kBlock);
        for (size_t b = 0; b < above.size(); ++b) {
            const size_t from = b * kBlock, to = std::min(below.size(), from + kBlock);
            RangeExtremes r = below[from];
            for (size_t k = from + 1; k < to; ++k) foldExtremes(below[k], r);
            above[b] = r;
        }
        m_levels.push_back(std::move(above));
    }
}

RangeExtremes SeriesPyramid::reduce(std::span<const int64_t> series, int64_t first, int64_t last) const {
    return reduceIn(series, first, last);
}

RangeExtremes SeriesPyramid::reduce(const model::PackedSeries& series, int64_t first, int64_t last) const {
    return reduceIn(series, first, last);
}

template <class Series>
RangeExtremes SeriesPyramid::reduceIn(const Series& v, int64_t first, int64_t last) const {
    const int64_t v0 = v[static_cast<size_t>(first)];
    RangeExtremes r{v0, v0, first};
    foldRange(v, first + 1, last + 1, static_cast<int>(m_levels.size()) - 1, r);
    return r;
}

// In index order (head, whole blocks, tail), so that the first index of the max wins ties.
template <class Series>
void SeriesPyramid::foldRange(const Series& v, int64_t from, int64_t to, int level, RangeExtremes& r) const {
    if (from >= to) return;
    if (level < 0) {
        foldExtremes(v, from, to, r);
        return;
    }
    const int64_t values = blockValues(level);
    const int64_t firstWhole = (from + values - 1) / values;  // the first block starting at or after from
    const int64_t endWhole = to / values;                     // blocks [firstWhole, endWhole) lie inside
    if (firstWhole >= endWhole) {
        foldRange(v, from, to, level - 1, r);
        return;
    }
    foldRange(v, from, firstWhole * values, level - 1, r);
    const auto& blocks = m_levels[static_cast<size_t>(level)];
    for (int64_t b = firstWhole; b < endWhole; ++b) foldExtremes(blocks[static_cast<size_t>(b)], r);
    foldRange(v, endWhole * values, to, level - 1, r);
}

} // namespace memlens::views
