#include "core/EntryAxis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace memlens::views {

EntryAxis EntryAxis::byIndex(int64_t count) {
    EntryAxis a;
    a.m_count = std::max<int64_t>(count, 0);
    return a;
}

EntryAxis EntryAxis::byTime(const model::TimeColumn& timeUs) {
    EntryAxis a;
    a.m_time = true;
    a.m_count = static_cast<int64_t>(timeUs.size());
    a.m_timeUs = &timeUs;
    a.m_origin = timeUs.empty() ? 0 : timeUs.front();
    return a;
}

bool EntryAxis::isNonDecreasing(const model::TimeColumn& values) {
    // a block at a time (scan): the iterators' std::is_sorted decodes each row on its own
    bool sorted = true;
    int64_t previous = INT64_MIN;
    values.scan(0, values.size(), [&](size_t, int64_t t) {
        sorted &= t >= previous;
        previous = t;
    });
    return sorted;
}

bool EntryAxis::timesUsable(const model::TraceColumns& trace) {
    if (trace.rows() == 0) return false;
    for (uint8_t f : trace.flags)
        if (!(f & model::TraceColumns::HasTime)) return false;
    return isNonDecreasing(trace.timeUs);
}

double EntryAxis::endX() const {
    if (!m_time) return static_cast<double>(m_count);
    return m_count ? x(m_count - 1) + 1.0 : 1.0;
}

int64_t EntryAxis::firstAtOrAfter(double x) const {
    if (!m_time) {
        if (!(x > 0)) return 0;  // also NaN
        return std::min<int64_t>(m_count, static_cast<int64_t>(std::ceil(std::min(x, 9.0e18))));
    }
    auto it = std::lower_bound(m_timeUs->begin(), m_timeUs->end(), x,
                               [o = m_origin](int64_t t, double v) { return static_cast<double>(t - o) < v; });
    return it - m_timeUs->begin();
}

int64_t EntryAxis::entryAt(double x) const {
    if (!m_time) {
        if (!(x >= 0)) return -1;
        return std::min<int64_t>(m_count, static_cast<int64_t>(std::floor(std::min(x, 9.0e18))) + 1) - 1;
    }
    auto it = std::upper_bound(m_timeUs->begin(), m_timeUs->end(), x,
                               [o = m_origin](double v, int64_t t) { return v < static_cast<double>(t - o); });
    return (it - m_timeUs->begin()) - 1;
}

} // namespace memlens::views
