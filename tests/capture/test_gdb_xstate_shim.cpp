// memlens-gdb-xstate-shim-test SHIM.so: the library `attach` preloads into gdb
// (capture/src/GdbXstateShim.cpp). A child of this test is stopped under ptrace; its extended
// register state (NT_X86_XSTATE) is read whole, and its first 576 bytes (the legacy area with
// xmm0, and the XSAVE header) written back through the shim's ptrace with xmm0 changed. Linux
// refuses such a short write from libc's ptrace (EFAULT: what gdb 13 meets on AMX processors);
// through the shim it must succeed, xmm0 must read back as written, every byte after the 576 as
// it was, and the child must go on running. Exit 0 passed, 1 failed, 77 skipped (not x86-64, or
// ptrace not allowed here).
#include <dlfcn.h>
#include <elf.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
#if !defined(__x86_64__)
    std::puts("skipped: the shim acts on x86-64 only");
    return 77;
#else
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s SHIM.so\n", argv[0]);
        return 1;
    }
    void* lib = ::dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        std::fprintf(stderr, "FAILED: cannot load %s: %s\n", argv[1], ::dlerror());
        return 1;
    }
    using PtraceFn = long (*)(enum __ptrace_request, ...);
    auto shim = reinterpret_cast<PtraceFn>(::dlsym(lib, "ptrace"));
    if (!shim) {
        std::fprintf(stderr, "FAILED: %s has no ptrace\n", argv[1]);
        return 1;
    }
    const pid_t child = ::fork();
    if (child == 0) {
        for (;;) ::pause();
    }
    int failures = 0;
    auto check = [&](bool ok, const char* what) {
        std::printf("%s: %s\n", ok ? "  ok" : "  FAILED", what);
        failures += !ok;
    };
    auto end = [&](int code) {
        ::kill(child, SIGKILL);
        ::waitpid(child, nullptr, 0);
        return code;
    };
    if (::ptrace(PTRACE_ATTACH, child, nullptr, nullptr) != 0) {
        std::printf("skipped: ptrace not allowed here (%s)\n", std::strerror(errno));
        return end(77);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    std::vector<unsigned char> before(1 << 16), after(1 << 16);
    iovec whole{before.data(), before.size()};
    if (::ptrace(PTRACE_GETREGSET, child, reinterpret_cast<void*>(NT_X86_XSTATE), &whole) != 0) {
        std::printf("skipped: no extended register state to read (%s)\n", std::strerror(errno));
        return end(77);
    }
    const size_t size = whole.iov_len;
    constexpr size_t kShort = 576, kXmm0 = 160;  // FXSAVE area + XSAVE header; xmm0's offset in it
    std::printf("the extended state is %zu bytes here\n", size);
    if (size <= kShort) {
        std::puts("skipped: no state beyond the legacy area (no AVX)");
        return end(77);
    }
    std::vector<unsigned char> shortState(before.begin(), before.begin() + kShort);
    for (size_t i = 0; i < 16; ++i) shortState[kXmm0 + i] = static_cast<unsigned char>(0xa0 + i);
    shortState[512] |= 2;  // XSTATE_BV: the SSE state is set
    iovec part{shortState.data(), kShort};
    errno = 0;
    const long direct = ::ptrace(PTRACE_SETREGSET, child, reinterpret_cast<void*>(NT_X86_XSTATE), &part);
    std::printf("libc's ptrace writing %zu of %zu bytes: %s\n", kShort, size,
                direct == 0 ? "accepted (this kernel takes short writes)" : std::strerror(errno));
    // that write may have changed nothing or xmm0 alone; read the state again as the baseline
    iovec again{before.data(), before.size()};
    check(::ptrace(PTRACE_GETREGSET, child, reinterpret_cast<void*>(NT_X86_XSTATE), &again) == 0 && again.iov_len == size,
          "the state read again");
    for (size_t i = 0; i < 16; ++i) shortState[kXmm0 + i] = static_cast<unsigned char>(0x50 + i);
    check(shim(PTRACE_SETREGSET, child, reinterpret_cast<void*>(NT_X86_XSTATE), &part) == 0,
          "the shim's ptrace writes the short state");
    iovec read{after.data(), after.size()};
    check(::ptrace(PTRACE_GETREGSET, child, reinterpret_cast<void*>(NT_X86_XSTATE), &read) == 0 && read.iov_len == size,
          "the state read after it");
    check(std::memcmp(after.data() + kXmm0, shortState.data() + kXmm0, 16) == 0, "xmm0 reads back as written");
    check(std::memcmp(after.data() + kShort, before.data() + kShort, size - kShort) == 0,
          "every byte after the written ones is as it was");
    // other requests go to libc's ptrace unchanged
    errno = 0;
    const long word = shim(PTRACE_PEEKUSER, child, reinterpret_cast<void*>(0), nullptr);
    check(errno == 0 && word == ::ptrace(PTRACE_PEEKUSER, child, reinterpret_cast<void*>(0), nullptr),
          "PTRACE_PEEKUSER through the shim gives what libc's gives");
    check(shim(PTRACE_DETACH, child, nullptr, nullptr) == 0, "the child detached through the shim");
    ::usleep(20000);
    check(::waitpid(child, &status, WNOHANG) == 0 && ::kill(child, 0) == 0, "the child runs on");
    std::puts(failures ? "FAILED" : "passed");
    return end(failures ? 1 : 0);
#endif
}
