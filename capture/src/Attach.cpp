#include "memlens/capture/Attach.h"

#include "AgentServer.h"
#include "Injector.h"
#include "RecordingParts.h"
#include "SocketDir.h"
#include "memlens/capture/ProcessProbe.h"
#include "memlens/model/SessionWriter.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#ifndef MEMLENS_VERSION_STRING
#define MEMLENS_VERSION_STRING "0.1.0"
#endif

namespace memlens::capture {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

// Run by the injection in the job, with exec() in a namespace of its own: it binds nothing in
// the job's modules, puts the agent on sys.path only while importing it, never raises, and
// unmaps the page the debugger put it in.
const char* kBootstrap = R"PY(
def _memlens_attach(page):
    import sys
    try:
        d = %AGENT_DIR%
        added = d not in sys.path
        if added:
            sys.path.insert(0, d)
        try:
            from memlens_agent import _attach
        finally:
            if added:
                try:
                    sys.path.remove(d)
                except ValueError:
                    pass
        _attach.attach(%SOCKET%, %CONFIG%)
    except Exception as e:
        try:
            sys.stderr.write("memlens: attach: %s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
    finally:
        if page:
            try:
                import ctypes
                unmap = ctypes.CDLL(None).munmap
                unmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
                unmap.restype = ctypes.c_int
                unmap(page[0], page[1])
            except Exception:
                pass


_memlens_attach(__MEMLENS_PAGE__)
)PY";

void replace(std::string& text, const std::string& key, const std::string& value) {
    text.replace(text.find(key), key.size(), value);
}

std::string versionText(const ProcessProbe& p) {
    return p.pythonMajor ? std::to_string(p.pythonMajor) + "." + std::to_string(p.pythonMinor) : std::string("?");
}

// The one-line reasons a process cannot be attached to, checked before anything is run.
void check(const ProcessProbe& p) {
    const std::string who = "process " + std::to_string(p.pid);
    if (!p.exists) throw RecorderError("no such process: " + std::to_string(p.pid));
    const bool mayTrace = canTraceAny();
    if (p.uid != ::getuid() && !mayTrace)
        throw RecorderError("no permission to attach to " + who + ": it belongs to " + userName(p.uid) + ", not to " +
                            userName(::getuid()) + " (run memlens-cli attach as " + userName(p.uid) + ")");
    if (auto scope = yamaPtraceScope(); scope && *scope > 0 && !mayTrace) {
        if (*scope == 3)
            throw RecorderError("no permission to attach to " + who +
                                ": kernel.yama.ptrace_scope is 3, which forbids attaching to any process until reboot");
        throw RecorderError("no permission to attach to " + who + ": kernel.yama.ptrace_scope is " +
                            std::to_string(*scope) +
                            (*scope == 1 ? " (only a parent may trace its children)" : " (only root may trace)") +
                            "; allow it with 'sudo sysctl kernel.yama.ptrace_scope=0', or run memlens-cli attach with sudo");
    }
    if (!p.mapsReadable) throw RecorderError("no permission to read /proc/" + std::to_string(p.pid) + "/maps");
    if (!p.python) {
        if (p.torch)
            throw RecorderError(who + " is a LibTorch program, not Python (" + p.commandLine(80) +
                                "): memlens cannot attach to it; link it with the capture library "
                                "(find_package(memlens_capture), target memlens::capture) and run it under "
                                "memlens-cli record");
        throw RecorderError(who + " is not a Python process: it runs " + (p.exe.empty() ? "?" : p.exe) + " (" +
                            p.commandLine(80) + ")");
    }
    if (p.pythonMajor == 2 || (p.pythonMajor == 3 && p.pythonMinor < 8))
        throw RecorderError(who + " runs Python " + versionText(p) + ": memlens attaches to Python 3.8 and later");
    if (!p.torch)
        throw RecorderError(who + " (python " + versionText(p) + ": " + p.commandLine(80) +
                            ") has not imported torch: memlens attaches to PyTorch jobs");
    if (p.recorderSocket)
        throw RecorderError(who + " already has a memlens agent: it writes to " +
                            (p.recorderSession.empty() ? std::string("a session") : p.recorderSession) +
                            " (started by memlens-cli record)");
}

} // namespace

RecorderResult runAttach(const AttachOptions& o) {
    const ProcessProbe target = probeProcess(o.pid);
    check(target);
    const std::string agentDir = o.agentDir.empty() ? findAgentDir() : o.agentDir;
    if (agentDir.empty()) throw RecorderError("the Python agent was not found (set MEMLENS_AGENT_DIR)");
    const bool remoteExec = usesRemoteExec(target);
    std::string gdb;
    if (!remoteExec) {
        gdb = findGdb();
        if (gdb.empty())
            throw RecorderError("attaching to Python " + versionText(target) +
                                " needs the debugger gdb, which is not installed: install Debian's gdb package "
                                "(sudo apt-get install gdb)");
    }

    SignalScope signals({SIGINT, SIGTERM, SIGHUP, SIGUSR1});
    auto waitSignal = [&](int ms) { return signals.wait(ms); };

    SocketDir sock;
    makeSocket(sock);
    std::unique_ptr<model::SessionWriter> writer;
    try {
        writer = std::make_unique<model::SessionWriter>(o.output, "memlens-cli attach " MEMLENS_VERSION_STRING);
    } catch (const model::SessionError& e) {
        throw RecorderError(o.output + ": " + e.what());
    }
    model::SessionProcess initial;
    initial.pid = o.pid;
    initial.host = hostName();
    initial.command = target.command;
    std::error_code ec;
    initial.cwd = fs::read_symlink("/proc/" + std::to_string(o.pid) + "/cwd", ec).string();
    initial.startedUs = model::sessionNowUs();
    json captureJson = o.capture.toJson();
    json info = {{"recorder", {{"pid", ::getpid()}, {"capture", captureJson}}},
                 {"attached", {{"time_us", initial.startedUs}, {"method", remoteExec ? "sys.remote_exec" : "gdb"}}}};
    std::unique_ptr<Nvml> nvml = loadNvmlInto(info, initial);
    initial.infoJson = jsonText(info);

    SessionSink::Options sinkOptions;
    sinkOptions.quiet = o.quiet;
    auto sink = std::make_unique<SessionSink>(std::move(writer), initial, sinkOptions);
    AgentServer server(sock.fd, *sink, o.quiet);

    json config = captureJson;
    config["session"] = fs::absolute(o.output).string();
    std::string code = kBootstrap;
    replace(code, "%AGENT_DIR%", pythonLiteral(agentDir));
    replace(code, "%SOCKET%", pythonLiteral(sock.path));
    replace(code, "%CONFIG%", pythonLiteral(jsonText(config)));
    const Injection in = injectPython(target, code, sock.dir, gdb);
    auto fail = [&](const std::string& why) {
        server.stop();
        sink.reset();
        removeSessionFile(o.output);
        throw RecorderError(why);
    };
    if (!in.ok) {
        if (in.permission)
            fail("no permission to attach to process " + std::to_string(o.pid) + ": " + in.error +
                 " (a container may need CAP_SYS_PTRACE; see kernel.yama.ptrace_scope)");
        fail("could not attach to process " + std::to_string(o.pid) + ": " + in.error);
    }

    // Wait for the agent's word.
    const auto started = Clock::now();
    std::optional<json> reply;
    for (;;) {
        reply = server.attachReply();
        if (reply) break;
        if (!stillRunning(target)) fail("process " + std::to_string(o.pid) + " ended before the agent started");
        if (Clock::now() - started > std::chrono::duration<double>(o.startTimeoutSeconds))
            fail("process " + std::to_string(o.pid) + " did not run the agent within " +
                 std::to_string(static_cast<int>(o.startTimeoutSeconds)) +
                 " s: its main thread has not come back to Python code (blocked in a long C call or a lock?); "
                 "nothing was left in it");
        int s = waitSignal(50);
        if (s == SIGINT || s == SIGTERM || s == SIGHUP) fail("interrupted before the agent started; nothing was left in the job");
    }
    if (reply->value("t", "") == "attach_refused") {
        const std::string why = reply->value("reason", "");
        const std::string who = "process " + std::to_string(o.pid);
        if (why == "agent") {
            std::string session = reply->value("session", "");
            fail(who + " already has a memlens agent: it writes to " + (session.empty() ? "a session" : session) + " (" +
                 reply->value("how", "memlens") + ")");
        }
        if (why == "torch") fail(who + " has not imported torch: memlens attaches to PyTorch jobs");
        fail(who + ": " + reply->value("message", std::string("the agent refused to start")));
    }
    if (!o.quiet)
        std::fprintf(stderr, "memlens: attached to process %lld (python %s, by %s): recording to %s; Ctrl-C detaches\n",
                     static_cast<long long>(o.pid), versionText(target).c_str(), in.method.c_str(), o.output.c_str());

    std::unique_ptr<NvmlSampler> sampler = startSampler(nvml.get(), o.pid, server, *sink, o.sampleIntervalMs);

    // Until the job ends, a signal or the duration.
    bool detach = false;
    const auto attachedAt = Clock::now();
    for (;;) {
        int s = waitSignal(100);
        if (s == SIGUSR1) server.requestSnapshot();
        if (s == SIGINT || s == SIGTERM || s == SIGHUP) detach = true;
        if (o.durationSeconds > 0 && Clock::now() - attachedAt >= std::chrono::duration<double>(o.durationSeconds))
            detach = true;
        if (detach || !stillRunning(target)) break;
        if (server.openConnections() == 0) break;  // the agent went away (it detached itself)
    }
    if (!detach && server.byeReason() == "exit") {
        // the agent said goodbye at the job's exit: the process is on its way out
        const auto bye = Clock::now();
        while (stillRunning(target) && Clock::now() - bye < std::chrono::seconds(10)) waitSignal(20);
    }
    const bool ended = !stillRunning(target);
    if (detach && !ended) {
        if (!o.quiet) std::fprintf(stderr, "memlens: detaching from process %lld\n", static_cast<long long>(o.pid));
        server.requestDetach();
        // The agent closes its connection once its last snapshot and scan are sent; a second
        // Ctrl-C stops waiting (the agent then removes itself when it sees the socket close).
        const auto asked = Clock::now();
        while (server.openConnections() > 0 && stillRunning(target) && Clock::now() - asked < std::chrono::minutes(10)) {
            int s = waitSignal(20);
            if (s == SIGINT || s == SIGTERM) break;
        }
    }
    drainAgents(server, waitSignal);
    int64_t endedUs = model::sessionNowUs();
    server.stop();
    if (sampler) sampler->stop();

    RecorderResult result;
    result.agentConnected = server.anyAgent();
    sink->updateProcess([=](model::SessionProcess& p) {
        p.endedUs = endedUs;
        json i = json::parse(p.infoJson, nullptr, false);
        if (!i.is_object()) i = json::object();
        i["attached"]["ended"] = ended ? "the job exited" : "detached; the job went on";
        i["attached"]["end_us"] = endedUs;
        if (ended) i["attached"]["exit_status"] = "not known: memlens-cli attach is not the job's parent";
        p.infoJson = jsonText(i);
        if (!p.allocatorSnapshots) {
            p.allocatorSnapshots = false;
            if (p.snapshotsNote.empty()) p.snapshotsNote = "the agent did not record the allocator";
        }
    });
    closeSession(*sink, result, o.output, o.quiet, ended ? "the job exited" : "detached, the job goes on");
    return result;
}

} // namespace memlens::capture
