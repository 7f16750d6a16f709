#pragma once
// Min and max of a long series per block of 64 values, so that the min/max of any range costs
// its two partial blocks plus one step per whole block: a full-range envelope of 1,000,000
// entries reads about 16,000 block summaries instead of every entry.
#include "memlens/model/PackedSeries.h"

#include <cstdint>
#include <span>
#include <vector>

namespace memlens::views {

struct RangeExtremes {
    int64_t min = 0;
    int64_t max = 0;
    int64_t maxIndex = -1;  // the first index where max is reached
};

// Folds series[from, to) into r: its min, its max and the first index where a new max is reached.
void foldExtremes(std::span<const int64_t> series, int64_t from, int64_t to, RangeExtremes& r);
void foldExtremes(const model::PackedSeries& series, int64_t from, int64_t to, RangeExtremes& r);

class SeriesPyramid {
public:
    static constexpr int64_t kBlock = 64;

    SeriesPyramid() = default;
    explicit SeriesPyramid(std::span<const int64_t> series);
    explicit SeriesPyramid(const model::PackedSeries& series);

    bool empty() const { return m_size == 0; }
    int64_t size() const { return m_size; }
    // Extremes of series[first..last] (0 <= first <= last < size); series must be the one built from.
    RangeExtremes reduce(std::span<const int64_t> series, int64_t first, int64_t last) const;
    RangeExtremes reduce(const model::PackedSeries& series, int64_t first, int64_t last) const;

private:
    template <class Series>
    void build(const Series& series);
    template <class Series>
    RangeExtremes reduceIn(const Series& series, int64_t first, int64_t last) const;
    int64_t m_size = 0;
    std::vector<int64_t> m_min;
    std::vector<int64_t> m_max;
    std::vector<int64_t> m_maxIndex;
};

} // namespace memlens::views
