#pragma once
// Hand-built graph scans (the JSON the Python agent writes, README-graphs.md) for the graph tests.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace graphtest {

using Json = nlohmann::json;

// A node of a hand-built graph.
// saved: a vector, not a Json: `Json x = {oneObject}` is a one-element array with one compiler
// and a copy of the object with another (nlohmann-json's brace-initialisation pitfall; GCC 12 and
// Clang 14 disagree here).
inline Json node(const std::string& name, const std::vector<Json>& saved = {}) {
    Json list = Json::array();
    for (const Json& s : saved) list.push_back(s);
    return Json{{"name", name}, {"saved", std::move(list)}};
}
inline Json param(const std::vector<int64_t>& shape, uint64_t bytes) {
    return Json{{"name", "torch::autograd::AccumulateGrad"},
                {"saved", Json::array()},
                {"variable", {{"name", "variable"}, {"shape", shape}, {"dtype", "float32"}, {"device", "cuda:0"},
                              {"bytes", bytes}, {"ptr", 0x1000}, {"param", true}}},
                {"param", true}};
}
inline Json saved(const std::string& name, uint64_t bytes, uint64_t ptr, const std::string& state = "alive",
                  bool isParam = false) {
    Json s{{"name", name}, {"state", state}};
    if (state == "alive") {
        s["shape"] = {static_cast<int64_t>(bytes / 4)};
        s["dtype"] = "float32";
        s["device"] = "cuda:0";
        s["bytes"] = bytes;
        s["ptr"] = ptr;
    }
    if (isParam) s["param"] = true;
    return s;
}

// A graph object with only the summary fields the grouping reads.
inline Json graph(const std::string& root, const std::string& pattern, uint64_t bytes, int64_t firstSeen = -1,
                  int alive = 2, int released = 0) {
    Json g{{"root", root}, {"referrers", {root}}, {"pattern", pattern}, {"nodes", 3}, {"saved_tensors", alive + released},
           {"saved_tensors_alive", alive}, {"saved_tensors_released", released}, {"hooked_saved_tensors", 0},
           {"retained_bytes", bytes}, {"device", "cuda:0"}, {"nodes_list", Json::array()}, {"edges", Json::array()}};
    if (firstSeen >= 0) g["first_seen"] = firstSeen;
    return g;
}

inline std::string scanText(const std::vector<Json>& graphs, bool partial = false) {
    Json s{{"partial", partial}, {"hook_detection", "memory"}, {"graphs", graphs}};
    return s.dump();
}

} // namespace graphtest
