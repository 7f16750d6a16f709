#include "memlens/capture/ProcessProbe.h"

#include <pwd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cctype>
#include <string_view>
#include <sstream>

namespace memlens::capture {

namespace fs = std::filesystem;

namespace {

std::string readAll(const std::string& path, bool* ok = nullptr) {
    std::ifstream f(path, std::ios::binary);
    if (ok) *ok = static_cast<bool>(f);
    if (!f) return {};
    std::ostringstream ss;
    ss << f.rdbuf();
    if (ok) *ok = !f.bad();
    return ss.str();
}

std::vector<std::string> splitNul(const std::string& s) {
    std::vector<std::string> out;
    size_t a = 0;
    while (a < s.size()) {
        size_t b = s.find('\0', a);
        if (b == std::string::npos) b = s.size();
        out.push_back(s.substr(a, b - a));
        a = b + 1;
    }
    return out;
}

// State (field 3) and start time (field 22) from /proc/PID/stat; the command name may hold
// spaces and parentheses, so fields count from the last ')'.
bool readStat(int64_t pid, char& state, uint64_t& start) {
    std::string s = readAll("/proc/" + std::to_string(pid) + "/stat");
    size_t close = s.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream in(s.substr(close + 2));
    std::string field;
    in >> state;
    for (int i = 4; i <= 22 && in >> field; ++i)
        if (i == 22) start = std::stoull(field);
    return true;
}

} // namespace

std::string ProcessProbe::commandLine(size_t max) const {
    std::string s;
    for (const auto& a : command) s += (s.empty() ? "" : " ") + a;
    if (s.empty()) s = exe;
    for (char& c : s)
        if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // one line, whatever the arguments hold
    return s.size() > max ? s.substr(0, max - 3) + "..." : s;
}

ProcessProbe probeProcess(int64_t pid) {
    ProcessProbe p;
    p.pid = pid;
    if (pid <= 0) return p;
    const std::string dir = "/proc/" + std::to_string(pid);
    char state = '?';
    if (!readStat(pid, state, p.startTime) || state == 'Z' || state == 'X') return p;
    p.exists = true;
    std::istringstream status(readAll(dir + "/status"));
    for (std::string line; std::getline(status, line);)
        if (line.rfind("Uid:", 0) == 0) p.uid = static_cast<uint32_t>(std::stoul(line.substr(4)));
    p.command = splitNul(readAll(dir + "/cmdline"));
    std::error_code ec;
    p.exe = fs::read_symlink(dir + "/exe", ec).string();
    const std::string maps = readAll(dir + "/maps", &p.mapsReadable);
    p.mapsReadable = p.mapsReadable && !maps.empty();

    // The mapped files, by name (no regex over maps: a torch process maps thousands of files).
    auto version = [](const std::string& s, size_t at, int& major, int& minor) {
        // "3.11", or "311" after "cpython-"
        if (at >= s.size() || !std::isdigit(static_cast<unsigned char>(s[at]))) return false;
        major = s[at] - '0';
        size_t k = at + 1 + (at + 1 < s.size() && s[at + 1] == '.');
        int v = 0, digits = 0;
        for (; k < s.size() && std::isdigit(static_cast<unsigned char>(s[k])) && digits < 3; ++k, ++digits)
            v = v * 10 + (s[k] - '0');
        minor = v;
        return digits > 0;
    };
    const std::string base = fs::path(p.exe).filename().string();
    const bool pythonExe = base.rfind("python", 0) == 0;
    bool fromLib = false, fromAbi = false;
    int libMajor = 0, libMinor = 0, abiMajor = 0, abiMinor = 0;
    std::istringstream lines(maps);
    for (std::string line; std::getline(lines, line);) {
        size_t slash = line.find('/');
        if (slash == std::string::npos) continue;
        const std::string_view path(line.data() + slash, line.size() - slash);
        const std::string name(path.substr(path.rfind('/') + 1));
        p.torch = p.torch || isTorchLibrary(path);
        if (!fromLib && name.rfind("libpython", 0) == 0) fromLib = version(name, 9, libMajor, libMinor);
        if (!fromAbi)
            if (size_t c = name.find("cpython-"); c != std::string::npos) fromAbi = version(name, c + 8, abiMajor, abiMinor);
    }
    int major = 0, minor = 0;
    if (pythonExe && version(base, 6, major, minor) && base.find('.') != std::string::npos) {
        p.python = true;
    } else if (fromLib) {
        p.python = true;
        major = libMajor, minor = libMinor;
    } else if (pythonExe) {
        p.python = true;  // an interpreter named without its version: the extension modules tell
        if (fromAbi) major = abiMajor, minor = abiMinor;
    }
    if (p.python) p.pythonMajor = major, p.pythonMinor = minor;
    for (const std::string& kv : splitNul(readAll(dir + "/environ"))) {
        if (kv.rfind("MEMLENS_SOCKET=", 0) == 0) p.recorderSocket = kv.size() > 15;
        if (kv.rfind("MEMLENS_SESSION=", 0) == 0) p.recorderSession = kv.substr(16);
    }
    return p;
}

bool isTorchLibrary(std::string_view path) {
    const std::string_view name = path.substr(path.rfind('/') + 1);
    if (name.rfind("libtorch", 0) == 0 && name.find(".so") != std::string_view::npos) return true;
    return name.rfind("_C.", 0) == 0 && name.find(".so") != std::string_view::npos &&
           path.find("/torch/_C.") != std::string_view::npos;
}

bool stillRunning(const ProcessProbe& p) {
    char state = '?';
    uint64_t start = 0;
    return readStat(p.pid, state, start) && state != 'Z' && state != 'X' && start == p.startTime;
}

std::string userName(uint32_t uid) {
    char buf[4096];
    passwd pw{}, *out = nullptr;
    if (::getpwuid_r(uid, &pw, buf, sizeof buf, &out) == 0 && out) return out->pw_name;
    return "uid " + std::to_string(uid);
}

bool canTraceAny() {
    std::istringstream status(readAll("/proc/self/status"));
    for (std::string line; std::getline(status, line);)
        if (line.rfind("CapEff:", 0) == 0) {
            uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
            return caps & (uint64_t(1) << 19);  // CAP_SYS_PTRACE
        }
    return false;
}

std::optional<int> yamaPtraceScope() {
    bool ok = false;
    std::string s = readAll("/proc/sys/kernel/yama/ptrace_scope", &ok);
    if (!ok || s.empty()) return std::nullopt;
    return std::atoi(s.c_str());
}

} // namespace memlens::capture
