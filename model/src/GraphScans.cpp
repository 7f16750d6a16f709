#include "memlens/model/GraphScans.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace memlens::model {

GraphScans::GraphScans(std::vector<GraphScanData> scans, std::vector<SessionIteration> iterations)
    : scans_(std::move(scans)), iterations_(std::move(iterations)) {
    std::stable_sort(scans_.begin(), scans_.end(), [](const GraphScanData& a, const GraphScanData& b) {
        return a.iteration != b.iteration ? a.iteration < b.iteration : a.timeUs < b.timeUs;
    });
    std::sort(iterations_.begin(), iterations_.end(),
              [](const SessionIteration& a, const SessionIteration& b) { return a.index < b.index; });
    analyse();
}

GraphScans GraphScans::fromStored(const std::vector<GraphScan>& stored, std::vector<SessionIteration> iterations) {
    std::vector<GraphScanData> scans;
    scans.reserve(stored.size());
    for (const auto& s : stored) scans.push_back(parseGraphScan(s));
    return GraphScans(std::move(scans), std::move(iterations));
}

void GraphScans::analyse() {
    std::unordered_map<std::string, size_t> index;
    for (size_t s = 0; s < scans_.size(); ++s) {
        for (const auto& g : scans_[s].graphs) {
            auto [it, fresh] = index.emplace(g.pattern, groups_.size());
            if (fresh) {
                RootGroup grp;
                grp.pattern = g.pattern;
                grp.points.resize(scans_.size());
                grp.firstScan = s;
                grp.firstSeen = g.firstSeen.value_or(scans_[s].iteration);
                groups_.push_back(std::move(grp));
            }
            RootGroup& grp = groups_[it->second];
            RootGroup::Point& p = grp.points[s];
            p.graphs += 1;
            p.bytes += g.retainedBytes;
            p.savedAlive += g.savedAlive;
            p.savedReleased += g.savedReleased;
            p.savedHooked += g.savedHooked;
            p.savedListed = p.savedListed && g.savedListed;
            grp.firstSeen = std::min(grp.firstSeen, g.firstSeen.value_or(scans_[s].iteration));
        }
    }
}

int GraphScans::scanAtIteration(int64_t iteration) const {
    int found = -1;
    for (size_t i = 0; i < scans_.size(); ++i)
        if (scans_[i].iteration <= iteration) found = static_cast<int>(i);
    return found;
}

int GraphScans::groupIndex(const std::string& pattern) const {
    for (size_t i = 0; i < groups_.size(); ++i)
        if (groups_[i].pattern == pattern) return static_cast<int>(i);
    return -1;
}

std::vector<size_t> GraphScans::groupsAt(size_t scan) const {
    std::vector<size_t> present, gone;
    if (scan >= scans_.size()) return present;
    for (size_t g = 0; g < groups_.size(); ++g) {
        if (groups_[g].points[scan].graphs > 0) present.push_back(g);
        else if (scan > 0 && groups_[g].points[scan - 1].graphs > 0) gone.push_back(g);
    }
    std::stable_sort(present.begin(), present.end(), [&](size_t a, size_t b) {
        return groups_[a].points[scan].bytes > groups_[b].points[scan].bytes;
    });
    std::stable_sort(gone.begin(), gone.end(), [&](size_t a, size_t b) {
        return groups_[a].points[scan - 1].bytes > groups_[b].points[scan - 1].bytes;
    });
    present.insert(present.end(), gone.begin(), gone.end());
    return present;
}

std::vector<size_t> GraphScans::graphsOf(size_t group, size_t scan) const {
    std::vector<size_t> out;
    if (group >= groups_.size() || scan >= scans_.size()) return out;
    const auto& graphs = scans_[scan].graphs;
    for (size_t i = 0; i < graphs.size(); ++i)
        if (graphs[i].pattern == groups_[group].pattern) out.push_back(i);
    return out;
}

std::vector<std::pair<std::string, int64_t>> GraphScans::iterationsBetween(int64_t from, int64_t to, size_t scanTo) const {
    std::map<std::string, int64_t> counts;
    if (to <= from) return {};
    bool known = false;
    if (!iterations_.empty()) {
        auto it = std::upper_bound(iterations_.begin(), iterations_.end(), from,
                                   [](int64_t v, const SessionIteration& s) { return v < s.index; });
        for (; it != iterations_.end() && it->index <= to; ++it) {
            counts[it->phase] += 1;
            known = true;
        }
    }
    if (!known) counts[scanTo < scans_.size() ? scans_[scanTo].phase : std::string()] += to - from;
    return {counts.begin(), counts.end()};
}

GroupGrowth GraphScans::growth(size_t group, size_t scan) const { return fitGroupGrowth(*this, group, scan); }

} // namespace memlens::model
