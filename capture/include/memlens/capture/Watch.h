#pragma once
// Retained autograd graphs in C++ (LibTorch) programs: the roots a program names.
//
//   losses.push_back(loss);
//   memlens::capture::watch(losses.back(), "losses[" + std::to_string(losses.size() - 1) + "]");
//
// A C++ program has no garbage collector to search, so the program names the tensors that may
// keep graphs alive. The Session then scans them like the Python agent does (at every step of
// the first 10 iterations, then every 10th, and at exit; MEMLENS_AGENT_CONFIG's graph_scans,
// graph_scan_first and graph_scan_every apply), and each scan is stored in the session in the
// agent's format (capture/python/memlens_agent/README-graphs.md): the graph is walked through
// LibTorch (Node::next_edges(), Node::name(), AccumulateGrad's leaf, the shapes and dtypes of
// what each node receives where the headers expose them).
//
// Saved tensors are NOT listed: LibTorch (1.13 to 2.x) has no generic accessor for a node's
// saved variables. Every scan says so ("saved tensors: not listed (LibTorch does not expose
// them)"; each graph has saved_listed: false), and retained_bytes counts the root tensors only.
//
// Roots are held weakly: watching keeps nothing alive. A root whose tensor is gone, or that has
// no grad_fn, is left out of the next scan. Watching a name again replaces its tensor. Thread-safe.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace at {
class Tensor;
}

namespace memlens::capture {

class Session;

void watch(const at::Tensor& tensor, std::string name);
void unwatch(const std::string& name);
void unwatchAll();
// Names registered (their tensors alive or not).
size_t watchedCount();

// One scan of the watched roots now (the agent's scan object; iteration/phase as given).
nlohmann::json scanWatched(int64_t iteration = 0, std::string_view phase = {}, std::string_view trigger = "request");
// Scans now and stores the scan in SESSION.
void recordWatched(Session& session, std::string_view phase = {});

namespace detail {
// Called by Session::step after iteration INDEX ended and by Session::finish (index 0): scans
// when the schedule says so (agentExtra: graph_scans, graph_scan_first, graph_scan_every).
void scanAfterStep(Session& session, int64_t index, std::string_view phase, const nlohmann::json& agentExtra);
void scanAtExit(Session& session, const nlohmann::json& agentExtra);
} // namespace detail

} // namespace memlens::capture
