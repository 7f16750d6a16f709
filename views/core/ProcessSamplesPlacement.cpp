#include "core/ProcessSamplesPlacement.h"

#include <algorithm>

namespace memlens::views {

std::vector<PlacedSample> placeProcessSamples(const std::vector<model::TimedBytes>& series,
                                              const model::TimeColumn& traceTimeUs, const EntryAxis& axis) {
    std::vector<PlacedSample> out;
    if (traceTimeUs.empty() || series.empty() || axis.count() != static_cast<int64_t>(traceTimeUs.size())) return out;
    const int64_t t0 = traceTimeUs.front(), t1 = traceTimeUs.back();
    auto xOf = [&](int64_t t) {
        if (axis.isTime()) return axis.startX() + static_cast<double>(t - t0);
        // the last entry at or before t, and how far t is towards the next one
        const auto i = static_cast<size_t>(std::upper_bound(traceTimeUs.begin(), traceTimeUs.end(), t) - traceTimeUs.begin() - 1);
        double x = static_cast<double>(i);
        if (i + 1 < traceTimeUs.size() && traceTimeUs[i + 1] > traceTimeUs[i])
            x += static_cast<double>(t - traceTimeUs[i]) / static_cast<double>(traceTimeUs[i + 1] - traceTimeUs[i]);
        return x;
    };
    const model::TimedBytes* before = nullptr;
    for (const auto& s : series) {
        if (s.timeUs < t0) {
            before = &s;
            continue;
        }
        if (s.timeUs > t1) break;
        if (before && (out.empty() && s.timeUs > t0)) out.push_back({axis.startX(), static_cast<double>(before->bytes)});
        before = nullptr;
        out.push_back({xOf(s.timeUs), static_cast<double>(s.bytes)});
    }
    if (before && out.empty()) out.push_back({axis.startX(), static_cast<double>(before->bytes)});
    return out;
}

double maxInForce(const std::vector<PlacedSample>& placed, double x0, double x1) {
    double top = 0;
    for (size_t i = 0; i < placed.size(); ++i) {
        const double until = i + 1 < placed.size() ? placed[i + 1].x : placed[i].x;
        if (placed[i].x > x1) break;
        if (until < x0 && i + 1 < placed.size()) continue;
        top = std::max(top, placed[i].bytes);
    }
    return top;
}

} // namespace memlens::views
