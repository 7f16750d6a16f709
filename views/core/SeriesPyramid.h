#pragma once
// Min and max of a long series per block of 64 values, and of those per 64 blocks, and so on
// (blocks of 64, 4,096, 262,144 ... values), so that the min/max of any range costs at most 63
// summaries per level at each end plus the whole blocks of the top level inside it: a column of
// 21,600 entries (21.6 million over 1,000 pixels) reads about 5 summaries of 4,096 values, 64 of
// 64 values and 64 values, instead of 338 summaries with one level, or every value.
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

// Folds the extremes s of a range after r's into r: a max only strictly greater moves maxIndex,
// so that the first index of the max wins ties.
inline void foldExtremes(const RangeExtremes& s, RangeExtremes& r) {
    if (s.min < r.min) r.min = s.min;
    if (s.max > r.max) {
        r.max = s.max;
        r.maxIndex = s.maxIndex;
    }
}

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
    // Folds series[from, to) into r through the summaries of level and the ones below.
    template <class Series>
    void foldRange(const Series& series, int64_t from, int64_t to, int level, RangeExtremes& r) const;
    // Values per block of a level: 64 for level 0, 64 times more for each level above.
    static int64_t blockValues(int level) { return kBlock << (6 * level); }
    int64_t m_size = 0;
    // m_levels[k][b]: the extremes of block b of level k (maxIndex: the first index of its max)
    std::vector<std::vector<RangeExtremes>> m_levels;
};

} // namespace memlens::views
