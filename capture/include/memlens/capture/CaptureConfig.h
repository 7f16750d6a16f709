#pragma once
// What a job captures: the recorder's options, passed to the job as MEMLENS_AGENT_CONFIG (JSON)
// and read by the Python agent and the C++ capture library.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace memlens::capture {

// What the agent captures; serialised into MEMLENS_AGENT_CONFIG.
struct CaptureConfig {
    int64_t snapshotEvery = 0;                              // every N-th iteration; 0: off
    std::vector<std::pair<int64_t, int64_t>> snapshotIterations;  // inclusive ranges of indices
    double snapshotPeriodSeconds = 0;                       // at the first boundary after each period
    int64_t maxEntries = 100000;                            // allocator history ring buffer
    // python | all | none | default (python for Python jobs, all for C++ programs, which have
    // no Python frames)
    std::string stacks = "default";
    // At most this many frames kept per stack (the innermost ones) in stored snapshots; 0: all.
    // Applied by the Python agent (trimmed on its sender thread); the C++ capture library does
    // not apply it and says so (stderr, process info, snapshot info).
    int64_t stackDepth = 0;
    bool exitSnapshot = true;
    bool oomSnapshot = true;
    // Only memlens_agent.mark_step() marks iterations (no automatic boundaries).
    bool manualSteps = false;
    // More settings for the agent, merged into the JSON as they are (e.g. {"graph_scans": false}).
    nlohmann::json agentExtra = nlohmann::json::object();

    nlohmann::json toJson() const;
    static CaptureConfig fromJson(const nlohmann::json& j);
    // Whether iteration INDEX (1-based) is one to snapshot.
    bool wantsIteration(int64_t index) const;
};

// Parses "1,5,10-20"; throws std::invalid_argument with a one-line message.
std::vector<std::pair<int64_t, int64_t>> parseIterationList(const std::string& text);

} // namespace memlens::capture
