#include "memlens/model/GraphScanJson.h"

#include "JsonField.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace memlens::model {

using Json = nlohmann::json;

namespace {

using json_field::get;

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

} // namespace memlens::model
