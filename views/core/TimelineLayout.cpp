#include "core/TimelineLayout.h"

#include <algorithm>

namespace memlens::views {

TimelineLayout TimelineLayout::compute(const EntryAxis& axis, const model::DeviceTimeline& timeline,
                                       const AllocationLifetimes& lifetimes, std::span<const uint32_t> chosen,
                                       double x0, double x1, int width, const SeriesPyramid* livePyramid,
                                       const SeriesPyramid* reservedPyramid, const StackAggregates* groups) {
    TimelineLayout out;
    out.m_binning = TimelineBinning(axis, x0, x1, width);
    out.m_live = out.m_binning.envelope(timeline.liveBytes, timeline.liveBefore, livePyramid);
    out.m_reserved = out.m_binning.envelope(timeline.reservedBytes, timeline.reservedBefore, reservedPyramid);
    const auto& cols = out.m_binning.columns();
    std::vector<int64_t> entries(cols.size(), TimelineBands::kNoEntry), live(cols.size(), 0);
    for (size_t c = 0; c < cols.size(); ++c) {
        if (!cols[c].valid) continue;
        entries[c] = out.m_live[c].maxEntry;
        live[c] = out.m_live[c].max;
        out.m_maxBytes = std::max({out.m_maxBytes, out.m_live[c].max, out.m_reserved[c].max});
    }
    out.m_bands = TimelineBands(lifetimes, chosen, entries, live, groups);
    return out;
}

} // namespace memlens::views
