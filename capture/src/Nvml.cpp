#include "memlens/capture/Nvml.h"

#include "memlens/model/SessionWriter.h"

#include <dirent.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace memlens::capture {

namespace {

using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kSuccess = 0;
constexpr nvmlReturn_t kInsufficientSize = 7;
constexpr unsigned long long kValueNotAvailable = ~0ull;

struct MemoryInfo {
    unsigned long long total, free, used;
};
// nvmlProcessInfo_t of the _v2 / _v3 calls, and the older layout of the unversioned call.
struct ProcessInfoV2 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
};
struct ProcessInfoV1 {
    unsigned int pid;
    unsigned long long usedGpuMemory;
};

} // namespace

struct Nvml::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    const char* (*errorString)(nvmlReturn_t) = nullptr;
    nvmlReturn_t (*count)(unsigned int*) = nullptr;
    nvmlReturn_t (*handle)(unsigned int, nvmlDevice_t*) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned int) = nullptr;
    nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned int) = nullptr;
    nvmlReturn_t (*memory)(nvmlDevice_t, MemoryInfo*) = nullptr;
    nvmlReturn_t (*processesV2)(nvmlDevice_t, unsigned int*, ProcessInfoV2*) = nullptr;  // _v3 or _v2
    nvmlReturn_t (*processesV1)(nvmlDevice_t, unsigned int*, ProcessInfoV1*) = nullptr;
    nvmlReturn_t (*driver)(char*, unsigned int) = nullptr;
};

std::unique_ptr<Nvml> Nvml::load(std::string* why) {
    const char* override = std::getenv("MEMLENS_NVML_LIBRARY");
    const char* file = override && *override ? override : "libnvidia-ml.so.1";
    void* lib = ::dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        if (why) *why = std::string("NVML not available (") + ::dlerror() + ")";
        return nullptr;
    }
    std::unique_ptr<Nvml> n(new Nvml);
    n->lib_ = lib;
    n->api_ = std::make_unique<Api>();
    Api& a = *n->api_;
    auto sym = [&](auto& fn, std::initializer_list<const char*> names) {
        for (const char* s : names)
            if (void* p = ::dlsym(lib, s)) {
                fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
                return;
            }
    };
    sym(a.init, {"nvmlInit_v2", "nvmlInit"});
    sym(a.shutdown, {"nvmlShutdown"});
    sym(a.errorString, {"nvmlErrorString"});
    sym(a.count, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"});
    sym(a.handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"});
    sym(a.name, {"nvmlDeviceGetName"});
    sym(a.uuid, {"nvmlDeviceGetUUID"});
    sym(a.memory, {"nvmlDeviceGetMemoryInfo"});
    sym(a.processesV2, {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"});
    sym(a.processesV1, {"nvmlDeviceGetComputeRunningProcesses"});
    sym(a.driver, {"nvmlSystemGetDriverVersion"});
    if (!a.init || !a.count || !a.handle || !a.memory) {
        if (why) *why = "NVML lacks the functions memlens needs";
        a.shutdown = nullptr;
        return nullptr;  // the destructor dlcloses
    }
    if (nvmlReturn_t rc = a.init(); rc != kSuccess) {
        if (why) *why = std::string("NVML failed to start: ") + (a.errorString ? a.errorString(rc) : std::to_string(rc));
        a.shutdown = nullptr;  // nothing to shut down
        return nullptr;
    }
    unsigned int count = 0;
    if (a.count(&count) != kSuccess) count = 0;
    for (unsigned int i = 0; i < count; ++i) {
        nvmlDevice_t h = nullptr;
        if (a.handle(i, &h) != kSuccess) continue;
        Device d;
        d.index = static_cast<int>(i);
        char buf[256] = {};
        if (a.name && a.name(h, buf, sizeof buf - 1) == kSuccess) d.name = buf;
        std::memset(buf, 0, sizeof buf);
        if (a.uuid && a.uuid(h, buf, sizeof buf - 1) == kSuccess) d.uuid = buf;
        MemoryInfo m{};
        if (a.memory(h, &m) == kSuccess) d.total = m.total;
        n->devices_.push_back(d);
        n->handles_.push_back(h);
    }
    if (a.driver) {
        char buf[128] = {};
        if (a.driver(buf, sizeof buf - 1) == kSuccess) n->driver_ = buf;
    }
    return n;
}

Nvml::~Nvml() {
    if (api_ && api_->shutdown) api_->shutdown();
    if (lib_) ::dlclose(lib_);
}

namespace {

// The compute processes on a device through nvmlDeviceGetComputeRunningProcesses (v1 or v2: the
// same call, different record layouts), growing the buffer while NVML says it is too small.
template <typename Info, typename Query, typename Fn>
void forEachProcess(Query query, nvmlDevice_t device, Fn&& fn) {
    std::vector<Info> infos(8);
    for (int attempt = 0; attempt < 4; ++attempt) {
        unsigned int n = static_cast<unsigned int>(infos.size());
        const nvmlReturn_t rc = query(device, &n, infos.data());
        if (rc == kInsufficientSize) {
            infos.resize(n + 8);
            continue;
        }
        if (rc == kSuccess)
            for (unsigned int k = 0; k < n && k < infos.size(); ++k) fn(infos[k].pid, infos[k].usedGpuMemory);
        return;
    }
}

} // namespace

std::vector<Nvml::Reading> Nvml::read(const std::set<int64_t>& pids) {
    std::vector<Reading> out;
    const Api& a = *api_;
    for (size_t i = 0; i < handles_.size(); ++i) {
        Reading r;
        r.device = devices_[i].index;
        MemoryInfo m{};
        if (a.memory(handles_[i], &m) != kSuccess) continue;
        r.used = m.used;
        r.total = m.total;
        auto account = [&](unsigned int pid, unsigned long long used) {
            if (!pids.count(pid) || used == kValueNotAvailable) return;
            r.processUsed = r.processUsed.value_or(0) + used;
        };
        if (a.processesV2) forEachProcess<ProcessInfoV2>(a.processesV2, handles_[i], account);
        else if (a.processesV1) forEachProcess<ProcessInfoV1>(a.processesV1, handles_[i], account);
        // A process with no memory on the device is "0 bytes", not unknown.
        if (!r.processUsed && !pids.empty()) r.processUsed = 0;
        out.push_back(r);
    }
    return out;
}

std::string Nvml::devicesJson() const {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : devices_)
        arr.push_back({{"index", d.index}, {"name", d.name}, {"uuid", d.uuid}, {"total_bytes", d.total}});
    return arr.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::set<int64_t> processTree(int64_t root) {
    std::set<int64_t> tree{root};
    std::multimap<int64_t, int64_t> children;
    if (DIR* d = ::opendir("/proc")) {
        while (dirent* e = ::readdir(d)) {
            char* end = nullptr;
            long pid = std::strtol(e->d_name, &end, 10);
            if (!end || *end || pid <= 0) continue;
            std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
            std::string line;
            if (!std::getline(in, line)) continue;
            auto close = line.rfind(')');
            if (close == std::string::npos || close + 4 > line.size()) continue;
            // ") S ppid ..."
            long ppid = std::strtol(line.c_str() + close + 4, nullptr, 10);
            children.emplace(ppid, pid);
        }
        ::closedir(d);
    }
    std::vector<int64_t> todo{root};
    while (!todo.empty()) {
        int64_t p = todo.back();
        todo.pop_back();
        auto [b, e] = children.equal_range(p);
        for (auto it = b; it != e; ++it)
            if (tree.insert(it->second).second) todo.push_back(it->second);
    }
    return tree;
}

NvmlSampler::NvmlSampler(Nvml& nvml, std::function<std::set<int64_t>()> pids,
                         std::function<void(std::vector<model::DeviceSample>)> out, int intervalMs)
    : nvml_(nvml), pids_(std::move(pids)), out_(std::move(out)), intervalMs_(std::max(intervalMs, 10)) {
    thread_ = std::thread([this] { run(); });
}

NvmlSampler::~NvmlSampler() { stop(); }

void NvmlSampler::stop() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void NvmlSampler::run() {
    struct Last {
        model::DeviceSample s;
        std::chrono::steady_clock::time_point at;
    };
    std::map<int, Last> last;
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
        lock.unlock();
        std::set<int64_t> pids = pids_();
        auto now = std::chrono::steady_clock::now();
        std::vector<model::DeviceSample> rows;
        for (const auto& r : nvml_.read(pids)) {
            model::DeviceSample s;
            s.timeUs = model::sessionNowUs();
            s.device = r.device;
            s.source = "nvml";
            s.deviceUsed = static_cast<int64_t>(r.used);
            s.deviceTotal = static_cast<int64_t>(r.total);
            if (r.processUsed) s.processUsed = static_cast<int64_t>(*r.processUsed);
            auto it = last.find(r.device);
            bool changed = it == last.end() || it->second.s.deviceUsed != s.deviceUsed ||
                           it->second.s.processUsed != s.processUsed || it->second.s.deviceTotal != s.deviceTotal ||
                           now - it->second.at >= std::chrono::seconds(10);
            if (changed) {
                last[r.device] = {s, now};
                rows.push_back(s);
            }
        }
        if (!rows.empty()) out_(std::move(rows));
        lock.lock();
        cv_.wait_for(lock, std::chrono::milliseconds(intervalMs_), [&] { return stop_; });
    }
}

} // namespace memlens::capture
