#!/usr/bin/env python3
"""memlens-cli against hostile and broken files (tests/tools/hostile_pickles.py).

Each case is written to a temporary directory and read with `memlens-cli stats FILE --json` under a
2 GiB address-space limit and a 20 s timeout. A refused case must exit 1 with exactly one stderr line
that names the file and, where the case says so, the byte offset / opcode or the key path; nothing may
crash (no signal), hang, or run code (the marker file that the GLOBAL/REDUCE pickles would create must
not exist). Valid cases (controls, and a 9-byte LONG1 frame line of 2^64-1) must exit 0 and agree with
the oracle.

usage: test_hostile.py --cli PATH [--snapshots DIR] [--jobs N] [--rlimit-gib G] [--keep DIR] [--only S]
The real snapshots are optional here: with them, a real file is also cut at 50 places.
"""

import argparse
import concurrent.futures
import json
import os
import re
import resource
import sys
import tempfile
import time

import test_support
from test_support import Report, json_diff, one_line_error, run, short

import hostile_pickles
import snapshot_oracle as oracle

TIMEOUT_S = 20


def limiter(gib):
    def apply():
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if gib > 0:
            lim = int(gib * (1 << 30))
            resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    return apply


def place_check(case):
    """(description, predicate on the error line with the file name removed) for a case's place."""
    p = case.place
    if p is None:
        return None
    kind = p[0]
    if kind == "op":
        _, off, name = p
        rx_off = re.compile(r"(?<![0-9])" + str(off) + r"(?![0-9])")
        alt = case.extra.get("alt_key")
        desc = f"byte offset {off} or opcode {name}" + (f" or key '{alt}'" if alt else "")
        return desc, lambda m: bool(rx_off.search(m)) or name.lower() in m.lower() or (alt is not None and alt in m)
    if kind == "key":
        text = p[1]
        return f"key path containing {text!r}", lambda m: text in m
    if kind == "offset":
        limit = p[1]
        return (f"a byte offset (at most {limit})",
                lambda m: any(int(x) <= limit for x in re.findall(r"(?<![0-9])[0-9]+(?![0-9])", m)))
    raise ValueError(p)


def real_source(snapdir):
    """A real snapshot of modest size to cut into pieces: the smallest file over 100 KB."""
    if not snapdir or not os.path.isdir(snapdir):
        return None
    files = [os.path.join(snapdir, n) for n in os.listdir(snapdir) if n.endswith((".pickle", ".pkl"))]
    files = [f for f in files if os.path.getsize(f) > 100_000]
    return min(files, key=os.path.getsize) if files else None


def check_case(cli, case, path, marker, gib, report):
    r = run([cli, "stats", path, "--json"], timeout=TIMEOUT_S, preexec_fn=limiter(gib))
    what = case.expect + (f": {case.note}" if case.note else "")
    if os.path.exists(marker):
        report.fail(f"{case.name}: {r.cmd()}: THE PICKLE WAS EXECUTED: {marker} exists")
        os.unlink(marker)
    else:
        report.check(True, case.name)
    if case.expect == "refuse":
        one_line_error(r, path, report, what, place=place_check(case))
    elif case.expect == "survive":
        if r.timed_out or r.rc is None or r.rc < 0 or r.rc not in (0, 1):
            report.fail(f"{case.name}: {r.cmd()} ({what}): expected exit 0 or 1, got {r.describe()}")
        elif r.rc == 1:
            one_line_error(r, path, report, what)
        else:  # accepted: not wrong, but say where it disagrees with Python's reading
            try:
                data = oracle.loads(case.data)
                diffs = json_diff(oracle.stats(data, newer=True), json.loads(r.out))
            except Exception as e:
                diffs = [f"{type(e).__name__}: {e}"]
            if diffs:
                report.warn(f"{case.name}: {r.cmd()} ({what}): accepted, and differs from the oracle: "
                            + "; ".join(diffs))
    else:  # accept
        label = f"{case.name}: {r.cmd()} ({what})"
        if r.timed_out or r.rc != 0:
            report.fail(f"{label}: expected exit 0, got {r.describe()}")
            return r
        try:
            got = json.loads(r.out)
        except ValueError as e:
            report.fail(f"{label}: stdout is not JSON ({e}): {short(r.out_text)!r}")
            return r
        data = oracle.loads(case.data)
        diffs = json_diff(oracle.stats(data, newer=True), got)
        report.check(not diffs, f"{label}: " + "; ".join(diffs))
        for d in oracle.devices_of(data):
            t = run([cli, "timeline", path, "--device", str(d), "--csv"], timeout=TIMEOUT_S, preexec_fn=limiter(gib))
            exp = oracle.timeline_csv(data, d)
            tl = f"{case.name}: {t.cmd()}"
            if t.rc != 0:
                report.fail(f"{tl}: expected exit 0, got {t.describe()}")
            elif t.out_text != exp:
                el, gl = exp.split("\n"), t.out_text.split("\n")
                first = next((i for i in range(max(len(el), len(gl)))
                              if (el[i] if i < len(el) else None) != (gl[i] if i < len(gl) else None)), None)
                report.fail(f"{tl}: differs from the oracle from line {first + 1}: expected "
                            f"{el[first] if first < len(el) else None!r}, got {gl[first] if first < len(gl) else None!r}")
            else:
                report.check(True, tl)
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--snapshots", help="real snapshots (optional): one of them is also truncated")
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--rlimit-gib", type=float, default=2.0, help="address-space limit of memlens-cli (0: none)")
    ap.add_argument("--keep", help="write the cases here and keep them (default: a temporary directory)")
    ap.add_argument("--only", help="run only cases whose name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every case's exit status and stderr")
    a = ap.parse_args()

    if not os.access(a.cli, os.X_OK):
        print(f"FAIL: memlens-cli not found or not executable: {a.cli}")
        return 1
    report = Report()
    t0 = time.time()
    tmp_obj = None
    if a.keep:
        tmp = a.keep
        os.makedirs(tmp, exist_ok=True)
    else:
        tmp_obj = tempfile.TemporaryDirectory(prefix="memlens-hostile-")
        tmp = tmp_obj.name
    try:
        marker = os.path.join(tmp, "PWNED")
        real = real_source(a.snapshots)
        if a.snapshots and real is None:
            print(f"note: no real snapshot to truncate in {a.snapshots}")
        cases = hostile_pickles.cases(tmp, real)
        if a.only:
            cases = [c for c in cases if a.only in c.name]

        # The cases themselves: the harness's expectations must not contradict Python's reading,
        # except where memlens is deliberately stricter (wider-than-64-bit integers, odd cases).
        for c in cases:
            if c.expect == "accept":
                v = hostile_pickles.python_verdict(c)
                if v != "accept":
                    report.fail(f"{c.name}: harness error: Python cannot read this valid case ({v})")

        def one(c):
            path = os.path.join(tmp, c.name + ".pickle")
            with open(path, "wb") as f:
                f.write(c.data)
            r = check_case(a.cli, c, path, marker, a.rlimit_gib, report)
            if a.verbose:
                with report.lock:
                        print(f"{c.name}: {c.expect}: {r.describe() if r.rc else 'exit 0'}", flush=True)
            if not a.keep:
                os.unlink(path)

        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            # Largest first.
            for fut in [pool.submit(one, c) for c in sorted(cases, key=lambda c: -len(c.data))]:
                try:
                    fut.result()
                except Exception as e:
                    report.fail(f"test error {type(e).__name__}: {e}")
        report.check(not os.path.exists(marker), f"{marker} exists: a hostile pickle was executed")
        print(f"{len(cases)} cases ({time.time() - t0:.1f} s)" + (f"; truncated real file {os.path.basename(real)}" if real else ""))
    finally:
        if tmp_obj:
            tmp_obj.cleanup()
    return report.finish("cli.hostile")


if __name__ == "__main__":
    sys.exit(main())
