// Preloaded into the gdb that `memlens-cli attach` runs (LD_PRELOAD), never into a training job.
//
// gdb 13 (Debian 12's) keeps the x86 extended register state (NT_X86_XSTATE) in a buffer of a
// fixed 2,696 bytes: enough up to AVX-512 and PKRU. On a processor with AMX (Intel Sapphire
// Rapids and later) the kernel's state is 11,008 bytes, and Linux refuses to write a shorter one
// (PTRACE_SETREGSET: EFAULT, "Couldn't write extended state status: Bad address"). gdb then
// fails while it restores the registers after calling a function in the process, and leaves the
// process with half its registers restored: an interrupted system call's restart can leak to it
// (a Python job dies with OSError 514).
//
// This wraps libc's ptrace: a write of the extended state shorter than the kernel's is widened.
// The state is read whole, the caller's bytes laid over its start (the standard XSAVE layout puts
// every feature at the same offset, whatever the length), and the whole of it written. Every
// other call goes to libc's ptrace unchanged. A gdb whose buffer is large enough never meets it.
#include <dlfcn.h>
#include <elf.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstdarg>
#include <cstring>

namespace {

using PtraceFn = long (*)(enum __ptrace_request, ...);

PtraceFn realPtrace() {
    static PtraceFn fn = reinterpret_cast<PtraceFn>(::dlsym(RTLD_NEXT, "ptrace"));
    return fn;
}

#if defined(__x86_64__)
constexpr size_t kLargest = size_t(1) << 16;  // far above any x86 XSAVE area (11,008 bytes with AMX)
alignas(64) unsigned char g_whole[kLargest];  // gdb makes its ptrace calls from one thread

// The caller's short write of the extended state, widened; -2 where it is not one or cannot be.
long widenedXstateWrite(PtraceFn real, pid_t pid, void* addr, void* data) {
    auto* iov = static_cast<iovec*>(data);
    if (!iov || !iov->iov_base || iov->iov_len == 0 || iov->iov_len >= kLargest) return -2;
    iovec whole{g_whole, kLargest};
    if (real(PTRACE_GETREGSET, pid, addr, &whole) != 0 || whole.iov_len <= iov->iov_len) return -2;
    std::memcpy(g_whole, iov->iov_base, iov->iov_len);
    return real(PTRACE_SETREGSET, pid, addr, &whole);
}
#endif

} // namespace

extern "C" long ptrace(enum __ptrace_request request, ...) noexcept {
    va_list ap;
    va_start(ap, request);
    const pid_t pid = va_arg(ap, pid_t);
    void* addr = va_arg(ap, void*);
    void* data = va_arg(ap, void*);
    va_end(ap);
    const PtraceFn real = realPtrace();
#if defined(__x86_64__)
    if (request == PTRACE_SETREGSET && reinterpret_cast<uintptr_t>(addr) == NT_X86_XSTATE)
        if (const long r = widenedXstateWrite(real, pid, addr, data); r != -2) return r;
#endif
    return real(request, pid, addr, data);
}
