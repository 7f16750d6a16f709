#include "memlens/capture/Recorder.h"

#include "AgentServer.h"
#include "RecordingParts.h"
#include "SocketDir.h"
#include "memlens/capture/Nvml.h"
#include "memlens/capture/Protocol.h"
#include "memlens/capture/SessionSink.h"
#include "memlens/model/SessionWriter.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <mutex>
#include <sstream>
#include <thread>

extern char** environ;

#ifndef MEMLENS_VERSION_STRING
#define MEMLENS_VERSION_STRING "0.1.0"
#endif

namespace memlens::capture {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// ----- configuration -------------------------------------------------------------------------

json CaptureConfig::toJson() const {
    json ranges = json::array();
    for (auto [a, b] : snapshotIterations) ranges.push_back({a, b});
    json j = agentExtra.is_object() ? agentExtra : json::object();
    j["snapshot_every"] = snapshotEvery;
    j["snapshot_iterations"] = ranges;
    j["snapshot_period_s"] = snapshotPeriodSeconds;
    j["max_entries"] = maxEntries;
    j["stacks"] = stacks;
    j["stack_depth"] = stackDepth > 0 ? json(stackDepth) : json(nullptr);  // null: all frames
    j["exit_snapshot"] = exitSnapshot;
    j["oom_snapshot"] = oomSnapshot;
    j["manual_steps"] = manualSteps;
    return j;
}

CaptureConfig CaptureConfig::fromJson(const json& j) {
    CaptureConfig c;
    if (!j.is_object()) return c;
    c.snapshotEvery = j.value("snapshot_every", int64_t(0));
    if (auto it = j.find("snapshot_iterations"); it != j.end() && it->is_array())
        for (const auto& r : *it)
            if (r.is_array() && r.size() == 2 && r[0].is_number_integer() && r[1].is_number_integer())
                c.snapshotIterations.emplace_back(r[0].get<int64_t>(), r[1].get<int64_t>());
    c.snapshotPeriodSeconds = j.value("snapshot_period_s", 0.0);
    c.maxEntries = j.value("max_entries", int64_t(100000));
    c.stacks = j.value("stacks", std::string("default"));
    if (auto it = j.find("stack_depth"); it != j.end() && it->is_number_integer() && it->get<int64_t>() > 0)
        c.stackDepth = it->get<int64_t>();
    c.exitSnapshot = j.value("exit_snapshot", true);
    c.oomSnapshot = j.value("oom_snapshot", true);
    c.manualSteps = j.value("manual_steps", false);
    static const std::set<std::string> known = {"snapshot_every", "snapshot_iterations", "snapshot_period_s",
                                                "max_entries", "stacks", "stack_depth", "exit_snapshot", "oom_snapshot",
                                                "manual_steps"};
    for (auto& [k, v] : j.items())
        if (!known.count(k)) c.agentExtra[k] = v;
    return c;
}

bool CaptureConfig::wantsIteration(int64_t index) const {
    if (snapshotEvery > 0 && index % snapshotEvery == 0) return true;
    for (auto [a, b] : snapshotIterations)
        if (index >= a && index <= b) return true;
    return false;
}

std::vector<std::pair<int64_t, int64_t>> parseIterationList(const std::string& text) {
    std::vector<std::pair<int64_t, int64_t>> out;
    std::stringstream ss(text);
    std::string item;
    auto number = [&](const std::string& s) {
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 15)
            throw std::invalid_argument("iteration list '" + text + "': '" + s + "' is not an iteration number");
        int64_t v = std::stoll(s);
        if (v < 1) throw std::invalid_argument("iteration list '" + text + "': iterations count from 1");
        return v;
    };
    while (std::getline(ss, item, ',')) {
        auto dash = item.find('-');
        if (dash == std::string::npos) {
            int64_t v = number(item);
            out.emplace_back(v, v);
        } else {
            int64_t a = number(item.substr(0, dash)), b = number(item.substr(dash + 1));
            if (b < a) throw std::invalid_argument("iteration list '" + text + "': range " + item + " is empty");
            out.emplace_back(a, b);
        }
    }
    if (out.empty()) throw std::invalid_argument("iteration list is empty");
    return out;
}

// ----- where the agent is ----------------------------------------------------------------------

std::string findAgentDir() {
    auto valid = [](const fs::path& p) {
        std::error_code ec;
        return fs::exists(p / "memlens_agent" / "__init__.py", ec) && fs::exists(p / "boot" / "sitecustomize.py", ec);
    };
    if (const char* env = std::getenv("MEMLENS_AGENT_DIR"); env && *env) {
        if (valid(env)) return fs::absolute(env).string();
    }
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path installed = exe.parent_path().parent_path() / "share" / "memlens" / "python";
        if (valid(installed)) return installed.string();
    }
#ifdef MEMLENS_AGENT_SOURCE_DIR
    if (valid(MEMLENS_AGENT_SOURCE_DIR)) return MEMLENS_AGENT_SOURCE_DIR;
#endif
    return {};
}

// ----- the recorder ------------------------------------------------------------------------------


RecorderResult runRecorder(const RecorderOptions& o) {
    if (o.command.empty()) throw RecorderError("no command to run");
    std::string agentDir = o.agentDir.empty() ? findAgentDir() : o.agentDir;
    if (agentDir.empty() && !o.quiet)
        std::fprintf(stderr, "memlens: the Python agent was not found (set MEMLENS_AGENT_DIR); "
                             "recording without it\n");

    SocketDir sock;
    makeSocket(sock);

    std::unique_ptr<model::SessionWriter> writer;
    try {
        writer = std::make_unique<model::SessionWriter>(o.output, "memlens-cli record " MEMLENS_VERSION_STRING);
    } catch (const model::SessionError& e) {
        throw RecorderError(o.output + ": " + e.what());
    }

    // The environment of the job.
    std::vector<std::string> env;
    std::string pythonPath;
    for (char** e = environ; *e; ++e) {
        std::string_view kv(*e);
        auto key = kv.substr(0, kv.find('='));
        if (key == "PYTHONPATH") pythonPath = std::string(kv.substr(kv.find('=') + 1));
        else if (key != kEnvSocket && key != kEnvConfig && key != "MEMLENS_SESSION") env.emplace_back(kv);
    }
    if (!agentDir.empty()) {
        std::string pp = agentDir + "/boot:" + agentDir;
        if (!pythonPath.empty()) pp += ":" + pythonPath;
        env.push_back("PYTHONPATH=" + pp);
    } else if (!pythonPath.empty()) {
        env.push_back("PYTHONPATH=" + pythonPath);
    }
    env.push_back(std::string(kEnvSocket) + "=" + sock.path);
    env.push_back(std::string(kEnvConfig) + "=" + jsonText(o.capture.toJson()));
    env.push_back("MEMLENS_SESSION=" + fs::absolute(o.output).string());
    std::vector<char*> envp, argv;
    for (auto& s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> command = o.command;
    for (auto& s : command) argv.push_back(s.data());
    argv.push_back(nullptr);

    // Signals: handled synchronously on this thread (and blocked in every thread we start).
    SignalScope signals({SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD});
    const sigset_t old = signals.previousMask();
    const struct sigaction oldPipe = signals.previousPipe();

    int execErr[2];
    if (::pipe2(execErr, O_CLOEXEC) != 0) throw RecorderError(std::string("pipe: ") + std::strerror(errno));
    pid_t child = ::fork();
    if (child < 0) throw RecorderError(std::string("fork: ") + std::strerror(errno));
    if (child == 0) {
        // Only async-signal-safe calls from here to exec.
        ::sigaction(SIGPIPE, &oldPipe, nullptr);
        ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
        ::execvpe(argv[0], argv.data(), envp.data());
        int err = errno;
        (void)!::write(execErr[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(execErr[1]);
    int err = 0;
    ssize_t got;
    do {
        got = ::read(execErr[0], &err, sizeof err);
    } while (got < 0 && errno == EINTR);
    ::close(execErr[0]);
    if (got == static_cast<ssize_t>(sizeof err)) {
        ::waitpid(child, nullptr, 0);
        writer.reset();
        removeSessionFile(o.output);
        throw RecorderError("cannot run '" + o.command[0] + "': " + std::strerror(err), 127);
    }

    model::SessionProcess initial;
    initial.pid = child;
    initial.host = hostName();
    initial.command = o.command;
    std::error_code ec;
    initial.cwd = fs::current_path(ec).string();
    initial.startedUs = model::sessionNowUs();
    json info = {{"recorder", {{"pid", ::getpid()}, {"capture", o.capture.toJson()}}}};
    std::unique_ptr<Nvml> nvml = loadNvmlInto(info, initial);
    initial.infoJson = jsonText(info);

    SessionSink::Options sinkOptions;
    sinkOptions.quiet = o.quiet;
    SessionSink sink(std::move(writer), initial, sinkOptions);
    AgentServer server(sock.fd, sink, o.quiet);

    std::unique_ptr<NvmlSampler> sampler = startSampler(nvml.get(), child, server, sink, o.sampleIntervalMs);

    if (!o.quiet) std::fprintf(stderr, "memlens: recording %s to %s\n", o.command[0].c_str(), o.output.c_str());

    // Wait for the job, forwarding signals.
    int status = 0;
    bool exited = false;
    auto waitSignal = [&](int ms) -> int {
        siginfo_t si{};
        int s = signals.wait(ms, &si);
        if (s == 0) return 0;
        if (s == SIGUSR1) {
            server.requestSnapshot();
        } else if (s != SIGCHLD) {
            // Signals typed at the terminal (si_code > 0: from the kernel) reached the job already:
            // it is in our process group. Those sent to us by a process are passed on.
            if (!exited && si.si_code <= 0) ::kill(child, s == SIGUSR2 ? SIGUSR2 : s);
        }
        return s;
    };
    while (!exited) {
        waitSignal(200);
        pid_t w = ::waitpid(child, &status, WNOHANG);
        if (w == child) exited = true;
    }
    int64_t endedUs = model::sessionNowUs();

    // Take in what the job sent before it ended.
    drainAgents(server, waitSignal);
    server.stop();
    if (sampler) sampler->stop();

    RecorderResult result;
    result.agentConnected = server.anyAgent();
    if (WIFEXITED(status)) result.exitStatus = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) result.exitStatus = 128 + WTERMSIG(status);
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    bool agent = result.agentConnected;
    sink.updateProcess([=](model::SessionProcess& p) {
        p.endedUs = endedUs;
        p.exitCode = result.exitStatus;
        if (sig) p.exitSignal = sig;
        if (!p.allocatorSnapshots) {
            p.allocatorSnapshots = false;
            if (p.snapshotsNote.empty())
                p.snapshotsNote = agent ? "the job never started the agent's torch capture (torch not imported)"
                                        : "no memlens agent ran in the job (not a Python program with site "
                                          "enabled, and not linked with the capture library)";
        }
    });
    closeSession(sink, result, o.output, o.quiet, ("job exit " + std::to_string(result.exitStatus)).c_str());
    return result;
}

} // namespace memlens::capture
