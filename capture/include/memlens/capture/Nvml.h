#pragma once
// NVML, loaded at run time with dlopen("libnvidia-ml.so.1"): no link-time dependency, and its
// absence (no driver, CI) is fine. MEMLENS_NVML_LIBRARY names another file (tests use a fake).
// Reads device totals and the memory that given processes use, as nvidia-smi shows it.
#include "memlens/model/SessionData.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace memlens::capture {

class Nvml {
public:
    // nullptr when NVML cannot be loaded or initialised; *why says why.
    static std::unique_ptr<Nvml> load(std::string* why = nullptr);
    ~Nvml();
    Nvml(const Nvml&) = delete;
    Nvml& operator=(const Nvml&) = delete;

    struct Device {
        int index = 0;
        std::string name, uuid;
        uint64_t total = 0;
    };
    const std::vector<Device>& devices() const { return devices_; }
    std::string driverVersion() const { return driver_; }

    struct Reading {
        int device = 0;
        uint64_t used = 0, total = 0;
        std::optional<uint64_t> processUsed;  // summed over the given pids found on the device
    };
    std::vector<Reading> read(const std::set<int64_t>& pids);

    // The devices as a JSON array text: [{"index","name","uuid","total_bytes"}].
    std::string devicesJson() const;

private:
    Nvml() = default;
    struct Api;
    void* lib_ = nullptr;
    std::unique_ptr<Api> api_;
    std::vector<Device> devices_;
    std::vector<void*> handles_;
    std::string driver_;
};

// Samples NVML on its own thread every intervalMs and hands the readings over as DeviceSample
// rows (source "nvml"). A device's row is repeated only when a figure changed, or every 10 s.
class NvmlSampler {
public:
    NvmlSampler(Nvml& nvml, std::function<std::set<int64_t>()> pids,
                std::function<void(std::vector<model::DeviceSample>)> out, int intervalMs);
    ~NvmlSampler();
    void stop();

private:
    void run();
    Nvml& nvml_;
    std::function<std::set<int64_t>()> pids_;
    std::function<void(std::vector<model::DeviceSample>)> out_;
    int intervalMs_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

// The pid and every descendant of it (from /proc).
std::set<int64_t> processTree(int64_t root);

} // namespace memlens::capture
