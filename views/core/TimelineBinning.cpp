#include "core/TimelineBinning.h"

#include <algorithm>
#include <cmath>

namespace memlens::views {

TimelineBinning::TimelineBinning(const EntryAxis& axis, double x0, double x1, int width) : m_x0(x0), m_x1(x1) {
    if (width <= 0 || !(x1 > x0)) return;
    m_columns.resize(static_cast<size_t>(width));
    const int64_t n = axis.count();
    const double lo = axis.startX(), hi = axis.endX();
    // j[c]: first entry at or after the left edge of column c
    int64_t jPrev = axis.firstAtOrAfter(columnStart(0));
    for (int c = 0; c < width; ++c) {
        const double cs = columnStart(c), ce = columnStart(c + 1);
        const int64_t j = jPrev;
        const int64_t jNext = axis.firstAtOrAfter(ce);
        PixelColumn& col = m_columns[static_cast<size_t>(c)];
        col.valid = n > 0 && ce > lo && cs < hi;
        col.first = (j < n && axis.x(j) == cs) ? j : j - 1;
        col.last = std::max(col.first, jNext - 1);
        jPrev = jNext;
    }
}

double TimelineBinning::columnStart(int c) const {
    const int w = width();
    if (w == 0) return m_x0;
    if (c >= w) return m_x1;
    return m_x0 + (m_x1 - m_x0) * static_cast<double>(c) / static_cast<double>(w);
}

int TimelineBinning::columnAt(double x) const {
    const int w = width();
    if (w == 0) return -1;
    const double f = (x - m_x0) / (m_x1 - m_x0) * w;
    if (!(f >= 0)) return 0;
    return std::min(w - 1, static_cast<int>(std::floor(f)));
}

std::vector<ColumnEnvelope> TimelineBinning::envelope(std::span<const int64_t> series, int64_t before,
                                                      const SeriesPyramid* pyramid) const {
    return envelopeOf(series, before, pyramid);
}

std::vector<ColumnEnvelope> TimelineBinning::envelope(const model::PackedSeries& series, int64_t before,
                                                      const SeriesPyramid* pyramid) const {
    return envelopeOf(series, before, pyramid);
}

template <class Series>
std::vector<ColumnEnvelope> TimelineBinning::envelopeOf(const Series& series, int64_t before,
                                                        const SeriesPyramid* pyramid) const {
    std::vector<ColumnEnvelope> out(m_columns.size());
    const int64_t n = static_cast<int64_t>(series.size());
    if (pyramid && pyramid->size() != n) pyramid = nullptr;
    auto value = [&](int64_t i) { return i < 0 ? before : series[static_cast<size_t>(i)]; };
    for (size_t c = 0; c < m_columns.size(); ++c) {
        const PixelColumn& col = m_columns[c];
        if (!col.valid) continue;
        const int64_t first = std::min(col.first, n - 1), last = std::min(col.last, n - 1);
        ColumnEnvelope e;
        e.firstValue = value(first);
        e.lastValue = value(last);
        e.min = e.max = e.firstValue;
        e.maxEntry = first;
        const int64_t from = first < 0 ? 0 : first + 1;  // the rest of the column's entries
        if (from <= last) {
            if (pyramid && last - from >= 2 * SeriesPyramid::kBlock) {
                const RangeExtremes r = pyramid->reduce(series, from, last);
                e.min = std::min(e.min, r.min);
                if (r.max > e.max) {
                    e.max = r.max;
                    e.maxEntry = r.maxIndex;
                }
            } else {
                RangeExtremes r{e.min, e.max, e.maxEntry};
                foldExtremes(series, from, last + 1, r);
                e.min = r.min;
                e.max = r.max;
                e.maxEntry = r.maxIndex;
            }
        }
        out[c] = e;
    }
    return out;
}

} // namespace memlens::views
