#!/usr/bin/env python3
"""How fast this machine backs memory touched for the first time, in 4 KiB pages and in 2 MiB
(transparent huge) pages, with and without a pause before each touch.

    tests/bench/first_touch.py [--mb 200] [--rounds 3] [--pause 6]

Each round maps MB of anonymous memory twice, advises one mapping MADV_NOHUGEPAGE and the other
MADV_HUGEPAGE, and writes one byte in every 4 KiB of each (the kernel zeroes each page as it is
first written), timing each; with --pause S it waits S seconds before each mapping, long enough for
a VM that reports free pages to its host (/sys/module/page_reporting) to have handed back the
memory of the last one. Prints each touch's time and rate and, where the module is loaded, the
order of the blocks the VM reports.
"""
import argparse
import ctypes
import mmap
import os
import time

PAGE = 4096
HUGE = 2 << 20


def touch(mb, huge):
    n = mb << 20
    m = mmap.mmap(-1, n + HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    m.madvise(mmap.MADV_HUGEPAGE if huge else mmap.MADV_NOHUGEPAGE)
    # the MB written start at the mapping's first 2 MiB boundary, so that all of them can be huge pages
    address = ctypes.addressof(ctypes.c_char.from_buffer(m))
    start = -address % HUGE
    t = time.perf_counter()
    for off in range(start, start + n, PAGE):
        m[off] = 1
    t = time.perf_counter() - t
    m.close()
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pause", type=float, default=0.0)
    a = ap.parse_args()
    order = "/sys/module/page_reporting/parameters/page_reporting_order"
    if os.path.exists(order):
        with open(order) as f:
            print(f"free page reporting: blocks of order {f.read().strip()} are handed to the host")
    for _ in range(a.rounds):
        for huge in (False, True):
            if a.pause:
                time.sleep(a.pause)
            t = touch(a.mb, huge)
            print(f"{a.mb} MB in {'2 MiB' if huge else '4 KiB'} pages"
                  f"{f' after {a.pause:g} s' if a.pause else ''}: {t:.3f} s, {a.mb / 1000 / t:.2f} GB/s")


if __name__ == "__main__":
    main()
