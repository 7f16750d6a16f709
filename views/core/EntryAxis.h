#pragma once
// Where each trace entry lies on the timeline's x axis: at its index, or at its time_us counted
// from the first entry's (so that time starts at 0).
// Entry i holds from x(i) until x(i + 1) (the state right after entry i lasts until the next one);
// the last entry holds until endX().
#include "memlens/model/OffsetColumn.h"
#include "memlens/model/Snapshot.h"

#include <cstdint>

namespace memlens::views {

class EntryAxis {
public:
    EntryAxis() = default;
    static EntryAxis byIndex(int64_t count);
    // timeUs must not decrease (see isNonDecreasing); it is not copied and must outlive the axis.
    static EntryAxis byTime(const model::TimeColumn& timeUs);
    static bool isNonDecreasing(const model::TimeColumn& values);
    // Whether the trace can be drawn against time: every entry carries a time and times never go
    // back (false for an empty trace).
    static bool timesUsable(const model::TraceColumns& trace);

    bool isTime() const { return m_time; }
    int64_t count() const { return m_count; }
    double x(int64_t i) const {
        return m_time ? static_cast<double>((*m_timeUs)[static_cast<size_t>(i)] - m_origin) : static_cast<double>(i);
    }
    double startX() const { return m_count ? x(0) : 0.0; }
    double endX() const;
    // The last entry with x(i) <= x; -1 if none.
    int64_t entryAt(double x) const;
    // The first entry with x(i) >= x; count() if none.
    int64_t firstAtOrAfter(double x) const;

private:
    bool m_time = false;
    int64_t m_count = 0;
    const model::TimeColumn* m_timeUs = nullptr;
    int64_t m_origin = 0;
};

} // namespace memlens::views
