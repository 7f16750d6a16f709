#pragma once
// What /proc says about a running process, for memlens-cli attach and File > Attach: who owns
// it, what it runs, whether it is a Python interpreter (and which), whether it has loaded torch,
// whether a memlens recorder started it. Reads only; never stops the process.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace memlens::capture {

struct ProcessProbe {
    int64_t pid = 0;
    bool exists = false;       // alive (a zombie is not)
    uint32_t uid = 0;          // its real user
    bool mapsReadable = false; // /proc/PID/maps could be read (this user's, or we may trace it)
    std::string exe;           // the executable ("" when unreadable)
    std::vector<std::string> command;
    int pythonMajor = 0, pythonMinor = 0;  // 0.0: not a Python interpreter (or version unknown)
    bool python = false;
    bool torch = false;        // libtorch or torch's extension module is mapped
    std::string recorderSession;  // MEMLENS_SESSION of a job started by memlens-cli record
    bool recorderSocket = false;  // MEMLENS_SOCKET in its environment
    uint64_t startTime = 0;    // clock ticks after boot (/proc/PID/stat field 22): tells PID reuse

    std::string commandLine(size_t max = 160) const;
};

ProcessProbe probeProcess(int64_t pid);

// Whether a mapped file is torch's: libtorch*.so* or torch/_C.*.so (not torchvision's _C).
bool isTorchLibrary(std::string_view mappedPath);

// Whether the process probed is still the one running under its pid.
bool stillRunning(const ProcessProbe& p);

// The name of a user ("uid N" when unknown).
std::string userName(uint32_t uid);

// Whether this process may trace others (CAP_SYS_PTRACE in its effective set).
bool canTraceAny();

// kernel.yama.ptrace_scope (nullopt without Yama).
std::optional<int> yamaPtraceScope();

} // namespace memlens::capture
