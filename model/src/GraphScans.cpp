#include "memlens/model/GraphScans.h"

#include <cstdlib>

#include "memlens/model/ByteFormat.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

namespace memlens::model {

using Json = nlohmann::json;

namespace {

template <class T>
T get(const Json& j, const char* key, T fallback = T{}) {
    if (!j.is_object()) return fallback;
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return fallback;
    try {
        return it->get<T>();
    } catch (const std::exception&) {
        return fallback;
    }
}

std::vector<int64_t> shapeOf(const Json& j, const char* key) {
    std::vector<int64_t> out;
    if (!j.is_object()) return out;
    auto it = j.find(key);
    if (it == j.end() || !it->is_array()) return out;
    for (const auto& d : *it)
        if (d.is_number_integer()) out.push_back(d.get<int64_t>());
    return out;
}

SavedTensorInfo parseSaved(const Json& j) {
    SavedTensorInfo t;
    t.name = get<std::string>(j, "name");
    const std::string state = get<std::string>(j, "state", "alive");
    t.state = state == "released" ? SavedState::Released : state == "hooked" ? SavedState::Hooked : SavedState::Alive;
    t.inspected = j.is_object() && j.contains("shape");
    t.shape = shapeOf(j, "shape");
    t.dtype = get<std::string>(j, "dtype");
    t.device = get<std::string>(j, "device");
    t.bytes = get<uint64_t>(j, "bytes", 0);
    if (j.is_object()) {
        auto p = j.find("ptr");
        if (p != j.end() && p->is_number_integer()) t.ptr = p->get<uint64_t>();
    }
    t.param = get<bool>(j, "param", false);
    t.attribute = get<std::string>(j, "kind") == "attribute";
    t.modifiedInPlace = get<bool>(j, "modified_in_place", false);
    t.note = get<std::string>(j, "note");
    if (t.note.empty()) t.note = get<std::string>(j, "error");
    return t;
}

RetainedGraph parseGraph(const Json& g) {
    RetainedGraph r;
    r.root = get<std::string>(g, "root", "?");
    if (g.contains("referrers") && g["referrers"].is_array())
        for (const auto& p : g["referrers"])
            if (p.is_string()) r.referrers.push_back(p.get<std::string>());
    if (r.referrers.empty()) r.referrers.push_back(r.root);
    r.pattern = get<std::string>(g, "pattern", r.root);
    if (r.pattern.empty()) r.pattern = r.root;
    r.unreachable = get<bool>(g, "unreachable", false);
    r.nodes = get<int64_t>(g, "nodes", 0);
    r.savedTensors = get<int64_t>(g, "saved_tensors", 0);
    r.savedAlive = get<int64_t>(g, "saved_tensors_alive", 0);
    r.savedReleased = get<int64_t>(g, "saved_tensors_released", 0);
    r.savedHooked = get<int64_t>(g, "hooked_saved_tensors", 0);
    r.savedParameters = get<int64_t>(g, "saved_parameter_tensors", 0);
    r.savedListed = get<bool>(g, "saved_listed", true);
    r.retainedBytes = get<uint64_t>(g, "retained_bytes", 0);
    r.exclusiveBytes = get<uint64_t>(g, "exclusive_bytes", r.retainedBytes);
    r.device = get<std::string>(g, "device");
    r.rootShape = shapeOf(g, "root_shape");
    r.rootDtype = get<std::string>(g, "root_dtype");
    r.rootDevice = get<std::string>(g, "root_device");
    r.rootGradFn = get<std::string>(g, "root_grad_fn");
    r.rootKey = get<std::string>(g, "root_key");
    r.roots = get<int64_t>(g, "roots", 1);
    r.backwardRan = get<bool>(g, "backward_ran", false);
    r.signature = get<std::string>(g, "signature");
    if (g.contains("first_seen") && g["first_seen"].is_number_integer()) r.firstSeen = g["first_seen"].get<int64_t>();
    r.truncated = get<bool>(g, "truncated", false);
    r.detailOmitted = get<bool>(g, "detail_omitted", false);
    if (g.contains("nodes_list") && g["nodes_list"].is_array()) {
        for (const auto& n : g["nodes_list"]) {
            GraphNodeInfo node;
            node.name = get<std::string>(n, "name", "?");
            if (n.is_object() && n.contains("saved") && n["saved"].is_array())
                for (const auto& s : n["saved"]) node.saved.push_back(parseSaved(s));
            if (n.is_object() && n.contains("variable") && n["variable"].is_object()) {
                node.variable = parseSaved(n["variable"]);
                node.variable->inspected = n["variable"].contains("shape");
            }
            node.param = get<bool>(n, "param", node.variable && node.variable->param);
            if (n.is_object() && n.contains("outputs") && n["outputs"].is_array())
                for (const auto& o : n["outputs"]) node.outputs.push_back(parseSaved(o));
            r.nodesList.push_back(std::move(node));
        }
    }
    if (g.contains("edges") && g["edges"].is_array()) {
        const auto n = static_cast<int64_t>(r.nodesList.size());
        for (const auto& e : g["edges"]) {
            if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer()) continue;
            const int64_t a = e[0].get<int64_t>(), b = e[1].get<int64_t>();
            if (a < 0 || b < 0 || a >= n || b >= n) continue;
            r.edges.emplace_back(static_cast<uint32_t>(a), static_cast<uint32_t>(b));
        }
    }
    if (g.contains("storages") && g["storages"].is_array())
        for (const auto& s : g["storages"])
            r.storages.push_back({get<uint64_t>(s, "ptr", 0), get<uint64_t>(s, "bytes", 0), get<std::string>(s, "device")});
    if (r.nodes == 0) r.nodes = static_cast<int64_t>(r.nodesList.size());
    return r;
}

} // namespace

const char* savedStateName(SavedState s) {
    switch (s) {
    case SavedState::Alive: return "alive";
    case SavedState::Released: return "released";
    case SavedState::Hooked: return "hooked";
    }
    return "?";
}

std::string SavedTensorInfo::shapeText() const {
    if (!inspected && shape.empty() && dtype.empty()) return {};
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    s += "]";
    if (!dtype.empty()) s += " " + dtype;
    return s;
}

std::optional<int> cudaDeviceIndex(const std::string& device) {
    if (device == "cuda") return 0;
    if (device.rfind("cuda:", 0) != 0) return std::nullopt;
    return std::atoi(device.c_str() + 5);
}

bool GraphNodeInfo::isAccumulateGrad() const {
    return name.size() >= 14 && name.compare(name.size() - 14, 14, "AccumulateGrad") == 0;
}

std::string GraphNodeInfo::shortName() const {
    const auto p = name.rfind("::");
    return p == std::string::npos ? name : name.substr(p + 2);
}

uint64_t GraphNodeInfo::savedBytes() const {
    uint64_t total = 0;
    std::set<std::pair<std::string, uint64_t>> seen;
    for (const auto& s : saved) {
        if (s.state != SavedState::Alive || s.param || s.modifiedInPlace) continue;
        if (s.ptr && !seen.insert({s.device, *s.ptr}).second) continue;
        total += s.bytes;
    }
    return total;
}

int GraphNodeInfo::savedCount(SavedState st) const {
    int n = 0;
    for (const auto& s : saved) n += s.state == st;
    return n;
}

GraphScanData parseGraphScanJson(const std::string& text, int64_t iteration, const std::string& phase, int64_t timeUs) {
    GraphScanData out;
    out.iteration = iteration;
    out.phase = phase;
    out.timeUs = timeUs;
    Json body = Json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
        out.error = "the stored scan is not a JSON object";
        return out;
    }
    if (body.contains("iteration") && body["iteration"].is_number_integer() && iteration == 0)
        out.iteration = body["iteration"].get<int64_t>();
    if (phase.empty()) out.phase = get<std::string>(body, "phase");
    if (timeUs == 0) out.timeUs = get<int64_t>(body, "time_us", 0);
    out.trigger = get<std::string>(body, "trigger");
    out.partial = get<bool>(body, "partial", false);
    out.partialReason = get<std::string>(body, "partial_reason");
    out.hookDetection = get<std::string>(body, "hook_detection");
    out.walker = get<std::string>(body, "walker", "python");
    out.note = get<std::string>(body, "saved_tensors_note");
    if (out.note.empty()) out.note = get<std::string>(body, "note");
    out.torch = get<std::string>(body, "torch");
    out.scanUs = get<int64_t>(body, "scan_us", 0);
    out.skippedBefore = get<int64_t>(body, "skipped_before", 0);
    out.totalRetainedBytes = get<uint64_t>(body, "total_retained_bytes", 0);
    if (body.contains("graphs") && body["graphs"].is_array())
        for (const auto& g : body["graphs"])
            if (g.is_object()) out.graphs.push_back(parseGraph(g));
    if (!body.contains("total_retained_bytes"))
        for (const auto& g : out.graphs) out.totalRetainedBytes += g.retainedBytes;
    std::stable_sort(out.graphs.begin(), out.graphs.end(),
                     [](const RetainedGraph& a, const RetainedGraph& b) { return a.retainedBytes > b.retainedBytes; });
    return out;
}

GraphScanData parseGraphScan(const GraphScan& stored) {
    GraphScanData d = parseGraphScanJson(stored.json, stored.iteration, stored.phase, stored.timeUs);
    d.id = stored.id;
    d.iteration = stored.iteration;
    d.partial = d.partial || stored.partial;
    return d;
}

// ---- groups and growth -------------------------------------------------------------------------

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

GroupGrowth GraphScans::growth(size_t group, size_t scan) const {
    GroupGrowth out;
    if (group >= groups_.size() || scan >= scans_.size()) return out;
    const RootGroup& grp = groups_[group];
    const auto& pts = grp.points;
    // The scans the growth is read from: complete ones (a partial scan may miss graphs), and the
    // current one whatever it is.
    std::vector<size_t> use;
    for (size_t k = 0; k < scan; ++k)
        if (!scans_[k].partial) use.push_back(k);
    if (use.empty())
        for (size_t k = 0; k < scan; ++k) use.push_back(k);
    use.push_back(scan);
    const size_t last = use.size() - 1;
    if (pts[scan].graphs == 0) {
        out.kind = GroupGrowth::Kind::Gone;
        out.goneAt = scans_[scan].iteration;
        for (size_t u = last; u > 0 && pts[use[u - 1]].graphs == 0; --u) out.goneAt = scans_[use[u - 1]].iteration;
        out.text = "gone at iteration " + std::to_string(out.goneAt);
        if (scans_[scan].partial) out.text += " (partial scan)";
        return out;
    }
    // the run of scans ending at `scan` in which the group is present
    size_t a = last;
    while (a > 0 && pts[use[a - 1]].graphs > 0) --a;
    int64_t oldest = scans_[use[a]].iteration;
    for (size_t gi : graphsOf(group, scan)) {
        const auto& g = scans_[scan].graphs[gi];
        if (g.firstSeen) oldest = std::min(oldest, *g.firstSeen);
    }
    out.since = oldest;
    if (a == last) {
        out.kind = GroupGrowth::Kind::Single;
        out.text = last == 0 ? "first scan" : "new at iteration " + std::to_string(scans_[scan].iteration);
        return out;
    }
    const size_t prev = use[last - 1];
    const int64_t lastDg = pts[scan].graphs - pts[prev].graphs;
    const int64_t lastDb = static_cast<int64_t>(pts[scan].bytes) - static_cast<int64_t>(pts[prev].bytes);
    if (lastDg < 0 || (lastDg == 0 && lastDb < 0)) {
        out.kind = GroupGrowth::Kind::Shrinking;
        out.graphsPerStep = static_cast<double>(lastDg);
        out.bytesPerStep = static_cast<double>(lastDb);
        out.since = scans_[prev].iteration;
        std::string t;
        if (lastDg) t = std::to_string(lastDg) + (lastDg == -1 ? " graph" : " graphs") + ", ";
        t += formatSignedBytes(lastDb) + " since iteration " + std::to_string(scans_[prev].iteration);
        out.text = t;
        return out;
    }
    // Intervals between consecutive scans of the run, and the step into it from a scan without it.
    struct Interval {
        double dg = 0, db = 0;
        std::map<std::string, double> n;  // iterations per phase
        double all = 0;
    };
    std::vector<Interval> intervals;
    std::set<std::string> phases;
    for (size_t u = (a > 0 ? a : 1); u <= last; ++u) {
        const size_t k0 = use[u - 1], k1 = use[u];
        const int64_t dg = pts[k1].graphs - pts[k0].graphs;
        const int64_t db = static_cast<int64_t>(pts[k1].bytes) - static_cast<int64_t>(pts[k0].bytes);
        if (dg < 0 || (dg == 0 && db < 0)) continue;  // a drop: not part of the growth
        Interval iv;
        iv.dg = static_cast<double>(dg);
        iv.db = static_cast<double>(db);
        for (const auto& [phase, count] : iterationsBetween(scans_[k0].iteration, scans_[k1].iteration, k1)) {
            iv.n[phase] += static_cast<double>(count);
            iv.all += static_cast<double>(count);
            phases.insert(phase);
        }
        if (iv.all <= 0) continue;
        intervals.push_back(std::move(iv));
    }
    double totalG = 0, totalB = 0;
    for (const auto& iv : intervals) {
        totalG += iv.dg;
        totalB += iv.db;
    }
    if (intervals.empty() || (totalG == 0 && totalB == 0)) {
        out.kind = GroupGrowth::Kind::Steady;
        out.since = scans_[use[a]].iteration;
        const int64_t n = pts[scan].graphs;
        out.text = "steady: " + std::to_string(n) + (n == 1 ? " graph" : " graphs") + " since iteration " +
                   std::to_string(out.since);
        return out;
    }
    // Which phase's iterations does the growth follow? Least squares per candidate phase; "all"
    // counts every iteration.
    std::set<std::string> sessionPhases;
    for (const auto& it : iterations_) sessionPhases.insert(it.phase);
    if (iterations_.empty())
        for (const auto& s : scans_) sessionPhases.insert(s.phase);
    const bool fitGraphs = totalG != 0;
    const std::string kAll = "\x01all";
    auto stepsOf = [&](const Interval& iv, const std::string& cand) {
        if (cand == kAll) return iv.all;
        auto it = iv.n.find(cand);
        return it == iv.n.end() ? 0.0 : it->second;
    };
    std::string best;
    double bestResidual = -1, bestRate = 0;
    std::vector<std::string> candidates{kAll};
    candidates.insert(candidates.end(), phases.begin(), phases.end());
    for (const auto& cand : candidates) {
        double sumN = 0, sumD = 0;
        for (const auto& iv : intervals) {
            sumN += stepsOf(iv, cand);
            sumD += fitGraphs ? iv.dg : iv.db;
        }
        if (sumN <= 0) continue;
        const double rate = sumD / sumN;
        double residual = 0, scale = 0;
        for (const auto& iv : intervals) {
            const double d = fitGraphs ? iv.dg : iv.db;
            const double e = d - rate * stepsOf(iv, cand);
            residual += e * e;
            scale += d * d;
        }
        residual = scale > 0 ? residual / scale : residual;
        const bool tie = bestResidual >= 0 && std::abs(residual - bestResidual) < 1e-9;
        // on a tie a named phase beats "any iteration" only when the session has several phases
        const bool better = bestResidual < 0 || residual < bestResidual - 1e-9 ||
                            (tie && cand != kAll && best == kAll && sessionPhases.size() > 1);
        if (better) {
            best = cand;
            bestResidual = residual;
            bestRate = rate;
        }
    }
    double sumN = 0;
    for (const auto& iv : intervals) sumN += stepsOf(iv, best);
    out.kind = GroupGrowth::Kind::Growing;
    out.phase = best == kAll ? std::string() : best;
    out.graphsPerStep = fitGraphs ? bestRate : 0.0;
    out.bytesPerStep = sumN > 0 ? totalB / sumN : 0.0;
    out.text = describeGrowth(out);
    return out;
}

namespace {
bool nearInt(double v, double tol = 0.05) { return std::abs(v - std::round(v)) <= tol * std::max(1.0, std::abs(v)); }

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2g", v);
    return buf;
}
} // namespace

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

// ---- folding -----------------------------------------------------------------------------------

namespace {

struct Dag {
    std::vector<std::vector<uint32_t>> out, in;
};

// Nodes that only view, reshape or copy what they get (a weight's transpose, its half copy under
// autocast): they fold with the parameter they lead to.
bool viewLike(const std::string& name) {
    static const char* const kViews[] = {
        "TBackward", "ViewBackward", "ReshapeAliasBackward", "UnsafeViewBackward", "ExpandBackward", "PermuteBackward",
        "TransposeBackward", "ToCopyBackward", "_ToCopyBackward", "SqueezeBackward", "UnsqueezeBackward", "SliceBackward",
        "SelectBackward", "CloneBackward", "AliasBackward", "AsStridedBackward", "NarrowBackward", "ViewAsRealBackward",
        "ViewAsComplexBackward", "ConjBackward", "DetachBackward"};
    for (const char* v : kViews)
        if (name.rfind(v, 0) == 0) return true;
    return false;
}

// Immediate dominators from `root` (Cooper, Harvey, Kennedy); -1 for unreachable nodes.
std::vector<int32_t> dominators(const Dag& g, uint32_t root) {
    const size_t n = g.out.size();
    std::vector<int32_t> post(n, -1), order;
    order.reserve(n);
    std::vector<std::pair<uint32_t, size_t>> stack;
    std::vector<char> seen(n, 0);
    stack.emplace_back(root, 0);
    seen[root] = 1;
    while (!stack.empty()) {
        auto& [v, i] = stack.back();
        if (i < g.out[v].size()) {
            const uint32_t w = g.out[v][i++];
            if (!seen[w]) {
                seen[w] = 1;
                stack.emplace_back(w, 0);
            }
        } else {
            post[v] = static_cast<int32_t>(order.size());
            order.push_back(v);
            stack.pop_back();
        }
    }
    std::vector<int32_t> idom(n, -1);
    idom[root] = static_cast<int32_t>(root);
    auto intersect = [&](int32_t b1, int32_t b2) {
        while (b1 != b2) {
            while (post[b1] < post[b2]) b1 = idom[b1];
            while (post[b2] < post[b1]) b2 = idom[b2];
        }
        return b1;
    };
    bool changed = true;
    while (changed) {
        changed = false;
        for (auto it = order.rbegin(); it != order.rend(); ++it) {
            const uint32_t b = *it;
            if (b == root) continue;
            int32_t nd = -1;
            for (uint32_t p : g.in[b]) {
                if (idom[p] < 0) continue;
                nd = nd < 0 ? static_cast<int32_t>(p) : intersect(static_cast<int32_t>(p), nd);
            }
            if (nd >= 0 && idom[b] != nd) {
                idom[b] = nd;
                changed = true;
            }
        }
    }
    return idom;
}

} // namespace

FoldedGraph foldGraph(const RetainedGraph& graph, const GraphFoldOptions& options) {
    FoldedGraph out;
    const auto& nodes = graph.nodesList;
    const size_t n = nodes.size();
    out.originalNodes = n;
    out.originalEdges = graph.edges.size();
    out.nodeOf.assign(n, -1);
    if (n == 0) return out;

    Dag full;
    full.out.resize(n);
    full.in.resize(n);
    for (const auto& [a, b] : graph.edges) {
        if (a >= n || b >= n || a == b) continue;
        full.out[a].push_back(b);
        full.in[b].push_back(a);
    }

    // 1. parameter subtrees: parameter AccumulateGrad nodes, and nodes that save nothing of their
    // own and lead only to such nodes (TBackward0, ViewBackward0, ToCopyBackward0 ... of a weight)
    // (computed whether or not they are folded: the search for repeated blocks ignores them)
    std::vector<char> paramOnly(n, 0);
    {
        std::vector<char> state(n, 0);  // 0 new, 1 on stack, 2 done
        for (uint32_t s = 0; s < n; ++s) {
            if (state[s]) continue;
            std::vector<std::pair<uint32_t, size_t>> stack{{s, 0}};
            state[s] = 1;
            while (!stack.empty()) {
                auto& [v, i] = stack.back();
                if (i < full.out[v].size()) {
                    const uint32_t w = full.out[v][i++];
                    if (!state[w]) {
                        state[w] = 1;
                        stack.emplace_back(w, 0);
                    }
                    continue;
                }
                const auto& nd = nodes[v];
                bool p = false;
                if (nd.isAccumulateGrad()) {
                    p = nd.param;
                } else if (v != 0 && !full.out[v].empty()) {
                    // a view or copy of a weight, or a node whose saved tensors are all parameters
                    p = viewLike(nd.name) ||
                        (graph.savedListed && !nd.saved.empty() &&
                         std::all_of(nd.saved.begin(), nd.saved.end(), [](const SavedTensorInfo& t) { return t.param; }));
                    for (uint32_t w : full.out[v]) p = p && state[w] == 2 && paramOnly[w];
                }
                paramOnly[v] = p;
                state[v] = 2;
                stack.pop_back();
            }
        }
        paramOnly[0] = 0;
    }

    // the graph shown: without the parameter subtrees when they fold
    std::vector<int32_t> keep(n, -1);
    std::vector<uint32_t> kept;
    for (uint32_t v = 0; v < n; ++v)
        if (!options.parameters || !paramOnly[v]) {
            keep[v] = static_cast<int32_t>(kept.size());
            kept.push_back(v);
        }
    const size_t k = kept.size();
    Dag g;
    g.out.resize(k);
    g.in.resize(k);
    for (uint32_t v : kept)
        for (uint32_t w : full.out[v])
            if (keep[w] >= 0) {
                g.out[keep[v]].push_back(static_cast<uint32_t>(keep[w]));
                g.in[keep[w]].push_back(static_cast<uint32_t>(keep[v]));
            }
    // parameters each kept node uses (through param-only nodes)
    std::vector<std::vector<uint32_t>> params(k);
    for (uint32_t v : kept) {
        if (!options.parameters) break;
        std::set<uint32_t> found, visited;
        std::vector<uint32_t> todo;
        for (uint32_t w : full.out[v])
            if (paramOnly[w]) todo.push_back(w);
        while (!todo.empty()) {
            const uint32_t w = todo.back();
            todo.pop_back();
            if (!visited.insert(w).second) continue;
            if (nodes[w].isAccumulateGrad()) found.insert(w);
            for (uint32_t x : full.out[w]) todo.push_back(x);
        }
        params[keep[v]].assign(found.begin(), found.end());
    }
    for (uint32_t v = 0; v < n; ++v)
        if (options.parameters && paramOnly[v] && nodes[v].isAccumulateGrad()) ++out.foldedParameters;

    // 2. repeated structure: segments between the dominators of every sink, compared by shape
    std::vector<int32_t> copyOf(k, -1);      // kept index -> kept index of its first copy
    std::vector<int32_t> copyNumber(k, 0);   // which copy it belongs to
    std::vector<int32_t> runOf(k, -1);       // which run
    std::vector<char> copyStart(k, 0);       // the first node of a copy (where the copy before leads)
    struct Run {
        int count;
        int nodesPerBlock;
        std::vector<uint32_t> firstCopy;  // kept indices
    };
    std::vector<Run> runs;
    if (options.repeats && k >= 4) {
        // dominators over the graph without parameter subtrees (their AccumulateGrad nodes would
        // be dead ends all over the graph), plus a virtual sink T = k after every dead end
        auto core = [&](uint32_t v) { return !paramOnly[kept[v]]; };
        Dag h;
        h.out.resize(k + 1);
        h.in.resize(k + 1);
        const auto sink = static_cast<uint32_t>(k);
        for (uint32_t v = 0; v < k; ++v) {
            if (!core(v)) continue;
            for (uint32_t w : g.out[v])
                if (core(w)) {
                    h.out[v].push_back(w);
                    h.in[w].push_back(v);
                }
            if (h.out[v].empty()) {
                h.out[v].push_back(sink);
                h.in[sink].push_back(v);
            }
        }
        const std::vector<int32_t> idom = dominators(h, 0);
        if (idom[sink] >= 0) {
            std::vector<uint32_t> chain;
            for (int32_t d = idom[sink];; d = idom[d]) {
                chain.push_back(static_cast<uint32_t>(d));
                if (d == 0) break;
            }
            std::reverse(chain.begin(), chain.end());
            std::vector<int32_t> chainPos(k + 1, -1);
            for (size_t i = 0; i < chain.size(); ++i) chainPos[chain[i]] = static_cast<int32_t>(i);
            std::vector<int32_t> seg(k, -1);
            for (uint32_t v = 0; v < k; ++v) {
                if (!core(v) || idom[v] < 0) continue;
                int32_t x = static_cast<int32_t>(v);
                while (chainPos[x] < 0 && x != idom[x]) x = idom[x];
                seg[v] = chainPos[x];
            }
            // shown parameter subtrees belong to the segment of the node that uses them
            for (uint32_t v = 0; v < k; ++v) {
                if (!core(v) || seg[v] < 0) continue;
                std::vector<uint32_t> todo{v};
                while (!todo.empty()) {
                    const uint32_t x = todo.back();
                    todo.pop_back();
                    for (uint32_t w : g.out[x])
                        if (!core(w) && seg[w] < 0) {
                            seg[w] = seg[v];
                            todo.push_back(w);
                        }
                }
            }
            // each segment in BFS order from its chain node, and its shape as a string
            const size_t m = chain.size();
            std::vector<std::vector<uint32_t>> members(m);
            std::vector<std::string> shape(m);
            std::vector<int32_t> pos(k, -1);
            for (size_t i = 0; i < m; ++i) {
                auto& order = members[i];
                order.push_back(chain[i]);
                pos[chain[i]] = 0;
                for (size_t q = 0; q < order.size(); ++q)
                    for (uint32_t w : g.out[order[q]])
                        if (seg[w] == static_cast<int32_t>(i) && pos[w] < 0) {
                            pos[w] = static_cast<int32_t>(order.size());
                            order.push_back(w);
                        }
                std::string s;
                for (uint32_t v : order) {
                    s += nodes[kept[v]].name;
                    s += '#';
                    s += std::to_string(params[v].size());
                    s += '(';
                    // edges inside the segment only: the last block of a run leads elsewhere
                    for (uint32_t w : g.out[v])
                        if (seg[w] == static_cast<int32_t>(i)) {
                            s += std::to_string(pos[w]);
                            s += ',';
                        }
                    s += ')';
                }
                shape[i] = std::move(s);
            }
            // runs of identical consecutive blocks of p segments
            size_t i = 0;
            while (i < m) {
                size_t bestP = 0, bestR = 0;
                for (size_t p = 1; p <= static_cast<size_t>(std::max(1, options.maxPeriod)) && i + 2 * p <= m; ++p) {
                    size_t r = 1;
                    while (i + (r + 1) * p <= m) {
                        bool same = true;
                        for (size_t q = 0; q < p && same; ++q) same = shape[i + r * p + q] == shape[i + q];
                        if (!same) break;
                        ++r;
                    }
                    if (r >= static_cast<size_t>(std::max(2, options.minRepeats)) && r * p > bestR * bestP) {
                        bestP = p;
                        bestR = r;
                    }
                }
                if (!bestP) {
                    ++i;
                    continue;
                }
                Run run;
                run.count = static_cast<int>(bestR);
                run.nodesPerBlock = 0;
                const int id = static_cast<int>(runs.size());
                for (size_t c = 0; c < bestR; ++c)
                    for (size_t q = 0; q < bestP; ++q) {
                        const auto& first = members[i + q];
                        const auto& mine = members[i + c * bestP + q];
                        for (size_t t = 0; t < mine.size(); ++t) {
                            copyOf[mine[t]] = static_cast<int32_t>(first[t]);
                            copyNumber[mine[t]] = static_cast<int32_t>(c);
                            runOf[mine[t]] = id;
                            copyStart[mine[t]] = q == 0 && t == 0;
                            if (c == 0) {
                                run.firstCopy.push_back(first[t]);
                                ++run.nodesPerBlock;
                            }
                        }
                    }
                runs.push_back(std::move(run));
                i += bestP * bestR;
            }
        }
    }

    // 3. the folded nodes: kept nodes that are not later copies
    std::vector<int32_t> folded(k, -1);
    for (uint32_t v = 0; v < k; ++v) {
        if (copyOf[v] >= 0 && copyOf[v] != static_cast<int32_t>(v)) continue;
        folded[v] = static_cast<int32_t>(out.nodes.size());
        FoldedNode f;
        f.representative = kept[v];
        f.name = nodes[kept[v]].shortName();
        f.repeat = runOf[v];
        for (uint32_t p : params[v]) f.parameterNodes.push_back(p);
        out.nodes.push_back(std::move(f));
    }
    for (uint32_t v = 0; v < k; ++v) {
        const uint32_t rep = copyOf[v] >= 0 ? static_cast<uint32_t>(copyOf[v]) : v;
        const int32_t fi = folded[rep];
        FoldedNode& f = out.nodes[fi];
        const auto& nd = nodes[kept[v]];
        f.members.push_back(kept[v]);
        f.copies = static_cast<int>(f.members.size());
        f.savedBytes += nd.savedBytes();
        f.savedAlive += nd.savedCount(SavedState::Alive);
        f.savedReleased += nd.savedCount(SavedState::Released);
        f.savedHooked += nd.savedCount(SavedState::Hooked);
        f.parameters += static_cast<int>(params[v].size());
        for (uint32_t p : params[v]) {
            const auto& var = nodes[p].variable;
            if (var) f.parameterBytes += var->bytes;
        }
        out.nodeOf[kept[v]] = fi;
        for (uint32_t p : params[v])
            if (out.nodeOf[p] < 0) out.nodeOf[p] = fi;
    }
    // param-only nodes not reached above (views of a parameter): the node of whoever uses them
    for (uint32_t v = 0; v < n; ++v) {
        if (out.nodeOf[v] >= 0 || !paramOnly[v]) continue;
        for (uint32_t u : full.in[v])
            if (out.nodeOf[u] >= 0) {
                out.nodeOf[v] = out.nodeOf[u];
                break;
            }
    }
    for (const Run& r : runs) {
        FoldedRepeat rep;
        rep.count = r.count;
        rep.nodesPerBlock = r.nodesPerBlock;
        for (uint32_t v : r.firstCopy) rep.nodes.push_back(static_cast<uint32_t>(folded[v]));
        rep.label = "\u00d7 " + std::to_string(r.count) + " identical blocks of " + std::to_string(r.nodesPerBlock) +
                    (r.nodesPerBlock == 1 ? " node" : " nodes");
        out.repeats.push_back(std::move(rep));
    }

    // 4. edges
    std::map<std::pair<uint32_t, uint32_t>, int> edges;
    std::vector<std::pair<uint32_t, uint32_t>> order;
    for (uint32_t v = 0; v < k; ++v)
        for (uint32_t w : g.out[v]) {
            // the way from one copy into the next is the way into the copy shown: dropped
            if (runOf[v] >= 0 && runOf[v] == runOf[w] && copyNumber[v] != copyNumber[w] && copyStart[w]) continue;
            const auto a = static_cast<uint32_t>(out.nodeOf[kept[v]]);
            const auto b = static_cast<uint32_t>(out.nodeOf[kept[w]]);
            if (a == b) continue;
            auto [it, fresh] = edges.emplace(std::make_pair(a, b), 0);
            if (fresh) order.emplace_back(a, b);
            ++it->second;
        }
    for (const auto& e : order) out.edges.push_back({e.first, e.second, edges[e]});
    return out;
}

} // namespace memlens::model
