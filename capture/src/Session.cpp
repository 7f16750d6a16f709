// memlens::capture::Session. It includes only light Torch headers: torch/cuda.h, torch/version.h
// and, in CUDA builds, torch/csrc/cuda/memory_snapshot.h and (with the CUDA runtime headers) c10's
// CUDA allocator. (Watch.cpp, the other translation unit with Torch headers, has the autograd API.)
#include "memlens/capture/Session.h"

#include "memlens/capture/Nvml.h"
#include "memlens/capture/Protocol.h"
#include "memlens/capture/RecorderClient.h"
#include "memlens/capture/SessionSink.h"
#include "memlens/capture/Watch.h"
#include "memlens/capture/WatchModel.h"
#include "memlens/model/SessionWriter.h"

#include <torch/cuda.h>
#include <torch/version.h>

#if defined(MEMLENS_CAPTURE_CUDA)
#include <torch/csrc/cuda/memory_snapshot.h>
// cuda_runtime.h includes crt/host_config.h, which pip's CUDA runtime package lacks (the
// toolkit's nvcc package has it): without it, no allocator header and no OOM observer
#if __has_include(<cuda_runtime_api.h>) && __has_include(<crt/host_config.h>) && __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#define MEMLENS_CAPTURE_ALLOCATOR 1
#endif
#endif

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <type_traits>

namespace memlens::capture {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kAgent = "c++ 0.1.0";

// Why --stack-depth (CaptureConfig::stackDepth) is not applied by this library.
constexpr const char* kStackDepthNote =
    "its snapshots come already pickled from torch::cuda::_memory_snapshot_pickled() and are stored "
    "with every frame (only the Python agent trims stacks)";

int64_t nowUs() { return model::sessionNowUs(); }

std::vector<std::string> commandLine() {
    std::vector<std::string> out;
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string part;
    while (std::getline(in, part, '\0'))
        if (!part.empty()) out.push_back(part);
    return out;
}

std::string hostName() {
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return h;
}

#if defined(MEMLENS_CAPTURE_CUDA)
// torch::cuda::_record_memory_history changed its signature across versions (snapshot-format.md
// §16); the first form these headers accept is used. The checks are on dependent types (S, B)
// so that a form the headers lack is simply not chosen.
template <class S = std::string, class B = bool>
std::string enableHistory(const std::string& stacks, size_t maxEntries) {
    if constexpr (requires(S s) { torch::cuda::_record_memory_history(s, s, s, size_t(1)); }) {
        // 2.1+: (optional<string> enabled, optional<string> context, string stacks, size_t max_entries, ...)
        if (stacks == "none")
            torch::cuda::_record_memory_history(S("all"), {}, S("python"), maxEntries);
        else
            torch::cuda::_record_memory_history(S("all"), S("all"), S(stacks == "python" ? "python" : "all"),
                                                maxEntries);
        return "string";
    } else if constexpr (requires(B b) { torch::cuda::_record_memory_history(b, int64_t(1)); }) {
        // 2.0: (bool enabled, int64_t alloc_trace_max_entries)
        torch::cuda::_record_memory_history(B(true), static_cast<int64_t>(maxEntries));
        return "2.0";
    } else {
        // 1.13: (bool enabled)
        torch::cuda::_record_memory_history(B(true));
        return "1.13";
    }
}

#if defined(MEMLENS_CAPTURE_ALLOCATOR)
// attachOutOfMemoryObserver exists from torch 2.0 (a name that may be missing cannot be tested
// for with `requires`: its lookup is not dependent).
template <class F>
bool attachOomObserver(F&& observer) {
#if TORCH_VERSION_MAJOR >= 2
    c10::cuda::CUDACachingAllocator::attachOutOfMemoryObserver(std::forward<F>(observer));
    return true;
#else
    (void)observer;
    return false;
#endif
}
#endif

std::string pickledSnapshot() {
    auto p = torch::cuda::_memory_snapshot_pickled();  // std::string (older: std::vector<char>)
    if constexpr (std::is_same_v<decltype(p), std::string>) return p;
    else return std::string(p.begin(), p.end());
}
#endif

} // namespace

struct Session::Impl {
    mutable std::mutex mu;
    CaptureConfig cfg;
    std::unique_ptr<RecorderClient> client;
    std::unique_ptr<SessionSink> sink;
    std::unique_ptr<Nvml> nvml;
    std::unique_ptr<NvmlSampler> sampler;
    std::string destination;
    int64_t index = 0;
    int64_t boundaryUs = 0;
    bool cuda = false;
    std::string note;
    bool finished = false;
    bool recorder = false;
    Clock::time_point lastPeriodic = Clock::now(), lastSample{};

    bool send(json head, std::string blob = {}, bool keep = false) {
        if (client) return client->send(head, std::move(blob), keep);
        if (sink) {
            sink->post(Message{std::move(head), std::move(blob)});
            return true;
        }
        return false;
    }

    bool takeSnapshot(const std::string& trigger, int64_t iteration, bool keep);
    void sample();
    void afterIteration(int64_t i);
};

namespace {
// The session the out-of-memory observer reports to (the observer cannot be detached).
std::mutex gCurrentMu;
Session::Impl* gCurrent = nullptr;
[[maybe_unused]] bool gObserverAttached = false;
} // namespace

bool Session::Impl::takeSnapshot(const std::string& trigger, int64_t iteration, bool keep) {
#if defined(MEMLENS_CAPTURE_CUDA)
    if (!cuda) return false;
    int64_t t = nowUs();
    std::string bytes;
    try {
        bytes = pickledSnapshot();
    } catch (const std::exception& e) {
        send({{"t", "marker"}, {"time_us", t}, {"iteration", iteration}, {"name", "agent_error"},
              {"data", {{"where", "snapshot"}, {"error", e.what()}}}});
        return false;
    }
    json head = {{"t", "snapshot"}, {"iteration", iteration}, {"trigger", trigger}, {"time_us", t},
                 {"info", {{"torch", TORCH_VERSION}, {"max_entries", cfg.maxEntries}, {"stacks", cfg.stacks},
                           {"stack_depth", nullptr}, {"producer", "torch::cuda::_memory_snapshot_pickled"}}}};
    if (nlohmann::json c = detail::watchedCategories(); !c.empty()) head["info"]["categories"] = std::move(c);
    if (cfg.stackDepth > 0) {
        head["info"]["stack_depth_requested"] = cfg.stackDepth;
        head["info"]["stack_depth_note"] = kStackDepthNote;
    }
    bool ok = send(head, std::move(bytes), keep);
    if (!ok)
        send({{"t", "marker"}, {"time_us", t}, {"iteration", iteration}, {"name", "snapshot_dropped"},
              {"data", {{"trigger", trigger}}}});
    return ok;
#else
    (void)trigger;
    (void)iteration;
    (void)keep;
    return false;
#endif
}

void Session::Impl::sample() {
#if defined(MEMLENS_CAPTURE_ALLOCATOR)
    int64_t t = nowUs();
    for (size_t d = 0; d < torch::cuda::device_count(); ++d) {
        auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(d));
        int64_t reserved = static_cast<int64_t>(stats.reserved_bytes[0].current);  // [0]: all pools
        if (!reserved) continue;
        send({{"t", "sample"}, {"time_us", t}, {"device", d}, {"source", "torch"}, {"reserved", reserved},
              {"allocated", static_cast<int64_t>(stats.allocated_bytes[0].current)}});
    }
#endif
}

void Session::Impl::afterIteration(int64_t i) {
    if (!cuda) return;
    auto now = Clock::now();
    if (now - lastSample >= std::chrono::milliseconds(200)) {
        lastSample = now;
        try {
            sample();
        } catch (const std::exception&) {
        }
    }
    std::string trigger;
    if (client && client->takeSnapshotRequest()) trigger = "request";
    else if (cfg.wantsIteration(i)) trigger = "iteration";
    else if (cfg.snapshotPeriodSeconds > 0 &&
             now - lastPeriodic >= std::chrono::duration<double>(cfg.snapshotPeriodSeconds))
        trigger = "periodic";
    if (trigger.empty()) return;
    if (cfg.snapshotPeriodSeconds > 0) lastPeriodic = now;
    takeSnapshot(trigger, i, false);
}

Session::Session(SessionOptions o) : impl_(std::make_unique<Impl>()) {
    Impl& I = *impl_;
    I.cfg = o.capture;
    const char* sock = std::getenv(kEnvSocket);
    if (o.useRecorder && sock && *sock) {
        try {
            I.client = std::make_unique<RecorderClient>(sock);
            I.destination = sock;
            I.recorder = true;
            if (const char* c = std::getenv(kEnvConfig)) I.cfg = CaptureConfig::fromJson(json::parse(c, nullptr, false));
            // This process takes the recording; programs it starts do not.
            ::unsetenv(kEnvSocket);
            ::unsetenv(kEnvConfig);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "memlens: %s; writing a session file instead\n", e.what());
            I.client.reset();
        }
    }
    if (!I.client) {
        std::string out = o.output.empty() ? "memlens-" + std::to_string(::getpid()) + ".memlens" : o.output;
        try {
            auto writer = std::make_unique<model::SessionWriter>(out, std::string("memlens capture library ") + kAgent);
            model::SessionProcess p;
            p.pid = ::getpid();
            p.host = hostName();
            p.command = commandLine();
            std::error_code ec;
            p.cwd = std::filesystem::current_path(ec).string();
            p.startedUs = nowUs();
            std::string why;
            if (o.sampleIntervalMs > 0) I.nvml = Nvml::load(&why);
            json info = {{"writer", "capture library"}};
            if (I.nvml) {
                p.devicesJson = I.nvml->devicesJson();
                info["nvml"] = {{"driver", I.nvml->driverVersion()}};
            } else if (!why.empty()) {
                info["nvml"] = {{"absent", why}};
            }
            p.infoJson = info.dump();
            SessionSink::Options so;
            I.sink = std::make_unique<SessionSink>(std::move(writer), p, so);
            I.destination = out;
            if (I.nvml && !I.nvml->devices().empty()) {
                SessionSink* sink = I.sink.get();
                int64_t self = ::getpid();
                I.sampler = std::make_unique<NvmlSampler>(
                    *I.nvml, [self] { return std::set<int64_t>{self}; },
                    [sink](std::vector<model::DeviceSample> rows) { sink->postSamples(std::move(rows)); },
                    o.sampleIntervalMs);
            }
        } catch (const std::exception& e) {
            std::fprintf(stderr, "memlens: capture disabled: %s: %s\n", out.c_str(), e.what());
            I.sink.reset();
        }
    }
    I.send({{"t", "hello"}, {"v", kProtocolVersion}, {"agent", kAgent}, {"pid", ::getpid()}, {"ppid", ::getppid()},
            {"argv", commandLine()}, {"cwd", std::filesystem::current_path().string()}, {"host", hostName()},
            {"time_us", nowUs()}});

    std::string cudaVersion;
    json info = json::object();
    if (I.cfg.stackDepth > 0) {
        // --stack-depth is not applied here (capture/README.md): said once on stderr, in the
        // process record and in every snapshot's info.
        info["stack_depth"] = {{"requested", I.cfg.stackDepth}, {"applied", false}, {"note", kStackDepthNote}};
        static std::once_flag said;
        std::call_once(said, [&] {
            std::fprintf(stderr, "memlens: stack depth %lld is not applied by the C++ capture library: %s\n",
                         static_cast<long long>(I.cfg.stackDepth), kStackDepthNote);
        });
    }
#if defined(MEMLENS_CAPTURE_CUDA)
#if defined(CUDART_VERSION)
    cudaVersion = std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
#endif
    if (!torch::cuda::is_available()) {
        I.note = "no CUDA device is available to this process";
    } else {
        try {
            std::string stacks = I.cfg.stacks == "default" ? "all" : I.cfg.stacks;  // C++: no Python frames
            info["history_api"] = enableHistory(stacks, static_cast<size_t>(std::max<int64_t>(I.cfg.maxEntries, 1)));
            info["stacks"] = stacks;
            I.cuda = true;
#if defined(MEMLENS_CAPTURE_ALLOCATOR)
            if (I.cfg.oomSnapshot) {
                std::lock_guard<std::mutex> lock(gCurrentMu);
                if (!gObserverAttached) {
                    gObserverAttached = attachOomObserver([](auto device, auto&&... rest) {
                        (void)sizeof...(rest);
                        std::lock_guard<std::mutex> g(gCurrentMu);
                        if (!gCurrent) return;
                        int64_t it = 0;
                        {
                            std::lock_guard<std::mutex> l(gCurrent->mu);
                            it = gCurrent->index + 1;
                        }
                        gCurrent->send({{"t", "marker"}, {"time_us", nowUs()}, {"iteration", it},
                                        {"name", "out_of_memory"}, {"data", {{"device", int64_t(device)}}}});
                        gCurrent->takeSnapshot("oom", it, true);
                    });
                }
                info["oom_observer"] = gObserverAttached;
            }
#else
            info["oom_observer"] = false;
            info["oom_observer_absent"] = "built without the CUDA runtime headers";
#endif
        } catch (const std::exception& e) {
            I.note = std::string("recording the allocator history failed: ") + e.what();
        }
    }
#else
    I.note = std::string("the capture library was built against Torch ") + TORCH_VERSION +
             " without CUDA: there is no CUDA allocator, so no allocator snapshots";
#endif
    I.send({{"t", "process"}, {"torch", TORCH_VERSION}, {"cuda", cudaVersion}, {"allocator_snapshots", I.cuda},
            {"snapshots_note", I.note}, {"info", info}});
    I.boundaryUs = nowUs();
    std::lock_guard<std::mutex> lock(gCurrentMu);
    gCurrent = impl_.get();
}

Session::~Session() {
    finish();
    std::lock_guard<std::mutex> lock(gCurrentMu);
    if (gCurrent == impl_.get()) gCurrent = nullptr;
}

void Session::step(std::string_view phase) {
    Impl& I = *impl_;
    int64_t i = 0;
    json extra;
    {
        std::lock_guard<std::mutex> lock(I.mu);
        if (I.finished) return;
        int64_t now = nowUs();
        i = ++I.index;
        I.send({{"t", "iteration"}, {"index", i}, {"phase", std::string(phase)}, {"start_us", I.boundaryUs}, {"end_us", now}});
        I.boundaryUs = now;
        I.afterIteration(i);
        extra = I.cfg.agentExtra;
    }
    detail::scanAfterStep(*this, i, phase, extra);  // retained graphs of watch()ed roots (Watch.cpp)
    detail::recordModelAfterStep(*this, i);          // the watched model's evidence (WatchModel.cpp)
}

void Session::forwardMarker(int64_t index, const json& data) {
    Impl& I = *impl_;
    std::lock_guard<std::mutex> lock(I.mu);
    if (I.finished) return;
    I.send({{"t", "marker"}, {"time_us", nowUs()}, {"iteration", index}, {"name", "forward"}, {"data", data}});
}

void Session::marker(std::string_view name, const json& data) {
    Impl& I = *impl_;
    std::lock_guard<std::mutex> lock(I.mu);
    if (I.finished) return;
    I.send({{"t", "marker"}, {"time_us", nowUs()}, {"iteration", I.index + 1}, {"name", std::string(name)}, {"data", data}});
}

bool Session::snapshot(std::string_view trigger) {
    Impl& I = *impl_;
    std::lock_guard<std::mutex> lock(I.mu);
    if (I.finished) return false;
    return I.takeSnapshot(std::string(trigger), I.index, false);
}

void Session::graphScan(const json& scan, bool partial, std::string_view phase) {
    Impl& I = *impl_;
    std::lock_guard<std::mutex> lock(I.mu);
    if (I.finished) return;
    I.send({{"t", "graph_scan"}, {"iteration", I.index}, {"phase", std::string(phase)}, {"time_us", nowUs()},
            {"partial", partial}, {"scan", scan}});
}

void Session::finish() {
    Impl& I = *impl_;
    json extra;
    {
        std::lock_guard<std::mutex> lock(I.mu);
        if (I.finished) return;
        extra = I.cfg.agentExtra;
    }
    detail::scanAtExit(*this, extra);  // a last scan of watch()ed roots (Watch.cpp)
    {
        std::lock_guard<std::mutex> lock(I.mu);
        if (I.finished) return;
        if (I.cuda && I.cfg.exitSnapshot) I.takeSnapshot("exit", I.index, true);
        I.send({{"t", "bye"}, {"reason", "finish"}});
        I.finished = true;
    }
    {
        // The observer may still be running with this session; wait for it, and stop it.
        std::lock_guard<std::mutex> lock(gCurrentMu);
        if (gCurrent == impl_.get()) gCurrent = nullptr;
    }
    if (I.client) {
        if (!I.client->flush(std::chrono::minutes(10)))
            std::fprintf(stderr, "memlens: not everything reached the recorder\n");
        I.client.reset();
    }
    if (I.sampler) I.sampler->stop();
    if (I.sink) {
        int64_t end = nowUs();
        I.sink->updateProcess([end](model::SessionProcess& p) { p.endedUs = end; });
        I.sink->close();
    }
}

int64_t Session::iteration() const {
    std::lock_guard<std::mutex> lock(impl_->mu);
    return impl_->index + 1;
}

bool Session::toRecorder() const { return impl_->recorder; }
std::string Session::destination() const { return impl_->destination; }
bool Session::allocatorSnapshots() const { return impl_->cuda; }
std::string Session::snapshotsNote() const { return impl_->note; }

bool Session::builtWithCuda() {
#if defined(MEMLENS_CAPTURE_CUDA)
    return true;
#else
    return false;
#endif
}

} // namespace memlens::capture
