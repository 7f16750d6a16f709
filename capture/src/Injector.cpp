#include "Injector.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

extern char** environ;

namespace memlens::capture {

namespace fs = std::filesystem;

extern const unsigned char kGdbXstateShim[];  // GdbXstateShimBytes.cpp, generated
extern const unsigned long kGdbXstateShim_size;

namespace {

struct Ran {
    int status = -1;  // exit status; -1: could not run or timed out
    std::string output;  // stdout and stderr together
    bool timedOut = false;
};

// Runs argv in a process group of its own (a Ctrl-C at the terminal reaches memlens-cli, which
// detaches in order, not the debugger in the middle of its work), with default signals; with
// `preload`, a library put first in its LD_PRELOAD.
Ran run(const std::vector<std::string>& argv, int timeoutSeconds, const std::string& preload = {}) {
    Ran r;
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return r;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, out[1], 2);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<std::string> env;
    bool preloaded = preload.empty();
    for (char** e = environ; *e; ++e) {
        env.emplace_back(*e);
        if (!preloaded && env.back().rfind("LD_PRELOAD=", 0) == 0) {
            env.back().insert(std::strlen("LD_PRELOAD="), preload + ":");
            preloaded = true;
        }
    }
    if (!preloaded) env.push_back("LD_PRELOAD=" + preload);
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = 0;
    int err = ::posix_spawnp(&pid, args[0], &fa, &at, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    ::close(out[1]);
    if (err != 0) {
        ::close(out[0]);
        r.output = std::string("cannot run ") + argv[0] + ": " + std::strerror(err);
        return r;
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
    char buf[4096];
    for (;;) {
        int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        deadline - std::chrono::steady_clock::now()).count());
        if (left <= 0) {
            r.timedOut = true;
            ::kill(pid, SIGKILL);
            break;
        }
        pollfd p{out[0], POLLIN, 0};
        int n = ::poll(&p, 1, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) continue;
        ssize_t got = ::read(out[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        r.output.append(buf, static_cast<size_t>(got));
    }
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!r.timedOut) r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

std::string lastLine(const std::string& text, const char* containing = "") {
    std::istringstream in(text);
    std::string last;
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line.find(containing) != std::string::npos) last = line;
    return last;
}

bool writeFile(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    return static_cast<bool>(f);
}

// GdbXstateShim.cpp's library, carried in this program (capture/CMakeLists.txt), written into DIR
// for the gdb it runs; its path, or empty where it is not needed (not x86-64) or not written
// (gdb then runs as it is).
std::string writeGdbShim(const std::string& dir) {
#if defined(__x86_64__)
    const std::string path = dir + "/memlens-gdb-xstate.so";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(kGdbXstateShim), static_cast<std::streamsize>(kGdbXstateShim_size));
    return f ? path : std::string();
#else
    (void)dir;
    return {};
#endif
}


// gdb's Python: map a page, write the code into it, queue the pending call; one result line.
const char* kGdbScript = R"PY(
import gdb
code = %CODE%
def result(text):
    gdb.write("MEMLENS-INJECT " + text + "\n")
try:
    size = (len(code.encode("utf-8")) + 200 + 4095) // 4096 * 4096
    page = int(gdb.parse_and_eval("(long)mmap(0, %d, 3, 0x22, -1, 0)" % size))
    if page in (0, -1):
        raise gdb.error("mmap in the process failed")
    text = code.replace("__MEMLENS_PAGE__", "(%d, %d)" % (page, size))
    call = "exec(%r, {'__name__': '__memlens_attach__'})" % text
    data = call.encode("utf-8") + b"\0"
    if len(data) > size:
        raise gdb.error("the bootstrap does not fit its page")
    gdb.selected_inferior().write_memory(page, data)
    rc = int(gdb.parse_and_eval("(int)Py_AddPendingCall((void*)PyRun_SimpleString, (void*)%d)" % page))
    if rc != 0:
        gdb.parse_and_eval("(int)munmap((void*)%d, %d)" % (page, size))
        raise gdb.error("Py_AddPendingCall refused (%d): the interpreter is finalizing or busy" % rc)
    result("ok %d" % page)
except gdb.error as e:
    result("error " + str(e).replace("\n", " "))
)PY";

} // namespace

std::string pythonLiteral(const std::string& text) { return nlohmann::json(text).dump(); }

bool usesRemoteExec(const ProcessProbe& target) {
    return target.pythonMajor > 3 || (target.pythonMajor == 3 && target.pythonMinor >= 14);
}

std::string findGdb() {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
        if (d.empty()) continue;
        fs::path p = fs::path(d) / "gdb";
        if (::access(p.c_str(), X_OK) == 0) return p.string();
    }
    return {};
}

Injection injectPython(const ProcessProbe& target, const std::string& code, const std::string& scriptDir,
                       const std::string& gdb) {
    Injection in;
    const std::string pid = std::to_string(target.pid);
    if (usesRemoteExec(target)) {
        in.method = "sys.remote_exec";
        std::string script = scriptDir + "/attach.py";
        std::string text = code;
        for (size_t at; (at = text.find("__MEMLENS_PAGE__")) != std::string::npos;) text.replace(at, 16, "None");
        if (!writeFile(script, text)) {
            in.error = "cannot write " + script;
            return in;
        }
        Ran r = run({target.exe, "-I", "-c", "import sys; sys.remote_exec(" + pid + ", " + pythonLiteral(script) + ")"}, 60);
        in.ok = r.status == 0;
        if (!in.ok) {
            std::string why = lastLine(r.output);
            in.permission = why.find("PermissionError") != std::string::npos ||
                            why.find("Operation not permitted") != std::string::npos;
            in.error = "sys.remote_exec failed: " + (why.empty() ? "exit " + std::to_string(r.status) : why);
        }
        return in;
    }
    in.method = "gdb";
    std::string script = scriptDir + "/inject-gdb.py";
    std::string text = kGdbScript;
    text.replace(text.find("%CODE%"), 6, pythonLiteral(code));
    if (!writeFile(script, text)) {
        in.error = "cannot write " + script;
        return in;
    }
    // Only libc's and libpython's symbols are read (not torch's hundreds of megabytes). gdb runs
    // with GdbXstateShim preloaded: gdb 13 cannot restore the registers on processors with AMX.
    Ran r = run({gdb, "-q", "-nx", "-batch", "-iex", "set debuginfod enabled off", "-iex", "set auto-solib-add off",
                 "-p", pid, "-ex", "sharedlibrary libc\\.", "-ex", "sharedlibrary libpython", "-x", script},
                120, writeGdbShim(scriptDir));
    std::string line = lastLine(r.output, "MEMLENS-INJECT ");
    if (line.rfind("MEMLENS-INJECT ok", 0) == 0) {
        in.ok = true;
        return in;
    }
    std::string ptrace = lastLine(r.output, "ptrace:");
    if (!ptrace.empty()) {
        in.permission = ptrace.find("not permitted") != std::string::npos;
        in.error = "gdb could not attach: " + ptrace;
    } else if (!line.empty()) {
        in.error = "gdb: " + line.substr(std::strlen("MEMLENS-INJECT error "));
    } else if (r.timedOut) {
        in.error = "gdb did not finish within 120 s";
    } else {
        std::string why = lastLine(r.output);
        in.error = "gdb failed" + (why.empty() ? std::string() : ": " + why);
    }
    return in;
}

} // namespace memlens::capture
