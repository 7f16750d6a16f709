#pragma once
// Marks on a device's trace: ranges from the snapshot's external_annotations (record_function
// START/END pairs, e.g. iterations and optimizer steps) mapped onto trace entries, and single
// entries worth seeing (oom, snapshot).
#include "memlens/model/Snapshot.h"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::views {

struct RangeMarker {
    // the annotation's name, in the snapshot's strings (they stay where they are while the
    // snapshot lives; a long trace has hundreds of thousands of ranges)
    std::string_view name;
    int64_t first = 0;  // first entry at or after START
    int64_t last = -1;  // last entry at or before END (last < first: no entry inside)
    bool startSeen = true;  // false: an END without START, clamped to the start of the trace
    bool endSeen = true;    // false: a START without END, clamped to the end of the trace
    int lane = 0;           // row to draw it in, so that overlapping ranges do not cover each other
};

struct PointMarker {
    int64_t entry = 0;
    model::Action action = model::Action::Oom;
};

class TimelineMarkers {
public:
    TimelineMarkers() = default;
    static TimelineMarkers compute(const model::Snapshot& snapshot, int device);
    // The same, told whether the device's trace can be drawn against time (EntryAxis::timesUsable),
    // where the caller has found that out already: the ranges need it.
    static TimelineMarkers compute(const model::Snapshot& snapshot, int device, bool timesUsable);

    // Sorted by first entry, then longest first.
    const std::vector<RangeMarker>& ranges() const { return m_ranges; }
    // oom and snapshot entries, in trace order.
    const std::vector<PointMarker>& points() const { return m_points; }
    int laneCount() const { return m_lanes; }
    // Indices into ranges() of the ranges in one lane, by first entry. They do not overlap, so
    // both their first entries and their ends grow along it: a drawing can find the first one in
    // view by bisection instead of looking at every range (a long trace has hundreds of thousands).
    std::span<const uint32_t> laneRanges(int lane) const {
        if (lane < 0 || lane >= m_lanes) return {};
        return {m_byLane.data() + m_laneStart[static_cast<size_t>(lane)],
                m_laneStart[static_cast<size_t>(lane) + 1] - m_laneStart[static_cast<size_t>(lane)]};
    }
    // First entries of the top-level ranges (lane 0: iterations, not the steps inside them),
    // sorted, without repeats: where "next marker" stops.
    const std::vector<int64_t>& stops() const { return m_stops; }

private:
    std::vector<RangeMarker> m_ranges;
    std::vector<PointMarker> m_points;
    std::vector<int64_t> m_stops;
    std::vector<uint32_t> m_laneStart;  // lanes + 1: where each lane's indices begin in m_byLane
    std::vector<uint32_t> m_byLane;     // indices into m_ranges, lane by lane, each lane by first entry
    int m_lanes = 0;
};

} // namespace memlens::views
