#pragma once
// What memlens-cli record and memlens-cli attach share once the job runs: the NVML readings of
// the job's processes, taking in what the agents still send after the job ended or detached,
// and the summary line.
#include "AgentServer.h"
#include "memlens/capture/Nvml.h"
#include "memlens/capture/Recorder.h"
#include "memlens/capture/SessionSink.h"
#include "memlens/model/SessionWriter.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>

namespace memlens::capture {

// Loads NVML; records what it found in info["nvml"] and the devices in initial.devicesJson.
std::unique_ptr<Nvml> loadNvmlInto(nlohmann::json& info, model::SessionProcess& initial);

// Samples the GPU memory of root's process tree and of every process with an agent.
std::unique_ptr<NvmlSampler> startSampler(Nvml* nvml, int64_t root, AgentServer& server, SessionSink& sink,
                                          int intervalMs);

// Waits until every agent connection is closed, or quiet for 2 s, or 10 minutes passed; wait(ms)
// waits for a signal at most ms and returns it (0: none). SIGINT or SIGTERM stops waiting.
void drainAgents(AgentServer& server, const std::function<int(int)>& wait);

// Closes the session and fills the result's counts (the exit status is the caller's).
void closeSession(SessionSink& sink, RecorderResult& result, const std::string& output, bool quiet,
                  const char* ending);

} // namespace memlens::capture
