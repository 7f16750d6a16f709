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

#include <signal.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

namespace memlens::capture {

// Signals handled synchronously on the recorder's thread: blocked here (and so in every thread
// started after), SIGPIPE ignored; both put back when the scope ends.
class SignalScope {
public:
    explicit SignalScope(std::initializer_list<int> signals);
    ~SignalScope();
    SignalScope(const SignalScope&) = delete;
    SignalScope& operator=(const SignalScope&) = delete;
    // Waits at most ms for one of the signals; returns it (0: none came), its details in *info.
    int wait(int ms, siginfo_t* info = nullptr) const;
    const sigset_t& previousMask() const { return old_; }
    const struct sigaction& previousPipe() const { return oldPipe_; }

private:
    sigset_t handled_{}, old_{};
    struct sigaction oldPipe_ {};
};

std::string hostName();
// Removes a session file the recorder made and will not keep (with SQLite's -wal and -shm).
void removeSessionFile(const std::string& path);
std::string jsonText(const nlohmann::json& j);

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
