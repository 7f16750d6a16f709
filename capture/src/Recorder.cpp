#include "memlens/capture/Recorder.h"

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

// ----- the socket server -----------------------------------------------------------------------

namespace {

std::string hostName() {
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return h;
}

class AgentServer {
public:
    AgentServer(int listenFd, SessionSink& sink, bool quiet) : listen_(listenFd), sink_(sink), quiet_(quiet) {
        if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw RecorderError(std::string("pipe: ") + std::strerror(errno));
        thread_ = std::thread([this] { run(); });
    }
    ~AgentServer() {
        stop();
        ::close(wake_[0]);
        ::close(wake_[1]);
    }

    void stop() {
        stop_ = true;
        wake();
        if (thread_.joinable()) thread_.join();
    }
    void requestSnapshot() {
        snapshotRequest_ = true;
        wake();
    }
    uint64_t loops() const { return loops_; }
    int openConnections() const { return open_; }
    bool busy() const { return inPost_; }
    Clock::time_point lastActivity() const {
        std::lock_guard<std::mutex> lock(mu_);
        return lastActivity_;
    }
    std::set<int64_t> agentPids() const {
        std::lock_guard<std::mutex> lock(mu_);
        return pids_;
    }
    bool anyAgent() const { return anyAgent_; }

private:
    struct Conn {
        int fd = -1;
        int64_t id = 0;    // the order it connected in, from 1: the messages' source
        std::string head;  // the 16-byte header, then the JSON text
        FrameHeader frame;
        bool haveHeader = false;
        std::string blob;
        uint64_t blobGot = 0;
        bool streaming = false;  // mid-frame, or more was waiting: poll it
        bool failed = false;
    };

    void wake() {
        char c = 1;
        (void)!::write(wake_[1], &c, 1);
    }

    void touch() {
        std::lock_guard<std::mutex> lock(mu_);
        lastActivity_ = Clock::now();
    }

    void accept() {
        for (;;) {
            int fd = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) return;
            ucred cred{};
            socklen_t len = sizeof cred;
            if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::getuid()) {
                if (!quiet_) std::fprintf(stderr, "memlens: refused a connection from uid %u\n", unsigned(cred.uid));
                ::close(fd);
                continue;
            }
            Conn c;
            c.fd = fd;
            c.id = ++connections_;
            conns_.push_back(std::move(c));
            open_ = static_cast<int>(conns_.size());
            touch();
        }
    }

    // Completes one frame: hands it to the sink.
    void deliver(Conn& c) {
        Message m;
        m.head = json::parse(c.head.begin() + kFrameHeaderBytes, c.head.end(), nullptr, false);
        if (!m.head.is_object()) throw ProtocolError("bad frame: the JSON part is not an object");
        m.blob = std::move(c.blob);
        m.source = c.id;
        c.head.clear();
        c.blob.clear();
        c.blobGot = 0;
        c.haveHeader = false;
        std::string t = m.type();
        if (t == "hello") {
            anyAgent_ = true;
            if (auto it = m.head.find("pid"); it != m.head.end() && it->is_number_integer()) {
                std::lock_guard<std::mutex> lock(mu_);
                pids_.insert(it->get<int64_t>());
            }
        }
        inPost_ = true;
        sink_.post(std::move(m));
        inPost_ = false;
        touch();
    }

    // Reads what is available; false when the connection ended.
    bool readFrom(Conn& c) {
        char buf[65536];
        size_t budget = 64u << 20;  // then give the others a turn
        c.streaming = true;
        while (budget > 0) {
            if (c.haveHeader && c.head.size() == kFrameHeaderBytes + c.frame.jsonBytes && c.blobGot < c.frame.blobBytes) {
                // Blob bytes go straight into the blob.
                uint64_t want = std::min<uint64_t>(c.frame.blobBytes - c.blobGot, 8u << 20);
                ssize_t n = ::recv(c.fd, c.blob.data() + c.blobGot, want, 0);
                if (n == 0) return false;
                if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;  // mid-frame
                c.blobGot += static_cast<uint64_t>(n);
                budget -= std::min<size_t>(budget, static_cast<size_t>(n));
                touch();
                if (c.blobGot == c.frame.blobBytes) deliver(c);
                continue;
            }
            size_t need = !c.haveHeader ? kFrameHeaderBytes - c.head.size()
                                        : kFrameHeaderBytes + c.frame.jsonBytes - c.head.size();
            ssize_t n = ::recv(c.fd, buf, std::min(need, sizeof buf), 0);
            if (n == 0) return false;
            if (n < 0) {
                c.streaming = !c.head.empty();  // between frames: idle until the next sweep
                return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
            }
            budget -= std::min<size_t>(budget, static_cast<size_t>(n));
            c.head.append(buf, static_cast<size_t>(n));
            if (!c.haveHeader && c.head.size() == kFrameHeaderBytes) {
                c.frame = parseFrameHeader(c.head.data());
                c.haveHeader = true;
            }
            if (c.haveHeader && c.head.size() == kFrameHeaderBytes + c.frame.jsonBytes) {
                if (c.frame.blobBytes == 0) {
                    deliver(c);
                } else {
                    c.blob.resize(c.frame.blobBytes);
                    c.blobGot = 0;
                }
            }
        }
        return true;
    }

    // To the process whose records the session keeps (all agents, before any has spoken):
    // another rank's snapshot would be dropped anyway.
    void sendRequests() {
        std::string frame = encodeFrameStart(json{{"t", "snapshot_request"}}, 0);
        const int64_t kept = sink_.keptSource();
        for (auto& c : conns_)
            if (kept == 0 || c.id == kept) (void)!::send(c.fd, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }

    // Idle connections are not polled but read every kSweepMs: a job's small messages then cost
    // it a send() that wakes nobody (and once sent they survive the job being killed). A
    // connection in the middle of a frame, or with more waiting, is polled and read at once.
    static constexpr int kSweepMs = 20;

    void run() {
        std::vector<pollfd> fds;
        std::vector<size_t> polled;
        while (!stop_) {
            fds.clear();
            polled.clear();
            fds.push_back({wake_[0], POLLIN, 0});
            fds.push_back({listen_, POLLIN, 0});
            for (size_t i = 0; i < conns_.size(); ++i)
                if (conns_[i].streaming) {
                    fds.push_back({conns_[i].fd, POLLIN, 0});
                    polled.push_back(i);
                }
            int r = ::poll(fds.data(), fds.size(), kSweepMs);
            ++loops_;
            if (r < 0 && errno != EINTR) break;
            if (fds[0].revents) {
                char drain[64];
                while (::read(wake_[0], drain, sizeof drain) > 0) {
                }
            }
            if (fds[1].revents & POLLIN) accept();
            // a request that came before the agent connected waits for it (the job may still be
            // starting, or its connection not yet accepted)
            if (!conns_.empty() && snapshotRequest_.exchange(false)) sendRequests();
            for (size_t k = 0; k < polled.size(); ++k)
                if (fds[2 + k].revents & (POLLERR | POLLNVAL)) conns_[polled[k]].failed = true;
            for (auto& c : conns_) {
                bool alive = !c.failed;
                try {
                    alive = alive && readFrom(c);
                } catch (const std::exception& e) {
                    if (!quiet_) std::fprintf(stderr, "memlens: dropped an agent connection: %s\n", e.what());
                    alive = false;
                }
                if (!alive) {
                    ::close(c.fd);
                    c.fd = -1;
                    touch();
                }
            }
            std::erase_if(conns_, [](const Conn& c) { return c.fd < 0; });
            open_ = static_cast<int>(conns_.size());
        }
        // A frame cut short here is the record being written when the job or the recorder ended.
        for (auto& c : conns_) ::close(c.fd);
        conns_.clear();
        open_ = 0;
    }

    int listen_;
    SessionSink& sink_;
    bool quiet_;
    int wake_[2] = {-1, -1};
    std::vector<Conn> conns_;
    int64_t connections_ = 0;
    std::atomic<bool> stop_{false}, snapshotRequest_{false}, inPost_{false}, anyAgent_{false};
    std::atomic<uint64_t> loops_{0};
    std::atomic<int> open_{0};
    mutable std::mutex mu_;
    Clock::time_point lastActivity_ = Clock::now();
    std::set<int64_t> pids_;
    std::thread thread_;
};

// Removes the socket directory however runRecorder leaves.
struct SocketDir {
    std::string dir, path;
    int fd = -1;
    ~SocketDir() {
        if (fd >= 0) ::close(fd);
        if (!path.empty()) ::unlink(path.c_str());
        if (!dir.empty()) ::rmdir(dir.c_str());
    }
};

void makeSocket(SocketDir& s) {
    std::vector<std::string> bases;
    for (const char* v : {"XDG_RUNTIME_DIR", "TMPDIR"})
        if (const char* e = std::getenv(v); e && *e) bases.push_back(e);
    bases.push_back("/tmp");
    for (const auto& base : bases) {
        std::string tmpl = base + "/memlens-XXXXXX";
        if (tmpl.size() + 12 >= sizeof(sockaddr_un::sun_path)) continue;
        if (!::mkdtemp(tmpl.data())) continue;  // mkdtemp makes it 0700
        s.dir = tmpl;
        break;
    }
    if (s.dir.empty()) throw RecorderError(std::string("cannot create a socket directory: ") + std::strerror(errno));
    ::chmod(s.dir.c_str(), 0700);
    s.path = s.dir + "/agent.sock";
    s.fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s.fd < 0) throw RecorderError(std::string("socket: ") + std::strerror(errno));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, s.path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(s.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(s.fd, 16) != 0)
        throw RecorderError("cannot listen on " + s.path + ": " + std::strerror(errno));
    ::chmod(s.path.c_str(), 0600);
}

std::string jsonText(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

} // namespace

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
    sigset_t handled, old;
    sigemptyset(&handled);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD}) sigaddset(&handled, s);
    pthread_sigmask(SIG_BLOCK, &handled, &old);
    struct sigaction ignore {}, oldPipe {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &oldPipe);
    struct Restore {
        sigset_t* old;
        struct sigaction* pipe;
        ~Restore() {
            sigaction(SIGPIPE, pipe, nullptr);
            pthread_sigmask(SIG_SETMASK, old, nullptr);
        }
    } restore{&old, &oldPipe};

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
        for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((o.output + suffix).c_str());
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
    std::string nvmlWhy;
    std::unique_ptr<Nvml> nvml = Nvml::load(&nvmlWhy);
    if (nvml) {
        info["nvml"] = {{"driver", nvml->driverVersion()}, {"devices", json::parse(nvml->devicesJson())}};
        if (!nvml->devices().empty()) initial.devicesJson = nvml->devicesJson();
    } else {
        info["nvml"] = {{"absent", nvmlWhy}};
    }
    initial.infoJson = jsonText(info);

    SessionSink::Options sinkOptions;
    sinkOptions.quiet = o.quiet;
    SessionSink sink(std::move(writer), initial, sinkOptions);
    AgentServer server(sock.fd, sink, o.quiet);

    std::unique_ptr<NvmlSampler> sampler;
    if (nvml && !nvml->devices().empty()) {
        struct Tree {
            std::mutex mu;
            std::set<int64_t> pids;
            Clock::time_point at{};
        };
        auto tree = std::make_shared<Tree>();
        sampler = std::make_unique<NvmlSampler>(
            *nvml,
            [tree, child, &server] {
                std::lock_guard<std::mutex> lock(tree->mu);
                if (Clock::now() - tree->at > std::chrono::seconds(2)) {
                    tree->pids = processTree(child);
                    tree->at = Clock::now();
                }
                std::set<int64_t> p = tree->pids;
                for (int64_t a : server.agentPids()) p.insert(a);
                return p;
            },
            [&sink](std::vector<model::DeviceSample> rows) { sink.postSamples(std::move(rows)); },
            o.sampleIntervalMs);
    }

    if (!o.quiet) std::fprintf(stderr, "memlens: recording %s to %s\n", o.command[0].c_str(), o.output.c_str());

    // Wait for the job, forwarding signals.
    int status = 0;
    bool exited = false;
    auto waitSignal = [&](int ms) -> int {
        timespec ts{ms / 1000, (ms % 1000) * 1000000L};
        siginfo_t si{};
        int s = ::sigtimedwait(&handled, &si, &ts);
        if (s < 0) return 0;
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

    // Take in what the job sent before it ended: wait until every connection is closed or quiet.
    uint64_t loops = server.loops();
    auto drainStart = Clock::now();
    bool interrupted = false;
    while (!interrupted) {
        bool seen = server.loops() >= loops + 2;  // the listener was looked at after the exit
        bool quiet = Clock::now() - server.lastActivity() > std::chrono::seconds(2) && !server.busy();
        if (seen && (server.openConnections() == 0 || quiet)) break;
        if (Clock::now() - drainStart > std::chrono::minutes(10)) break;
        int s = waitSignal(20);
        if (s == SIGINT || s == SIGTERM) interrupted = true;
    }
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
    sink.close();
    auto st = sink.stats();
    result.iterations = st.iterations;
    result.snapshots = st.snapshots;
    result.snapshotBytes = st.snapshotBytes;
    result.samples = st.samples;
    result.markers = st.markers;
    result.snapshotWriteSeconds = st.snapshotWriteSeconds;
    if (!o.quiet)
        std::fprintf(stderr,
                     "memlens: %s: %llu iterations, %llu snapshots (%.1f MB, written in %.2f s), %llu samples; "
                     "job exit %d\n",
                     o.output.c_str(), static_cast<unsigned long long>(st.iterations),
                     static_cast<unsigned long long>(st.snapshots), st.snapshotBytes / 1e6, st.snapshotWriteSeconds,
                     static_cast<unsigned long long>(st.samples), result.exitStatus);
    return result;
}

} // namespace memlens::capture
