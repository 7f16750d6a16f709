#include "core/SeriesPyramid.h"

#include <algorithm>

namespace memlens::views {

namespace {

void scan(const int64_t* v, int64_t from, int64_t to, RangeExtremes& r) {  // [from, to)
    for (int64_t i = from; i < to; ++i) {
        if (v[i] < r.min) r.min = v[i];
        if (v[i] > r.max) {
            r.max = v[i];
            r.maxIndex = i;
        }
    }
}

} // namespace

SeriesPyramid::SeriesPyramid(std::span<const int64_t> series) : m_size(static_cast<int64_t>(series.size())) {
    const int64_t blocks = (m_size + kBlock - 1) / kBlock;
    m_min.resize(static_cast<size_t>(blocks));
    m_max.resize(static_cast<size_t>(blocks));
    m_maxIndex.resize(static_cast<size_t>(blocks));
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t from = b * kBlock, to = std::min(m_size, from + kBlock);
        RangeExtremes r{series[static_cast<size_t>(from)], series[static_cast<size_t>(from)], from};
        scan(series.data(), from + 1, to, r);
        m_min[static_cast<size_t>(b)] = r.min;
        m_max[static_cast<size_t>(b)] = r.max;
        m_maxIndex[static_cast<size_t>(b)] = r.maxIndex;
    }
}

RangeExtremes SeriesPyramid::reduce(std::span<const int64_t> series, int64_t first, int64_t last) const {
    const int64_t* v = series.data();
    RangeExtremes r{v[first], v[first], first};
    const int64_t end = last + 1;
    const int64_t firstWhole = (first + 1 + kBlock - 1) / kBlock;  // first block starting after `first`
    const int64_t endWhole = end / kBlock;                         // blocks [firstWhole, endWhole) lie inside
    if (firstWhole >= endWhole) {
        scan(v, first + 1, end, r);
        return r;
    }
    scan(v, first + 1, firstWhole * kBlock, r);
    for (int64_t b = firstWhole; b < endWhole; ++b) {
        const auto k = static_cast<size_t>(b);
        if (m_min[k] < r.min) r.min = m_min[k];
        if (m_max[k] > r.max) {
            r.max = m_max[k];
            r.maxIndex = m_maxIndex[k];
        }
    }
    scan(v, endWhole * kBlock, end, r);
    return r;
}

} // namespace memlens::views
