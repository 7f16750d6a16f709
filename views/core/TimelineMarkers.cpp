#include "core/TimelineMarkers.h"

#include "core/EntryAxis.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <utility>

namespace memlens::views {

namespace {

// Each range (in order of first entry) takes the lowest lane whose last range ended before it
// begins. Ranges come by first entry, so a lane free for one range stays free for the next: the
// lanes in use wait in a heap by their end, the free ones in a heap by index. O(n log lanes):
// a scan of every lane for each range was quadratic where ranges stay open (a START without
// its END runs to the end of the trace, one more lane each; 6,600 of them in 528,000 ranges).
void assignLanes(std::vector<RangeMarker>& ranges, int& lanes) {
    using Busy = std::pair<int64_t, int>;  // (last entry covered, lane)
    std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
    std::priority_queue<int, std::vector<int>, std::greater<>> idle;
    int count = 0;
    for (auto& r : ranges) {
        while (!busy.empty() && busy.top().first < r.first) {
            idle.push(busy.top().second);
            busy.pop();
        }
        int lane;
        if (idle.empty()) {
            lane = count++;
        } else {
            lane = idle.top();
            idle.pop();
        }
        busy.emplace(std::max(r.first, r.last), lane);
        r.lane = lane;
    }
    lanes = count;
}

} // namespace

TimelineMarkers TimelineMarkers::compute(const model::Snapshot& snapshot, int device) {
    const model::DeviceData* dev = snapshot.device(device);
    return compute(snapshot, device, dev && EntryAxis::timesUsable(dev->trace));
}

TimelineMarkers TimelineMarkers::compute(const model::Snapshot& snapshot, int device, bool timesUsable) {
    TimelineMarkers out;
    const model::DeviceData* dev = snapshot.device(device);
    if (!dev) return out;
    const model::TraceColumns& trace = dev->trace;
    const int64_t n = static_cast<int64_t>(trace.rows());
    for (int64_t i = 0; i < n; ++i) {
        const model::Action a = trace.action[static_cast<size_t>(i)];
        if (a == model::Action::Oom || a == model::Action::Snapshot) out.m_points.push_back({i, a});
    }
    if (n == 0 || !timesUsable) return out;

    std::vector<const model::Annotation*> notes;
    for (const auto& a : snapshot.annotations)
        if (a.device == device && a.timeUs >= 0) notes.push_back(&a);
    std::stable_sort(notes.begin(), notes.end(),
                     [](const model::Annotation* x, const model::Annotation* y) { return x->timeUs < y->timeUs; });

    const auto& t = trace.timeUs;
    auto firstAtOrAfter = [&](int64_t us) { return std::lower_bound(t.begin(), t.end(), us) - t.begin(); };
    auto lastAtOrBefore = [&](int64_t us) { return (std::upper_bound(t.begin(), t.end(), us) - t.begin()) - 1; };

    std::map<model::StringId, std::vector<int64_t>> openStarts;  // name -> stack of START times
    for (const model::Annotation* a : notes) {
        if (a->start) {
            openStarts[a->name].push_back(a->timeUs);
            continue;
        }
        RangeMarker r;
        r.name = snapshot.str(a->name);
        auto& stack = openStarts[a->name];
        if (stack.empty()) {
            r.first = 0;
            r.startSeen = false;
        } else {
            r.first = firstAtOrAfter(stack.back());
            stack.pop_back();
        }
        r.last = lastAtOrBefore(a->timeUs);
        out.m_ranges.push_back(std::move(r));
    }
    for (auto& [name, stack] : openStarts)
        for (int64_t us : stack) {
            RangeMarker r;
            r.name = snapshot.str(name);
            r.first = firstAtOrAfter(us);
            r.last = n - 1;
            r.endSeen = false;
            out.m_ranges.push_back(std::move(r));
        }
    // a range that begins after the last entry or ends before the first shows nothing: drop it
    std::erase_if(out.m_ranges, [n](const RangeMarker& r) { return r.first >= n || r.last < 0; });
    std::stable_sort(out.m_ranges.begin(), out.m_ranges.end(), [](const RangeMarker& x, const RangeMarker& y) {
        return x.first != y.first ? x.first < y.first : x.last > y.last;
    });
    out.m_ranges.shrink_to_fit();  // grown by doubling: up to half of it unused
    assignLanes(out.m_ranges, out.m_lanes);
    // the ranges lane by lane (a counting sort keeps each lane in order of first entry)
    out.m_laneStart.assign(static_cast<size_t>(out.m_lanes) + 1, 0);
    for (const auto& r : out.m_ranges) ++out.m_laneStart[static_cast<size_t>(r.lane) + 1];
    for (size_t l = 1; l < out.m_laneStart.size(); ++l) out.m_laneStart[l] += out.m_laneStart[l - 1];
    out.m_byLane.resize(out.m_ranges.size());
    {
        std::vector<uint32_t> next(out.m_laneStart.begin(), out.m_laneStart.end() - 1);
        for (size_t i = 0; i < out.m_ranges.size(); ++i)
            out.m_byLane[next[static_cast<size_t>(out.m_ranges[i].lane)]++] = static_cast<uint32_t>(i);
    }
    for (const auto& r : out.m_ranges)
        if (r.lane == 0 && (out.m_stops.empty() || out.m_stops.back() != r.first)) out.m_stops.push_back(r.first);
    return out;
}

} // namespace memlens::views
