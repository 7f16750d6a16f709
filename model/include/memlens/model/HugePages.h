#pragma once
#include <cstddef>

namespace memlens::model {

// Asks the kernel to back [begin, begin + bytes) with 2 MiB pages where it can (Linux's
// transparent huge pages, in their default "madvise" mode). For arrays of millions of values
// that are reserved up front and written once (the reader's, a trace's lifetimes, the history's
// pairing): a page fault per 4 KiB of them was the largest single cost of reading, about a
// quarter of `stats`' time, most of it the fault itself rather than zeroing the page. Only the
// 2 MiB-aligned part of the range is advised; small ranges, other systems and kernels without
// it are left as they are. Pages not yet touched stay unbacked.
void adviseHugePages(const void* begin, size_t bytes);

// The same for the capacity of a vector (call it after reserving).
template <class Vector>
void adviseHugePages(const Vector& v) {
    adviseHugePages(v.data(), v.capacity() * sizeof(*v.data()));
}

// Reserves n elements in v and advises the reservation (what each large array written once does).
template <class Vector>
void reserveHugePages(Vector& v, size_t n) {
    v.reserve(n);
    adviseHugePages(v);
}

} // namespace memlens::model
