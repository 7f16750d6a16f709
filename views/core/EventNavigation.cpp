#include "core/EventNavigation.h"

#include <algorithm>

namespace memlens::views::navigation {

using model::Action;

namespace {

enum class Family { None, Block, Segment };

Family familyOf(Action a) {
    switch (a) {
    case Action::Alloc:
    case Action::FreeRequested:
    case Action::FreeCompleted:
    case Action::Free: return Family::Block;
    case Action::SegmentAlloc:
    case Action::SegmentFree:
    case Action::SegmentMap:
    case Action::SegmentUnmap: return Family::Segment;
    default: return Family::None;
    }
}
bool opens(Action a) { return a == Action::Alloc || a == Action::SegmentAlloc; }
bool closes(Action a) { return a == Action::FreeCompleted || a == Action::Free || a == Action::SegmentFree; }

int64_t rows(const model::TraceColumns& t) { return static_cast<int64_t>(t.rows()); }

} // namespace

std::optional<int64_t> nextEvent(const model::TraceColumns& trace, int64_t current) {
    if (current + 1 >= rows(trace)) return std::nullopt;
    return std::max<int64_t>(current + 1, 0);
}

std::optional<int64_t> previousEvent(const model::TraceColumns& trace, int64_t current) {
    if (current <= 0 || rows(trace) == 0) return std::nullopt;
    return std::min(current, rows(trace)) - 1;
}

std::optional<int64_t> nextOfSameAllocation(const model::TraceColumns& trace, int64_t current) {
    const int64_t n = rows(trace);
    if (current < 0 || current >= n) return std::nullopt;
    const auto ci = static_cast<size_t>(current);
    const Family fam = familyOf(trace.action[ci]);
    if (fam == Family::None || closes(trace.action[ci])) return std::nullopt;
    const uint64_t addr = trace.addr[ci];
    for (int64_t i = current + 1; i < n; ++i) {
        const auto k = static_cast<size_t>(i);
        if (trace.addr[k] != addr || familyOf(trace.action[k]) != fam) continue;
        if (opens(trace.action[k])) return std::nullopt;  // a new allocation at the same address
        return i;
    }
    return std::nullopt;
}

std::optional<int64_t> previousOfSameAllocation(const model::TraceColumns& trace, int64_t current) {
    const int64_t n = rows(trace);
    if (current <= 0 || current >= n) return std::nullopt;
    const auto ci = static_cast<size_t>(current);
    const Family fam = familyOf(trace.action[ci]);
    if (fam == Family::None || opens(trace.action[ci])) return std::nullopt;
    const uint64_t addr = trace.addr[ci];
    for (int64_t i = current - 1; i >= 0; --i) {
        const auto k = static_cast<size_t>(i);
        if (trace.addr[k] != addr || familyOf(trace.action[k]) != fam) continue;
        if (closes(trace.action[k])) return std::nullopt;  // an earlier allocation at the same address
        return i;
    }
    return std::nullopt;
}

std::optional<int64_t> nextWithAction(const model::TraceColumns& trace, int64_t current, Action action) {
    const auto begin = trace.action.begin() + std::clamp<int64_t>(current + 1, 0, rows(trace));
    const auto it = std::find(begin, trace.action.end(), action);
    if (it == trace.action.end()) return std::nullopt;
    return it - trace.action.begin();
}

std::optional<int64_t> previousWithAction(const model::TraceColumns& trace, int64_t current, Action action) {
    for (int64_t i = std::min(current, rows(trace)) - 1; i >= 0; --i)
        if (trace.action[static_cast<size_t>(i)] == action) return i;
    return std::nullopt;
}

std::optional<int64_t> nextMarker(const TimelineMarkers& markers, int64_t current) {
    const auto& s = markers.stops();
    const auto it = std::upper_bound(s.begin(), s.end(), current);
    if (it == s.end()) return std::nullopt;
    return *it;
}

std::optional<int64_t> previousMarker(const TimelineMarkers& markers, int64_t current) {
    const auto& s = markers.stops();
    auto it = std::lower_bound(s.begin(), s.end(), current);
    if (it == s.begin()) return std::nullopt;
    return *--it;
}

} // namespace memlens::views::navigation
