#include "memlens/model/HugePages.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace memlens::model {

void adviseHugePages(const void* begin, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr uintptr_t kHuge = uintptr_t(2) << 20;
    const auto b = reinterpret_cast<uintptr_t>(begin);
    const uintptr_t first = (b + kHuge - 1) & ~(kHuge - 1);
    const uintptr_t last = (b + bytes) & ~(kHuge - 1);
    if (begin && last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
    (void)begin;
    (void)bytes;
#endif
}

} // namespace memlens::model
