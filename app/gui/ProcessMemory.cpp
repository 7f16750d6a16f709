#include "ProcessMemory.h"

#include <cstdlib>  // defines __GLIBC__ where it is glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace memlens::gui {

void giveLargeBlocksBack() {
#if defined(__GLIBC__)
    // setting it fixes it: glibc no longer raises it when a mapped block is freed
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
}

} // namespace memlens::gui
