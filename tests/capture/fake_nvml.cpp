// FAKE NVML: stands in for libnvidia-ml.so.1 in tests, where there is no GPU. The recorder loads
// it through MEMLENS_NVML_LIBRARY. One device, "FAKE NVML GPU", 80 GiB; every child process of
// the process that loaded it (the recorder's job) uses 123 MiB on it.
#include <dirent.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {
struct Memory {
    unsigned long long total, free, used;
};
struct ProcessInfo {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
};
unsigned long long calls = 0;

std::vector<unsigned> children() {
    std::vector<unsigned> out;
    if (DIR* d = opendir("/proc")) {
        while (dirent* e = readdir(d)) {
            char* end = nullptr;
            long pid = std::strtol(e->d_name, &end, 10);
            if (!end || *end || pid <= 0) continue;
            std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
            std::string line;
            if (!std::getline(in, line)) continue;
            auto close = line.rfind(')');
            if (close == std::string::npos || close + 4 > line.size()) continue;
            if (std::strtol(line.c_str() + close + 4, nullptr, 10) == getpid()) out.push_back(unsigned(pid));
        }
        closedir(d);
    }
    return out;
}
} // namespace

extern "C" {
int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "fake NVML error"; }
int nvmlDeviceGetCount_v2(unsigned* n) {
    *n = 1;
    return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** h) {
    *h = reinterpret_cast<void*>(uintptr_t(i + 1));
    return 0;
}
int nvmlDeviceGetName(void*, char* buf, unsigned len) {
    std::snprintf(buf, len, "FAKE NVML GPU");
    return 0;
}
int nvmlDeviceGetUUID(void*, char* buf, unsigned len) {
    std::snprintf(buf, len, "GPU-00000000-fake");
    return 0;
}
int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
    m->total = 80ull << 30;
    m->used = (1ull << 30) + (++calls << 20);
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned* count, ProcessInfo* infos) {
    std::vector<unsigned> pids = children();
    if (*count < pids.size()) {
        *count = unsigned(pids.size());
        return 7;  // NVML_ERROR_INSUFFICIENT_SIZE
    }
    for (size_t i = 0; i < pids.size(); ++i) infos[i] = {pids[i], 123ull << 20, 0, 0};
    *count = unsigned(pids.size());
    return 0;
}
int nvmlSystemGetDriverVersion(char* buf, unsigned len) {
    std::snprintf(buf, len, "999.99-fake");
    return 0;
}
}
