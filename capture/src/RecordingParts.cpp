#include "RecordingParts.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <mutex>
#include <set>

#include <unistd.h>

namespace memlens::capture {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

SignalScope::SignalScope(std::initializer_list<int> signals) {
    sigemptyset(&handled_);
    for (int s : signals) sigaddset(&handled_, s);
    pthread_sigmask(SIG_BLOCK, &handled_, &old_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &oldPipe_);
}

SignalScope::~SignalScope() {
    sigaction(SIGPIPE, &oldPipe_, nullptr);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

int SignalScope::wait(int ms, siginfo_t* info) const {
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    siginfo_t si{};
    int s = ::sigtimedwait(&handled_, info ? info : &si, &ts);
    return s < 0 ? 0 : s;
}

std::string hostName() {
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return h;
}

void removeSessionFile(const std::string& path) {
    for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
}

std::string jsonText(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::unique_ptr<Nvml> loadNvmlInto(json& info, model::SessionProcess& initial) {
    std::string why;
    std::unique_ptr<Nvml> nvml = Nvml::load(&why);
    if (nvml) {
        info["nvml"] = {{"driver", nvml->driverVersion()}, {"devices", json::parse(nvml->devicesJson())}};
        if (!nvml->devices().empty()) initial.devicesJson = nvml->devicesJson();
    } else {
        info["nvml"] = {{"absent", why}};
    }
    return nvml;
}

std::unique_ptr<NvmlSampler> startSampler(Nvml* nvml, int64_t root, AgentServer& server, SessionSink& sink,
                                          int intervalMs) {
    if (!nvml || nvml->devices().empty()) return nullptr;
    struct Tree {
        std::mutex mu;
        std::set<int64_t> pids;
        Clock::time_point at{};
    };
    auto tree = std::make_shared<Tree>();
    return std::make_unique<NvmlSampler>(
        *nvml,
        [tree, root, &server] {
            std::lock_guard<std::mutex> lock(tree->mu);
            if (Clock::now() - tree->at > std::chrono::seconds(2)) {
                tree->pids = processTree(root);
                tree->at = Clock::now();
            }
            std::set<int64_t> p = tree->pids;
            for (int64_t a : server.agentPids()) p.insert(a);
            return p;
        },
        [&sink](std::vector<model::DeviceSample> rows) { sink.postSamples(std::move(rows)); }, intervalMs);
}

void drainAgents(AgentServer& server, const std::function<int(int)>& wait) {
    uint64_t loops = server.loops();
    auto start = Clock::now();
    for (;;) {
        bool seen = server.loops() >= loops + 2;  // the listener was looked at after the end
        bool quiet = Clock::now() - server.lastActivity() > std::chrono::seconds(2) && !server.busy();
        if (seen && (server.openConnections() == 0 || quiet)) return;
        if (Clock::now() - start > std::chrono::minutes(10)) return;
        int s = wait(20);
        if (s == SIGINT || s == SIGTERM) return;
    }
}

void closeSession(SessionSink& sink, RecorderResult& result, const std::string& output, bool quiet,
                  const char* ending) {
    sink.close();
    auto st = sink.stats();
    result.iterations = st.iterations;
    result.snapshots = st.snapshots;
    result.snapshotBytes = st.snapshotBytes;
    result.samples = st.samples;
    result.markers = st.markers;
    result.snapshotWriteSeconds = st.snapshotWriteSeconds;
    if (!quiet)
        std::fprintf(stderr, "memlens: %s: %llu iterations, %llu snapshots (%.1f MB, written in %.2f s), %llu samples; %s\n",
                     output.c_str(), static_cast<unsigned long long>(st.iterations),
                     static_cast<unsigned long long>(st.snapshots), st.snapshotBytes / 1e6, st.snapshotWriteSeconds,
                     static_cast<unsigned long long>(st.samples), ending);
}

} // namespace memlens::capture
