#include "memlens/model/GroupGrowth.h"

#include "memlens/model/ByteFormat.h"
#include "memlens/model/GraphScans.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

namespace memlens::model {

namespace {

// The change of a group between two consecutive scans it is present in, and the iterations run
// in between.
struct Interval {
    double dg = 0, db = 0;
    std::map<std::string, double> n;  // iterations per phase
    double all = 0;                   // iterations of any phase
};

// What a growth is counted per: every iteration whatever its phase, or the iterations of one
// phase (which may be named "": the scans' phase when nothing else is known).
struct GrowthUnit {
    std::optional<std::string> phase;  // nullopt: every iteration

    bool anyPhase() const { return !phase; }
    double stepsIn(const Interval& iv) const {
        if (anyPhase()) return iv.all;
        auto it = iv.n.find(*phase);
        return it == iv.n.end() ? 0.0 : it->second;
    }
};

// The scans a growth is read from, up to `scan`: complete ones (a partial scan may miss graphs),
// all of them when none is, and `scan` itself whatever it is.
std::vector<size_t> scansRead(const std::vector<GraphScanData>& scans, size_t scan) {
    std::vector<size_t> use;
    for (size_t k = 0; k < scan; ++k)
        if (!scans[k].partial) use.push_back(k);
    if (use.empty())
        for (size_t k = 0; k < scan; ++k) use.push_back(k);
    use.push_back(scan);
    return use;
}

// The group is absent from `scan`: the iteration of the first read scan without it.
GroupGrowth gone(const std::vector<GraphScanData>& scans, const std::vector<RootGroup::Point>& pts,
                 const std::vector<size_t>& use, size_t scan) {
    GroupGrowth out;
    const size_t last = use.size() - 1;
    out.kind = GroupGrowth::Kind::Gone;
    out.goneAt = scans[scan].iteration;
    for (size_t u = last; u > 0 && pts[use[u - 1]].graphs == 0; --u) out.goneAt = scans[use[u - 1]].iteration;
    out.text = "gone at iteration " + std::to_string(out.goneAt);
    if (scans[scan].partial) out.text += " (partial scan)";
    return out;
}

// Fewer graphs (or as many, holding fewer bytes) than in the scan before: the last step.
GroupGrowth shrinking(const std::vector<GraphScanData>& scans, size_t prev, int64_t dg, int64_t db) {
    GroupGrowth out;
    out.kind = GroupGrowth::Kind::Shrinking;
    out.graphsPerStep = static_cast<double>(dg);
    out.bytesPerStep = static_cast<double>(db);
    out.since = scans[prev].iteration;
    std::string t;
    if (dg) t = std::to_string(dg) + (dg == -1 ? " graph" : " graphs") + ", ";
    t += formatSignedBytes(db) + " since iteration " + std::to_string(scans[prev].iteration);
    out.text = t;
    return out;
}

// Intervals between consecutive read scans from use[first] to the last (the step into the run from
// a scan without the group included), without drops and without intervals of no iterations; the
// phases they run through into `phases`.
std::vector<Interval> growthIntervals(const GraphScans& all, const std::vector<RootGroup::Point>& pts,
                                      const std::vector<size_t>& use, size_t first, std::set<std::string>& phases) {
    const auto& scans = all.scans();
    std::vector<Interval> intervals;
    for (size_t u = (first > 0 ? first : 1); u < use.size(); ++u) {
        const size_t k0 = use[u - 1], k1 = use[u];
        const int64_t dg = pts[k1].graphs - pts[k0].graphs;
        const int64_t db = static_cast<int64_t>(pts[k1].bytes) - static_cast<int64_t>(pts[k0].bytes);
        if (dg < 0 || (dg == 0 && db < 0)) continue;  // a drop: not part of the growth
        Interval iv;
        iv.dg = static_cast<double>(dg);
        iv.db = static_cast<double>(db);
        for (const auto& [phase, count] : all.iterationsBetween(scans[k0].iteration, scans[k1].iteration, k1)) {
            iv.n[phase] += static_cast<double>(count);
            iv.all += static_cast<double>(count);
            phases.insert(phase);
        }
        if (iv.all <= 0) continue;
        intervals.push_back(std::move(iv));
    }
    return intervals;
}

// The unit whose iterations the growth follows best: least squares of the graphs (the bytes when
// the graph count does not change) per unit, for every iteration and for each phase the intervals
// run through. On a tie a named phase beats every iteration only when the session has several.
struct FittedUnit {
    GrowthUnit unit;
    double rate = 0;
};
FittedUnit fitUnit(const std::vector<Interval>& intervals, const std::set<std::string>& phases, bool fitGraphs,
                   size_t sessionPhases) {
    std::vector<GrowthUnit> candidates{GrowthUnit{}};
    for (const auto& phase : phases) candidates.push_back(GrowthUnit{phase});
    FittedUnit best;
    double bestResidual = -1;
    for (const auto& cand : candidates) {
        double sumN = 0, sumD = 0;
        for (const auto& iv : intervals) {
            sumN += cand.stepsIn(iv);
            sumD += fitGraphs ? iv.dg : iv.db;
        }
        if (sumN <= 0) continue;
        const double rate = sumD / sumN;
        double residual = 0, scale = 0;
        for (const auto& iv : intervals) {
            const double d = fitGraphs ? iv.dg : iv.db;
            const double e = d - rate * cand.stepsIn(iv);
            residual += e * e;
            scale += d * d;
        }
        residual = scale > 0 ? residual / scale : residual;
        const bool tie = bestResidual >= 0 && std::abs(residual - bestResidual) < 1e-9;
        const bool better = bestResidual < 0 || residual < bestResidual - 1e-9 ||
                            (tie && !cand.anyPhase() && best.unit.anyPhase() && sessionPhases > 1);
        if (better) {
            best = {cand, rate};
            bestResidual = residual;
        }
    }
    return best;
}

// The phases of the session's iterations, else of its scans.
size_t sessionPhaseCount(const GraphScans& all) {
    std::set<std::string> phases;
    for (const auto& it : all.iterations()) phases.insert(it.phase);
    if (all.iterations().empty())
        for (const auto& s : all.scans()) phases.insert(s.phase);
    return phases.size();
}

bool nearInt(double v, double tol = 0.05) { return std::abs(v - std::round(v)) <= tol * std::max(1.0, std::abs(v)); }

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", v);
    return buf;
}

} // namespace

GroupGrowth fitGroupGrowth(const GraphScans& all, size_t group, size_t scan) {
    GroupGrowth out;
    const auto& scans = all.scans();
    if (group >= all.groups().size() || scan >= scans.size()) return out;
    const auto& pts = all.groups()[group].points;
    const std::vector<size_t> use = scansRead(scans, scan);
    const size_t last = use.size() - 1;
    if (pts[scan].graphs == 0) return gone(scans, pts, use, scan);

    // the run of read scans ending at `scan` in which the group is present
    size_t a = last;
    while (a > 0 && pts[use[a - 1]].graphs > 0) --a;
    int64_t oldest = scans[use[a]].iteration;
    for (size_t gi : all.graphsOf(group, scan)) {
        const auto& g = scans[scan].graphs[gi];
        if (g.firstSeen) oldest = std::min(oldest, *g.firstSeen);
    }
    out.since = oldest;
    if (a == last) {
        out.kind = GroupGrowth::Kind::Single;
        out.text = last == 0 ? "first scan" : "new at iteration " + std::to_string(scans[scan].iteration);
        return out;
    }
    const size_t prev = use[last - 1];
    const int64_t lastDg = pts[scan].graphs - pts[prev].graphs;
    const int64_t lastDb = static_cast<int64_t>(pts[scan].bytes) - static_cast<int64_t>(pts[prev].bytes);
    if (lastDg < 0 || (lastDg == 0 && lastDb < 0)) return shrinking(scans, prev, lastDg, lastDb);

    std::set<std::string> phases;
    const std::vector<Interval> intervals = growthIntervals(all, pts, use, a, phases);
    double totalG = 0, totalB = 0;
    for (const auto& iv : intervals) {
        totalG += iv.dg;
        totalB += iv.db;
    }
    if (intervals.empty() || (totalG == 0 && totalB == 0)) {
        out.kind = GroupGrowth::Kind::Steady;
        out.since = scans[use[a]].iteration;
        const int64_t n = pts[scan].graphs;
        out.text = "steady: " + std::to_string(n) + (n == 1 ? " graph" : " graphs") + " since iteration " +
                   std::to_string(out.since);
        return out;
    }
    const bool fitGraphs = totalG != 0;
    const FittedUnit best = fitUnit(intervals, phases, fitGraphs, sessionPhaseCount(all));
    double sumN = 0;
    for (const auto& iv : intervals) sumN += best.unit.stepsIn(iv);
    out.kind = GroupGrowth::Kind::Growing;
    out.phase = best.unit.phase.value_or(std::string());
    out.graphsPerStep = fitGraphs ? best.rate : 0.0;
    out.bytesPerStep = sumN > 0 ? totalB / sumN : 0.0;
    out.text = describeGrowth(out);
    return out;
}

std::string describeGrowth(const GroupGrowth& g) {
    if (g.kind != GroupGrowth::Kind::Growing) return g.text;
    const std::string unit = g.phase.empty() ? "iteration" : g.phase + " iteration";
    const double r = g.graphsPerStep;
    const auto bytes = static_cast<int64_t>(std::llround(g.bytesPerStep));
    std::string t;
    if (r > 0 && r < 1 && nearInt(1.0 / r, 0.05)) {
        const auto k = std::llround(1.0 / r);
        t = "+1 graph every " + std::to_string(k) + " " + unit + "s";
        if (bytes) t += " (" + formatSignedBytes(bytes) + " per " + unit + ")";
    } else {
        if (r > 0) {
            if (nearInt(r)) {
                const auto n = std::llround(r);
                t = "+" + std::to_string(n) + (n == 1 ? " graph" : " graphs");
            } else {
                t = "+" + number(r) + " graphs";
            }
        }
        if (bytes) t += (t.empty() ? "" : ", ") + formatSignedBytes(bytes);
        if (t.empty()) t = "growing";
        t += " per " + unit;
    }
    t += " since iteration " + std::to_string(g.since);
    return t;
}

} // namespace memlens::model
