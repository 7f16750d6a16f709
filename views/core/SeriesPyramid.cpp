#include "core/SeriesPyramid.h"

#include <algorithm>

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
    m_size = static_cast<int64_t>(series.size());
    const int64_t blocks = (m_size + kBlock - 1) / kBlock;
    m_min.resize(static_cast<size_t>(blocks));
    m_max.resize(static_cast<size_t>(blocks));
    m_maxIndex.resize(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t from = b * kBlock, to = std::min(m_size, from + kBlock);
        RangeExtremes r{series[static_cast<size_t>(from)], series[static_cast<size_t>(from)], from};
        foldExtremes(series, from + 1, to, r);
        m_min[static_cast<size_t>(b)] = r.min;
        m_max[static_cast<size_t>(b)] = r.max;
        m_maxIndex[static_cast<size_t>(b)] = r.maxIndex;
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
    const int64_t end = last + 1;
    const int64_t firstWhole = (first + 1 + kBlock - 1) / kBlock;  // first block starting after `first`
    const int64_t endWhole = end / kBlock;                         // blocks [firstWhole, endWhole) lie inside
    if (firstWhole >= endWhole) {
        foldExtremes(v, first + 1, end, r);
        return r;
    }
    foldExtremes(v, first + 1, firstWhole * kBlock, r);
    for (int64_t b = firstWhole; b < endWhole; ++b) {
        const auto k = static_cast<size_t>(b);
        if (m_min[k] < r.min) r.min = m_min[k];
        if (m_max[k] > r.max) {
            r.max = m_max[k];
            r.maxIndex = m_maxIndex[k];
        }
    }
    foldExtremes(v, endWhole * kBlock, end, r);
    return r;
}

} // namespace memlens::views
