#pragma once
// Everything one frame of the timeline draws, reduced to pixel columns: the envelopes of live and
// reserved bytes, and the stacked allocation bands at each column's peak. Plain C++: its cost
// depends on the columns and the visible entries, never on drawing millions of points.
#include "memlens/model/Timeline.h"
#include "core/AllocationLifetimes.h"
#include "core/EntryAxis.h"
#include "core/TimelineBands.h"
#include "core/TimelineBinning.h"

#include <cstdint>
#include <span>
#include <vector>

namespace memlens::views {

class TimelineLayout {
public:
    TimelineLayout() = default;
    // chosen: the lifetimes drawn as their own band (indices into lifetimes.all(), ascending).
    // Pyramids of the timeline's live and reserved bytes, if given, speed up wide columns.
    static TimelineLayout compute(const EntryAxis& axis, const model::DeviceTimeline& timeline,
                                  const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                                  double x0, double x1, int width, const SeriesPyramid* livePyramid = nullptr,
                                  const SeriesPyramid* reservedPyramid = nullptr,
                                  const StackAggregates* groups = nullptr);

    const TimelineBinning& binning() const { return m_binning; }
    const std::vector<ColumnEnvelope>& live() const { return m_live; }
    const std::vector<ColumnEnvelope>& reserved() const { return m_reserved; }
    const TimelineBands& bands() const { return m_bands; }
    int width() const { return m_binning.width(); }
    // The highest live or reserved value of any column (0 when nothing is visible).
    int64_t maxBytes() const { return m_maxBytes; }

private:
    TimelineBinning m_binning;
    std::vector<ColumnEnvelope> m_live;
    std::vector<ColumnEnvelope> m_reserved;
    TimelineBands m_bands;
    int64_t m_maxBytes = 0;
};

} // namespace memlens::views
