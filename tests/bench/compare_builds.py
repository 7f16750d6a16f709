#!/usr/bin/env python3
"""Alternating runs of `memlens-cli stats FILE` (or another command: --command) for several
builds, without /usr/bin/time (for a
machine that lacks it, such as the GPU host): ROUNDS rounds, each variant once a round, so that a
machine whose speed drifts slows each alike. A variant is a build, optionally pinned to the first
K CPUs (--cores K) and optionally run with transparent huge pages disabled for the process
(prctl PR_SET_THP_DISABLE, inherited across exec: the reader's MADV_HUGEPAGE advice then does
nothing). Prints per variant the least and median wall time, the largest peak RSS, and the
median minor page faults and involuntary context switches (from wait4).

  tests/bench/compare_builds.py FILE --rounds 3 --cli head=build/app/memlens-cli \
      --cli old=/tmp/cli-old [--cores 2] [--no-thp] [--command "replay --device 0 --json"]

With --cores and --no-thp each build also runs in those forms (all CPUs and THP on always run).
With --pause S, each run starts S seconds after the last one ended: long enough for a VM that
reports free pages to its host (virtio-balloon free page reporting) to have given the memory the
last run freed back, so that each run touches memory the host must back again, as a user's single
run does. Back-to-back runs (no pause) reuse memory the last run left backed.
"""
import argparse
import ctypes
import os
import shlex
import statistics
import sys
import time

PR_SET_THP_DISABLE = 41


def run_once(cli, command, path, cores, no_thp, expect_exit=0):
    def child_setup():
        if cores:
            os.sched_setaffinity(0, set(sorted(os.sched_getaffinity(0))[:cores]))
        if no_thp:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
                os._exit(97)

    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            child_setup()
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.execv(cli, [cli, *command, path])
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code != expect_exit:
        sys.exit(f"{cli} {shlex.join(command)} {path}: exit {code} (expected {expect_exit})")
    return wall, ru.ru_maxrss, ru.ru_minflt, ru.ru_nivcsw, ru.ru_utime, ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cli", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--cores", type=int, default=0)
    ap.add_argument("--no-thp", action="store_true")
    ap.add_argument("--pause", type=float, default=0.0, help="seconds to wait before each run (default 0)")
    ap.add_argument("--command", default="stats", help="the command and its options, FILE last (default: stats)")
    ap.add_argument("--expect-exit", type=int, default=0,
                    help="the exit status every run must end with (default 0; `check` ends with 3 where it finds an error)")
    a = ap.parse_args()
    command = shlex.split(a.command)
    size = os.path.getsize(a.file)
    variants = []
    for spec in a.cli:
        name, _, path = spec.partition("=")
        forms = [(0, False)]
        if a.cores:
            forms.append((a.cores, False))
        if a.no_thp:
            forms.append((0, True))
        for cores, no_thp in forms:
            label = name + (f" {cores} cores" if cores else "") + (" no THP" if no_thp else "")
            variants.append((label, path, cores, no_thp, []))
    for _ in range(a.rounds):
        for label, path, cores, no_thp, runs in variants:
            if a.pause:
                time.sleep(a.pause)
            runs.append(run_once(path, command, a.file, cores, no_thp, a.expect_exit))
    print(f"{a.command} {a.file}: {size / 1e6:.1f} MB, {a.rounds} rounds, {os.cpu_count()} CPUs"
          + (f", {a.pause:g} s pause before each run" if a.pause else ""))
    for label, _, _, _, runs in variants:
        walls = sorted(r[0] for r in runs)
        peak = max(r[1] for r in runs)  # KiB
        print(f"  {label}: least {walls[0]:.3f} s, median {statistics.median(walls):.3f} s, "
              f"peak {peak / 1024:.1f} MiB ({peak * 1024 / size:.2f} of the file), "
              f"minor faults {statistics.median(r[2] for r in runs):.0f}, "
              f"involuntary switches {statistics.median(r[3] for r in runs):.0f}, "
              f"user {statistics.median(r[4] for r in runs):.2f} s, sys {statistics.median(r[5] for r in runs):.2f} s")


if __name__ == "__main__":
    main()
