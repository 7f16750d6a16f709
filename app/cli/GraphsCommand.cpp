// memlens-cli graphs: the retained-graph scans of a session (written by the Python agent,
// capture/python/memlens_agent/README-graphs.md).
//
//   memlens-cli graphs FILE --json [--detail]
//     {"scans": [{"iteration", "phase", "time_us", "partial", "graphs": [{"root", "referrers",
//       "nodes", "saved_tensors", "saved_tensors_alive", "hooked_saved_tensors", "retained_bytes",
//       "device", ...}]}]}
//   --detail adds each graph's nodes_list, edges and storages.
//   Without --json: one line per graph, then which referrer patterns grew from scan to scan.
#include "CliArgs.h"
#include "Commands.h"

#include "memlens/model/ByteFormat.h"
#include "memlens/model/SessionFile.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace memlens::cli {

namespace {

using Json = nlohmann::ordered_json;

// Graph fields copied by --json, in this order: the contract's, then the summary extras.
const char* const kGraphFields[] = {
    "root", "referrers", "nodes", "saved_tensors", "saved_tensors_alive", "hooked_saved_tensors",
    "retained_bytes", "device",
    "saved_tensors_released", "saved_parameter_tensors", "exclusive_bytes", "backward_ran", "unreachable",
    "pattern", "first_seen", "root_shape", "root_dtype", "root_device", "root_grad_fn", "roots", "signature",
    "truncated", "saved_listed"};
const char* const kDetailFields[] = {"nodes_list", "edges", "storages"};
// Scan-level extras after the contract's fields.
const char* const kScanFields[] = {"trigger", "partial_reason", "hook_detection", "scan_us", "total_retained_bytes",
                                   "torch", "skipped_before", "walker", "saved_tensors_note"};

Json scanJson(const model::GraphScan& s, bool detail) {
    Json out;
    out["iteration"] = s.iteration;
    out["phase"] = s.phase;
    out["time_us"] = s.timeUs;
    out["partial"] = s.partial;
    Json body = Json::parse(s.json, nullptr, false);
    Json graphs = Json::array();
    if (body.is_discarded() || !body.is_object()) {
        out["error"] = "the stored scan is not a JSON object";
        out["graphs"] = std::move(graphs);
        return out;
    }
    if (body.contains("partial") && body["partial"].is_boolean()) out["partial"] = s.partial || body["partial"].get<bool>();
    for (const char* k : kScanFields)
        if (body.contains(k)) out[k] = body[k];
    if (body.contains("graphs") && body["graphs"].is_array()) {
        for (const auto& g : body["graphs"]) {
            if (!g.is_object()) continue;
            Json o;
            for (const char* k : kGraphFields)
                if (g.contains(k)) o[k] = g[k];
            if (detail)
                for (const char* k : kDetailFields)
                    if (g.contains(k)) o[k] = g[k];
            graphs.push_back(std::move(o));
        }
    }
    out["graphs"] = std::move(graphs);
    return out;
}

template <class T> T field(const Json& j, const char* k, T fallback) {
    auto it = j.find(k);
    if (it == j.end()) return fallback;
    try {
        return it->get<T>();
    } catch (const std::exception&) {
        return fallback;
    }
}

void printText(const Json& scans) {
    if (scans.empty()) {
        std::cout << "no graph scans in this session\n";
        return;
    }
    // pattern -> graphs per scan, for the growth summary
    std::map<std::string, std::vector<std::pair<int64_t, size_t>>> growth;
    for (const auto& s : scans) {
        const auto& graphs = s["graphs"];
        uint64_t total = field<uint64_t>(s, "total_retained_bytes", 0);
        std::cout << "scan at iteration " << field<int64_t>(s, "iteration", 0);
        std::string phase = field<std::string>(s, "phase", "");
        std::string trigger = field<std::string>(s, "trigger", "");
        if (!phase.empty()) std::cout << " (" << phase << (trigger.empty() ? "" : ", " + trigger) << ")";
        std::cout << ": " << graphs.size() << (graphs.size() == 1 ? " graph" : " graphs") << ", "
                  << model::formatBytes(total) << " retained";
        if (field<bool>(s, "partial", false)) std::cout << " (partial: " << field<std::string>(s, "partial_reason", "") << ")";
        std::cout << "\n";
        if (s.contains("saved_tensors_note")) std::cout << "  (" << field<std::string>(s, "saved_tensors_note", "") << ")\n";
        // Graphs that share a referrer pattern (validate.kept_outputs[*]) are listed as one line
        // from three on.
        std::map<std::string, std::vector<const Json*>> perPattern;
        std::vector<std::string> order;
        for (const auto& g : graphs) {
            std::string p = field<std::string>(g, "pattern", field<std::string>(g, "root", ""));
            if (perPattern[p].empty()) order.push_back(p);
            perPattern[p].push_back(&g);
        }
        for (const auto& p : order) {
            const auto& members = perPattern[p];
            if (members.size() >= 3) {
                uint64_t bytes = 0;
                int64_t alive = 0, hooked = 0, since = -1, ran = 0;
                for (const Json* g : members) {
                    bytes += field<uint64_t>(*g, "retained_bytes", 0);
                    alive += field<int64_t>(*g, "saved_tensors_alive", 0);
                    hooked += field<int64_t>(*g, "hooked_saved_tensors", 0);
                    ran += field<bool>(*g, "backward_ran", false) ? 1 : 0;
                    int64_t f = field<int64_t>(*g, "first_seen", -1);
                    if (f >= 0 && (since < 0 || f < since)) since = f;
                }
                std::cout << "  " << model::formatBytes(bytes) << "  " << members.size() << " graphs like " << p << ": ";
                if (!field<bool>(*members.front(), "saved_listed", true)) std::cout << "saved tensors not listed";
                else if (ran == static_cast<int64_t>(members.size())) std::cout << "backward ran on all (saved tensors released)";
                else std::cout << alive << " saved tensors alive";
                if (hooked) std::cout << ", " << hooked << " hooked";
                if (since >= 0) std::cout << ", since iteration " << since;
                std::cout << " [" << field<std::string>(*members.front(), "device", "") << "]\n";
                continue;
            }
            for (const Json* gp : members) {
                const Json& g = *gp;
                int64_t alive = field<int64_t>(g, "saved_tensors_alive", 0);
                int64_t hooked = field<int64_t>(g, "hooked_saved_tensors", 0);
                std::cout << "  " << model::formatBytes(field<uint64_t>(g, "retained_bytes", 0)) << "  "
                          << field<std::string>(g, "root", "?") << ": " << field<int64_t>(g, "nodes", 0) << " nodes, ";
                if (!field<bool>(g, "saved_listed", true)) std::cout << "saved tensors not listed";
                else if (field<bool>(g, "backward_ran", false)) std::cout << "backward ran (saved tensors released)";
                else std::cout << alive << " saved tensor" << (alive == 1 ? "" : "s") << " alive";
                if (hooked) std::cout << ", " << hooked << " hooked";
                if (field<bool>(g, "unreachable", false)) std::cout << ", only a reference cycle keeps it";
                if (g.contains("first_seen")) std::cout << ", since iteration " << field<int64_t>(g, "first_seen", 0);
                std::cout << " [" << field<std::string>(g, "device", "") << "]\n";
            }
        }
        for (const auto& [p, members] : perPattern)
            growth[p].push_back({field<int64_t>(s, "iteration", 0), members.size()});
    }
    bool header = false;
    for (const auto& [pattern, counts] : growth) {
        if (counts.size() < 2 || counts.back().second <= counts.front().second) continue;
        if (!header) std::cout << "growing:\n";
        header = true;
        std::cout << "  " << pattern << ": " << counts.front().second << " at iteration " << counts.front().first
                  << ", " << counts.back().second << " at iteration " << counts.back().first << "\n";
    }
}

} // namespace

int graphsCommand(const std::vector<std::string>& args) {
    CliArgs a(args, {"json", "detail"}, {});
    if (a.positional().size() != 1) throw UsageError("graphs takes exactly one FILE");
    const std::string file = a.positional()[0];
    try {
        model::SessionFile f(file);
        Json scans = Json::array();
        for (const auto& s : f.graphScans()) scans.push_back(scanJson(s, a.has("detail")));
        if (!a.has("json")) {
            printText(scans);
            return 0;
        }
        Json out;
        out["scans"] = std::move(scans);
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        return 0;
    } catch (const model::SessionError& e) {
        std::cout.flush();
        std::cerr << file << ": " << e.what() << "\n";
        return 1;
    }
}

} // namespace memlens::cli
