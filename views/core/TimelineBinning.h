#pragma once
// Reduces any x range of a trace to one bin per pixel column, so that drawing costs the same for
// 1,000 entries or 1,000,000: each column knows the entries it covers, and each series reduces to
// a min/max envelope per column.
#include "core/EntryAxis.h"
#include "core/SeriesPyramid.h"

#include <cstdint>
#include <span>
#include <vector>

namespace memlens::views {

// The entries whose span [x(i), x(i+1)) meets the column [start, end), plus entries of zero width
// inside it. first can be -1: the state before the first entry.
struct PixelColumn {
    int64_t first = -1;
    int64_t last = -1;
    bool valid = false;  // false where the column lies outside [axis.startX(), axis.endX())
};

struct ColumnEnvelope {
    int64_t min = 0;
    int64_t max = 0;
    int64_t firstValue = 0;  // value of the column's first entry
    int64_t lastValue = 0;   // and of its last
    int64_t maxEntry = -1;   // the (first) entry where max is reached
};

class TimelineBinning {
public:
    TimelineBinning() = default;
    // Columns c = 0..width-1 cover [x0 + c*w, x0 + (c+1)*w) with w = (x1 - x0) / width.
    TimelineBinning(const EntryAxis& axis, double x0, double x1, int width);

    int width() const { return static_cast<int>(m_columns.size()); }
    double x0() const { return m_x0; }
    double x1() const { return m_x1; }
    double columnStart(int c) const;
    // The column that holds x, clamped to [0, width-1]; -1 if width is 0.
    int columnAt(double x) const;
    const std::vector<PixelColumn>& columns() const { return m_columns; }

    // series[i] is the value right after entry i; before is the value before the first entry.
    // Invalid columns get a default envelope. With a pyramid built from the series, long columns
    // read its block summaries instead of every entry (same result).
    std::vector<ColumnEnvelope> envelope(std::span<const int64_t> series, int64_t before,
                                         const SeriesPyramid* pyramid = nullptr) const;
    std::vector<ColumnEnvelope> envelope(const model::PackedSeries& series, int64_t before,
                                         const SeriesPyramid* pyramid = nullptr) const;

private:
    template <class Series>
    std::vector<ColumnEnvelope> envelopeOf(const Series& series, int64_t before, const SeriesPyramid* pyramid) const;
    double m_x0 = 0;
    double m_x1 = 0;
    std::vector<PixelColumn> m_columns;
};

} // namespace memlens::views
