// memlens::capture::watch: retained-graph scans of the roots a C++ program names (Watch.h). The
// second translation unit of memlens_capture with Torch headers: the autograd Node API
// (torch/csrc/autograd/function.h) and AccumulateGrad.
#include "memlens/capture/Watch.h"

#include "memlens/capture/Session.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace memlens::capture {

using nlohmann::json;

namespace {

constexpr const char* kSavedNote = "saved tensors: not listed (LibTorch does not expose them)";
constexpr size_t kMaxDetailNodes = 2000;         // nodes listed per graph (as the agent)
constexpr size_t kMaxDetailNodesPerScan = 20000;
constexpr size_t kMaxDetailGraphs = 50;
constexpr size_t kMaxWalkNodes = 200000;         // a graph walk stops here (truncated)

using WeakTensor = c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>;

struct Root {
    std::string name;
    WeakTensor tensor;
};

std::mutex gMu;
std::vector<Root> gRoots;  // in the order they were watched
// first_seen across scans, as the agent's GraphHistory: (tensor, grad_fn name, shape) -> iteration;
// keys gone from a scan are forgotten (their addresses may be reused)
std::map<std::tuple<const void*, std::string, std::vector<int64_t>>, int64_t> gFirstSeen;

std::string dtypeName(c10::ScalarType t) {
    switch (t) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: return c10::toString(t);
    }
}

std::string deviceName(const c10::Device& d) { return d.str(); }

std::vector<int64_t> sizesOf(const at::Tensor& t) {
    std::vector<int64_t> out;
    if (!t.defined()) return out;
    try {
        for (int64_t s : t.sizes()) out.push_back(s);
    } catch (const std::exception&) {  // sizes of a symbolic or nested tensor
    }
    return out;
}

// The gradient a node receives as its input i: the shape and dtype of the forward output.
// LibTorch 1.13 keeps the shape private; 2.x has shape_as_dim_vector() public.
template <class M>
json metadataJson(const M& m) {
    json o = json::object();
    try {
        o["dtype"] = dtypeName(c10::typeMetaToScalarType(m.dtype()));
        o["device"] = deviceName(m.device());
        if constexpr (requires(const M& x) { x.shape_as_dim_vector(); }) {
            json shape = json::array();
            for (const auto& s : m.shape_as_dim_vector()) {
                if constexpr (requires { s.as_int_unchecked(); }) shape.push_back(s.as_int_unchecked());
                else shape.push_back(static_cast<int64_t>(s));
            }
            o["shape"] = std::move(shape);
        }
    } catch (const std::exception&) {
    }
    return o;
}

struct StorageKey {
    std::string device;
    uint64_t ptr = 0;
    bool operator<(const StorageKey& o) const { return std::tie(device, ptr) < std::tie(o.device, o.ptr); }
};

// (key or none, bytes, device) of a tensor's storage
std::tuple<std::optional<StorageKey>, uint64_t, std::string> storageOf(const at::Tensor& t) {
    std::string dev;
    try {
        dev = deviceName(t.device());
    } catch (const std::exception&) {
        dev = "?";
    }
    try {
        if (t.has_storage()) {
            const auto& st = t.storage();
            const auto ptr = reinterpret_cast<uint64_t>(st.data());
            const auto nb = static_cast<uint64_t>(st.nbytes());
            if (ptr) return {StorageKey{dev, ptr}, nb, dev};
            return {std::nullopt, nb, dev};
        }
        return {std::nullopt, static_cast<uint64_t>(t.numel()) * t.element_size(), dev};
    } catch (const std::exception&) {
        return {std::nullopt, 0, dev};
    }
}

json tensorEntry(const at::Tensor& t, const char* name) {
    auto [key, nb, dev] = storageOf(t);
    json e = {{"name", name}, {"shape", sizesOf(t)}, {"dtype", dtypeName(t.scalar_type())}, {"device", dev}, {"bytes", nb},
              {"ptr", key ? json(key->ptr) : json(nullptr)}};
    return e;
}

std::string hex(uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string signatureOf(const std::vector<std::string>& names, size_t nodes) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    auto mix = [&](const std::string& s) {
        for (unsigned char c : s) {
            h ^= c;
            h *= 1099511628211ull;
        }
        h ^= ',';
        h *= 1099511628211ull;
    };
    for (const auto& n : names) mix(n);
    mix(std::to_string(nodes));
    std::string s = hex(h);
    while (s.size() < 16) s.insert(s.begin(), '0');
    return s.substr(0, 12);
}

// "train_losses[2]" before "train_losses[10]"
bool naturalLess(const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            size_t i2 = i, j2 = j;
            while (i2 < a.size() && std::isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
            while (j2 < b.size() && std::isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
            const std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
            if (x.size() != y.size()) return x.size() < y.size();
            if (x != y) return x < y;
            i = i2;
            j = j2;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

struct Walked {
    std::vector<torch::autograd::Node*> order;
    std::vector<std::pair<size_t, size_t>> edges;
    bool truncated = false;
};

Walked walk(torch::autograd::Node* root) {
    Walked w;
    std::unordered_map<torch::autograd::Node*, size_t> index{{root, 0}};
    w.order.push_back(root);
    for (size_t i = 0; i < w.order.size(); ++i) {
        for (const auto& e : w.order[i]->next_edges()) {
            torch::autograd::Node* next = e.function.get();
            if (!next) continue;
            auto it = index.find(next);
            if (it == index.end()) {
                if (w.order.size() >= kMaxWalkNodes) {
                    w.truncated = true;
                    continue;
                }
                it = index.emplace(next, w.order.size()).first;
                w.order.push_back(next);
            }
            w.edges.emplace_back(i, it->second);
        }
    }
    return w;
}

bool scansOn(const json& extra) {
    auto it = extra.find("graph_scans");
    return it == extra.end() || !it->is_boolean() || it->get<bool>();
}

int64_t intOf(const json& extra, const char* key, int64_t fallback) {
    auto it = extra.find(key);
    return it != extra.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

} // namespace

void watch(const at::Tensor& tensor, std::string name) {
    if (!tensor.defined()) return;
    std::lock_guard<std::mutex> lock(gMu);
    WeakTensor weak(tensor.getIntrusivePtr());
    for (auto& r : gRoots)
        if (r.name == name) {
            r.tensor = std::move(weak);
            return;
        }
    gRoots.push_back({std::move(name), std::move(weak)});
}

void unwatch(const std::string& name) {
    std::lock_guard<std::mutex> lock(gMu);
    std::erase_if(gRoots, [&](const Root& r) { return r.name == name; });
}

void unwatchAll() {
    std::lock_guard<std::mutex> lock(gMu);
    gRoots.clear();
    gFirstSeen.clear();
}

size_t watchedCount() {
    std::lock_guard<std::mutex> lock(gMu);
    return gRoots.size();
}

json scanWatched(int64_t iteration, std::string_view phase, std::string_view trigger) {
    const auto t0 = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(gMu);
    // the live roots; holding them (and so their graphs) only while the scan runs
    std::vector<std::pair<std::string, at::Tensor>> live;
    for (auto& r : gRoots) {
        auto strong = r.tensor.lock();
        if (!strong || strong.get() == c10::UndefinedTensorImpl::singleton()) continue;
        at::Tensor t(std::move(strong));
        if (t.defined() && t.grad_fn()) live.emplace_back(r.name, std::move(t));
    }
    std::erase_if(gRoots, [](const Root& r) { return r.tensor.expired(); });

    // roots that share a grad_fn node are one graph
    struct Group {
        std::shared_ptr<torch::autograd::Node> fn;
        std::vector<size_t> members;  // into live
    };
    std::vector<Group> groups;
    std::unordered_map<torch::autograd::Node*, size_t> groupOf;
    for (size_t i = 0; i < live.size(); ++i) {
        auto fn = live[i].second.grad_fn();
        auto [it, fresh] = groupOf.emplace(fn.get(), groups.size());
        if (fresh) groups.push_back({fn, {}});
        groups[it->second].members.push_back(i);
    }

    std::vector<json> graphs;
    std::vector<std::map<StorageKey, uint64_t>> graphStorages;
    decltype(gFirstSeen) seen;
    bool anyTruncated = false;
    for (auto& grp : groups) {
        std::sort(grp.members.begin(), grp.members.end(), [&](size_t a, size_t b) {
            const auto& x = live[a].first;
            const auto& y = live[b].first;
            return x.size() != y.size() ? x.size() < y.size() : naturalLess(x, y);
        });
        const at::Tensor& main = live[grp.members.front()].second;
        const Walked w = walk(grp.fn.get());
        anyTruncated = anyTruncated || w.truncated;
        std::map<StorageKey, uint64_t> storages;
        for (size_t m : grp.members) {
            auto [key, nb, dev] = storageOf(live[m].second);
            if (key) storages[*key] = nb;
        }
        json nodes = json::array();
        std::vector<std::string> names;
        for (size_t n = 0; n < w.order.size(); ++n) {
            torch::autograd::Node* node = w.order[n];
            std::string name;
            try {
                name = node->name();
            } catch (const std::exception&) {
                name = "?";
            }
            if (names.size() < 64) names.push_back(name);
            if (n >= kMaxDetailNodes) continue;
            json d = {{"name", name}, {"saved", json::array()}};
            json outputs = json::array();
            for (uint32_t i = 0; i < node->num_inputs(); ++i) {
                json o = metadataJson(node->input_metadata(i));
                o["name"] = "output[" + std::to_string(i) + "]";
                outputs.push_back(std::move(o));
            }
            if (!outputs.empty()) d["outputs"] = std::move(outputs);
            if (auto* acc = dynamic_cast<torch::autograd::AccumulateGrad*>(node)) {
                if (acc->variable.defined()) {
                    // a leaf that requires grad: in a C++ program, as good as always a parameter
                    json v = tensorEntry(acc->variable, "variable");
                    v["param"] = true;
                    d["variable"] = std::move(v);
                    d["param"] = true;
                }
            }
            nodes.push_back(std::move(d));
        }
        json edges = json::array();
        for (const auto& [a, b] : w.edges)
            if (a < kMaxDetailNodes && b < kMaxDetailNodes) edges.push_back({a, b});
        uint64_t retained = 0;
        std::map<std::string, uint64_t> byDevice;
        json storageList = json::array();
        for (const auto& [k, nb] : storages) {
            retained += nb;
            byDevice[k.device] += nb;
            storageList.push_back({{"ptr", k.ptr}, {"bytes", nb}, {"device", k.device}});
        }
        auto [rootKey, rootBytes, rootDev] = storageOf(main);
        std::string device = rootDev;
        uint64_t most = 0;
        for (const auto& [d, nb] : byDevice)
            if (nb > most) {
                most = nb;
                device = d;
            }
        json referrers = json::array();
        for (size_t m : grp.members) referrers.push_back(live[m].first);
        const std::string root = live[grp.members.front()].first;
        const std::string rootName = names.empty() ? std::string("?") : names.front();
        const auto seenKey = std::make_tuple(static_cast<const void*>(main.unsafeGetTensorImpl()), rootName, sizesOf(main));
        auto first = gFirstSeen.find(seenKey);
        const int64_t firstSeen = first != gFirstSeen.end() ? first->second : iteration;
        seen[seenKey] = firstSeen;
        json g = {{"root", root},
                  {"referrers", std::move(referrers)},
                  {"pattern", std::regex_replace(root, std::regex(R"(\[\d+\])"), "[*]")},
                  {"unreachable", false},
                  {"nodes", w.order.size()},
                  {"saved_tensors", 0},
                  {"saved_tensors_alive", 0},
                  {"saved_tensors_released", 0},
                  {"hooked_saved_tensors", 0},
                  {"saved_parameter_tensors", 0},
                  {"saved_listed", false},
                  {"retained_bytes", retained},
                  {"device", device},
                  {"root_shape", sizesOf(main)},
                  {"root_dtype", dtypeName(main.scalar_type())},
                  {"root_device", rootDev},
                  {"root_grad_fn", rootName},
                  {"root_key", hex(reinterpret_cast<uint64_t>(main.unsafeGetTensorImpl()))},
                  {"roots", grp.members.size()},
                  {"backward_ran", false},
                  {"signature", signatureOf(names, w.order.size())},
                  {"first_seen", firstSeen},
                  {"nodes_list", std::move(nodes)},
                  {"edges", std::move(edges)},
                  {"storages", std::move(storageList)},
                  {"truncated", w.truncated || w.order.size() > kMaxDetailNodes}};
        graphs.push_back(std::move(g));
        graphStorages.push_back(std::move(storages));
    }
    gFirstSeen = std::move(seen);
    live.clear();
    groups.clear();

    // bytes reachable from no other graph; the total over unique storages
    std::map<StorageKey, int> owners;
    std::map<StorageKey, uint64_t> all;
    for (const auto& s : graphStorages)
        for (const auto& [k, nb] : s) {
            ++owners[k];
            all[k] = nb;
        }
    for (size_t i = 0; i < graphs.size(); ++i) {
        uint64_t ex = 0;
        for (const auto& [k, nb] : graphStorages[i])
            if (owners[k] == 1) ex += nb;
        graphs[i]["exclusive_bytes"] = ex;
    }
    uint64_t total = 0;
    for (const auto& [k, nb] : all) total += nb;
    std::stable_sort(graphs.begin(), graphs.end(), [](const json& a, const json& b) {
        const auto x = a["retained_bytes"].get<uint64_t>(), y = b["retained_bytes"].get<uint64_t>();
        if (x != y) return x > y;
        return naturalLess(a["root"].get<std::string>(), b["root"].get<std::string>());
    });
    // node detail for the largest graphs and the first of each signature, within a budget
    size_t budget = kMaxDetailNodesPerScan;
    std::set<std::string> signatures;
    for (size_t k = 0; k < graphs.size(); ++k) {
        auto& g = graphs[k];
        const bool firstOfKind = signatures.insert(g["signature"].get<std::string>()).second;
        const size_t n = g["nodes_list"].size();
        if ((k < kMaxDetailGraphs || firstOfKind) && n <= budget) {
            budget -= n;
            continue;
        }
        g["nodes_list"] = json::array();
        g["edges"] = json::array();
        g["detail_omitted"] = true;
    }
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    json out = {{"iteration", iteration},
                {"phase", std::string(phase)},
                {"trigger", std::string(trigger)},
                {"partial", anyTruncated},
                {"partial_reason", anyTruncated ? "a graph walk stopped at 200000 nodes" : ""},
                {"walker", "libtorch"},
                {"torch", TORCH_VERSION},
                {"saved_tensors_note", kSavedNote},
                {"objects_visited", graphs.size()},
                {"total_retained_bytes", total},
                {"scan_us", us},
                {"graphs", std::move(graphs)}};
    return out;
}

void recordWatched(Session& session, std::string_view phase) {
    json scan = scanWatched(session.iteration() - 1, phase, "request");
    const bool partial = scan.value("partial", false);
    session.graphScan(scan, partial, phase);
}

namespace detail {

void scanAfterStep(Session& session, int64_t index, std::string_view phase, const json& agentExtra) {
    if (!scansOn(agentExtra) || watchedCount() == 0) return;
    const int64_t first = intOf(agentExtra, "graph_scan_first", 10);
    const int64_t every = intOf(agentExtra, "graph_scan_every", 10);
    if (!(index <= first || (every > 0 && index % every == 0))) return;
    json scan = scanWatched(index, phase, "iteration");
    const bool partial = scan.value("partial", false);
    session.graphScan(scan, partial, phase);
}

void scanAtExit(Session& session, const json& agentExtra) {
    if (!scansOn(agentExtra) || watchedCount() == 0) return;
    json scan = scanWatched(session.iteration() - 1, "", "exit");
    const bool partial = scan.value("partial", false);
    session.graphScan(scan, partial, "");
}

} // namespace detail

} // namespace memlens::capture
