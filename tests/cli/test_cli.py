#!/usr/bin/env python3
"""memlens-cli against the independent oracle (tests/tools/snapshot_oracle.py), on real snapshots.

For every *.pickle / *.pkl file in the snapshots directory:
  - `stats FILE --json` equals the oracle's stats (parsed JSON: same fields, same device order);
  - `timeline FILE --device D --csv` equals the oracle's rewind row for row, for every device that has
    a trace (and is just the header for a device that has segments but no trace);
  - `state FILE --device D --at LAST --json` equals the file's own final segments and blocks;
  - `state --at -1` and a few indices inside the trace have the reserved bytes of the rewind, and
    coherent segments and blocks;
  - the file re-pickled with protocols 0, 2, 3 and 5 gives byte-identical stats and timelines.
Every file under invalid/ must be refused: exit 1, one stderr line naming the file and saying it is
not a memory snapshot. A few usage errors must exit 2.

usage: test_cli.py --cli PATH --snapshots DIR [--jobs N] [--only SUBSTRING]
Exit status: 0 all passed, 1 failures, 77 skipped (no snapshots directory).
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys
import tempfile
import time

import test_support
from test_support import Report, json_diff, one_line_error, run, short

import snapshot_oracle as oracle

REPICKLE_PROTOCOLS = (0, 2, 3, 5)
STATES = {"active_allocated", "active_pending_free", "inactive", "allocated_before_recording"}
STATE_KEYS = ["device", "name", "at", "reserved_bytes", "allocated_bytes", "requested_bytes", "free_bytes",
              "largest_free_block", "categories", "segments"]
CATEGORIES = ["parameter", "gradient", "optimizer_state", "saved_for_backward", "input", "other"]
SEGMENT_KEYS = ["address", "total_size", "stream", "is_expandable", "pool", "blocks"]
BLOCK_KEYS = ["address", "size", "requested_size", "state"]
SAMPLES_INSIDE = 4  # state --at k checked at this many indices inside each trace


def snapshot_files(d):
    return sorted(os.path.join(d, n) for n in os.listdir(d)
                  if n.endswith((".pickle", ".pkl")) and os.path.isfile(os.path.join(d, n)))


def parse_json(r, label, report):
    try:
        return json.loads(r.out)
    except ValueError as e:
        report.fail(f"{label}: stdout is not JSON ({e}): {short(r.out_text)!r}")
        return None


def ok_run(r, label, report):
    if r.timed_out or r.rc != 0:
        report.fail(f"{label}: expected exit 0, got {r.describe()}")
        return False
    return True


def compare_lines(exp_text, got_text, label, report, max_shown=5):
    exp = exp_text.split("\n")
    got = got_text.split("\n")
    if exp == got:
        report.check(True, label)
        return
    bad = []
    for i in range(max(len(exp), len(got))):
        e = exp[i] if i < len(exp) else "<no line>"
        g = got[i] if i < len(got) else "<no line>"
        if e != g:
            bad.append((i, e, g))
    lines = [f"{label}: {len(bad)} of {len(exp) - 1} lines differ (expected {len(exp) - 1} lines incl. header, "
             f"got {len(got) - 1})"]
    for (i, e, g) in bad[:max_shown]:
        lines.append(f"      line {i + 1}: expected {e!r}\n               got      {g!r}")
    report.fail("\n".join(lines))


def state_coherence(st, label, report):
    """Internal consistency of a `state` output whatever the index: block layout and the totals that
    follow from the contract's definitions."""
    probs = []
    segs = st.get("segments")
    if not isinstance(segs, list):
        report.fail(f"{label}: 'segments' is not a list")
        return
    reserved = free = largest = 0
    for i, s in enumerate(segs):
        if not isinstance(s, dict) or any(k not in s for k in SEGMENT_KEYS):
            probs.append(f"segments[{i}]: keys {sorted(s) if isinstance(s, dict) else s!r}")
            continue
        reserved += s["total_size"]
        addr = s["address"]
        total = 0
        for j, b in enumerate(s["blocks"]):
            if any(k not in b for k in BLOCK_KEYS):
                probs.append(f"segments[{i}].blocks[{j}]: keys {sorted(b)}")
                continue
            if b["address"] != addr:
                probs.append(f"segments[{i}].blocks[{j}]: address {b['address']}, expected {addr} (not contiguous)")
            if b["state"] not in STATES:
                probs.append(f"segments[{i}].blocks[{j}]: state {b['state']!r}")
            if b["state"] == "inactive":
                free += b["size"]
                largest = max(largest, b["size"])
            addr = b["address"] + b["size"]
            total += b["size"]
        if total != s["total_size"]:
            probs.append(f"segments[{i}] at {s['address']}: block sizes add to {total}, total_size {s['total_size']}")
    if st.get("reserved_bytes") != reserved:
        probs.append(f"reserved_bytes {st.get('reserved_bytes')} != sum of total_size {reserved}")
    if st.get("free_bytes") != free:
        probs.append(f"free_bytes {st.get('free_bytes')} != sum of inactive blocks {free}")
    if st.get("largest_free_block") != largest:
        probs.append(f"largest_free_block {st.get('largest_free_block')} != largest inactive block {largest}")
    report.check(not probs, f"{label}: incoherent state: " + "; ".join(probs[:6]) + (f" (+{len(probs) - 6} more)" if len(probs) > 6 else ""))


def block_diff_summary(exp, got):
    """' (N blocks differ: field in <state> blocks xK, ...)' when both have the same block layout."""
    try:
        counts = {}
        total = 0
        for se, sg in zip(exp["segments"], got["segments"]):
            for be, bg in zip(se["blocks"], sg["blocks"]):
                bad = [k for k in BLOCK_KEYS if be.get(k) != bg.get(k)]
                total += bool(bad)
                for k in bad:
                    key = f"{k} of {be['state']} blocks"
                    counts[key] = counts.get(key, 0) + 1
        if not counts:
            return ""
        return f" [in all, {total} blocks differ: " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())) + "]"
    except Exception:
        return ""


def by_address(st):
    segs = st.get("segments")
    if isinstance(segs, list) and all(isinstance(s, dict) and "address" in s for s in segs):
        return dict(st, segments=sorted(segs, key=lambda s: s["address"]))
    return st


class FileCheck:
    def __init__(self, cli, path, tmpdir, report):
        self.cli, self.path, self.tmpdir, self.report = cli, path, tmpdir, report
        self.name = os.path.basename(path)

    def cli_run(self, *args, path=None):
        return run([self.cli, args[0], path or self.path, *args[1:]])

    def __call__(self):
        t0 = time.time()
        report, name = self.report, self.name
        data = oracle.load(self.path)
        exp_stats = oracle.stats(data, newer=True)
        devices = [d["device"] for d in exp_stats["devices"]]
        traced = [d for d in devices if oracle.trace_of(data, d)]

        # stats
        r = self.cli_run("stats", "--json")
        stats_out = r.out if r.rc == 0 else None
        if ok_run(r, f"{name}: {r.cmd()}", report):
            got = parse_json(r, f"{name}: {r.cmd()}", report)
            if got is not None:
                diffs = json_diff(exp_stats, got)
                report.check(not diffs, f"{name}: {r.cmd()}: " + "; ".join(diffs))

        # timeline
        timeline_out = {}
        for d in devices:
            r = self.cli_run("timeline", "--device", str(d), "--csv")
            if ok_run(r, f"{name}: {r.cmd()}", report):
                timeline_out[d] = r.out
                compare_lines(oracle.timeline_csv(data, d), r.out_text, f"{name}: {r.cmd()}", report)

        # state
        for d in devices:
            self.check_states(data, d, d in traced)

        # re-pickled copies must read the same
        for proto in REPICKLE_PROTOCOLS:
            copy = os.path.join(self.tmpdir, f"p{proto}__{name}")
            oracle.repickle(self.path, copy, proto)
            r = self.cli_run("stats", "--json", path=copy)
            label = f"{name} re-pickled with protocol {proto}: {r.cmd()}"
            if ok_run(r, label, report) and stats_out is not None:
                report.check(r.out == stats_out, f"{label}: output differs from the original's: "
                             f"{short(r.out_text, 200)!r} vs {short(stats_out.decode(), 200)!r}")
            for d in devices:
                r = self.cli_run("timeline", "--device", str(d), "--csv", path=copy)
                label = f"{name} re-pickled with protocol {proto}: {r.cmd()}"
                if ok_run(r, label, report) and d in timeline_out:
                    if r.out != timeline_out[d]:
                        compare_lines(timeline_out[d].decode(), r.out_text, label + " vs the original", report)
                    else:
                        report.check(True, label)
            os.unlink(copy)
        return name, time.time() - t0

    def check_states(self, data, d, has_trace):
        report, name = self.report, self.name
        rows = oracle.timeline(data, d)
        last = len(rows) - 1  # -1 where there is no trace

        # At the last entry: exactly the file's own segments and blocks.
        r = self.cli_run("state", "--device", str(d), "--at", str(last), "--json")
        label = f"{name}: {r.cmd()}"
        if ok_run(r, label, report):
            got = parse_json(r, label, report)
            if got is not None:
                exp = oracle.final_state(data, d, newer=True)
                got = by_address(got)
                got.pop("categories", None)  # an estimate the oracle does not make; checked below
                got.pop("name", None)  # "cuda:N": checked with the fields below
                diffs = json_diff(exp, got)
                report.check(not diffs, f"{label}: differs from the file's final state: " + "; ".join(diffs)
                             + block_diff_summary(exp, got))

        if not has_trace:
            return
        # Before the first entry, and a few entries inside the trace.
        live0, res0 = oracle.before_first(data, d)
        points = [(-1, live0, res0)]
        n = len(rows)
        for k in sorted({(n * (i + 1)) // (SAMPLES_INSIDE + 1) for i in range(SAMPLES_INSIDE)} - {n - 1}):
            if 0 <= k < n:
                points.append((k, rows[k][4], rows[k][5]))
        for (k, live, reserved) in points:
            r = self.cli_run("state", "--device", str(d), "--at", str(k), "--json")
            label = f"{name}: {r.cmd()}"
            if not ok_run(r, label, report):
                continue
            got = parse_json(r, label, report)
            if not isinstance(got, dict):
                continue
            missing = [key for key in STATE_KEYS if key not in got]
            extra = [key for key in got if key not in STATE_KEYS]
            report.check(not missing and not extra, f"{label}: fields: missing {missing}, unexpected {extra}")
            report.check(got.get("device") == d and got.get("at") == k and got.get("name") == f"cuda:{d}",
                         f"{label}: device/name/at are {got.get('device')!r}/{got.get('name')!r}/{got.get('at')!r}, "
                         f"expected {d}/cuda:{d}/{k}")
            report.check(got.get("reserved_bytes") == reserved,
                         f"{label}: reserved_bytes expected {reserved} (rewind), got {got.get('reserved_bytes')}")
            state_coherence(got, label, report)
            # the live tensors by (estimated) category: every category once, together the blocks
            # that hold memory (allocated or from before recording), their requested size
            cats = got.get("categories") or {}
            held = sum(min(b["requested_size"], b["size"]) if b["requested_size"] else b["size"]
                       for s in got.get("segments", []) for b in s["blocks"]
                       if b["state"] in ("active_allocated", "allocated_before_recording"))
            report.check(sorted(k for k in cats if k != "estimated") == sorted(CATEGORIES) and
                         sum(cats.get(c, 0) for c in CATEGORIES) == held,
                         f"{label}: categories {cats} do not add up to the {held} bytes the blocks hold")
            if got.get("requested_bytes") != live:
                report.warn(f"{label}: requested_bytes {got.get('requested_bytes')} differs from the rewound live "
                            f"bytes {live} (the contract does not say whether blocks allocated before recording "
                            f"count)")


def check_invalid(cli, d, report):
    files = sorted(os.path.join(d, n) for n in os.listdir(d)) if os.path.isdir(d) else []
    report.check(bool(files), f"no files in {d}")
    not_snapshot = ("that it is not a memory snapshot",
                    lambda m: re.search(r"not\s+a\b.*snapshot", m, re.I) is not None)
    for f in files:
        for args in (["stats", f, "--json"], ["timeline", f, "--device", "0", "--csv"],
                     ["state", f, "--device", "0", "--at", "-1", "--json"]):
            r = run([cli] + args)
            one_line_error(r, f, report, "not a snapshot", place=not_snapshot)


def check_usage(cli, some_file, traced_file, report):
    missing = os.path.join(tempfile.gettempdir(), "memlens-no-such-file.pickle")
    r = run([cli, "stats", missing, "--json"])
    one_line_error(r, missing, report, "missing file")
    if traced_file:
        # An index outside the trace is an error (exit 1 or 2) with one line, whatever the kind.
        data = oracle.load(traced_file)
        d = next(d for d in oracle.devices_of(data) if oracle.trace_of(data, d))
        n = len(oracle.trace_of(data, d))
        for at in (n, -2, 1 << 40):
            r = run([cli, "state", traced_file, "--device", str(d), "--at", str(at), "--json"])
            if r.rc == 0:
                report.fail(f"{r.cmd()}: index {at} is outside the trace of {n} entries, yet exit 0")
            else:
                one_line_error(r, traced_file, report, f"--at {at} outside a trace of {n} entries", expect_rc=(1, 2))
    for args in ([], ["frobnicate"], ["stats"], ["timeline", some_file, "--csv"],
                 ["timeline", some_file, "--device", "zero", "--csv"],
                 ["state", some_file, "--device", "0", "--json"],
                 ["state", some_file, "--device", "0", "--at", "x", "--json"]):
        r = run([cli] + args)
        label = f"{r.cmd()} (usage error)"
        if r.timed_out or r.rc is None or r.rc < 0:
            report.fail(f"{label}: {r.describe()}")
            continue
        report.check(r.rc == 2, f"{label}: expected exit 2, got {r.describe()}")
        report.check(bool(r.err.strip() or r.out.strip()), f"{label}: printed nothing at all")
    # --version: the project's version as CMakeLists.txt declares it, on one line, exit 0
    cmake = open(os.path.join(os.path.dirname(__file__), "..", "..", "CMakeLists.txt")).read()
    want = re.search(r"project\(memlens VERSION ([0-9.]+)", cmake).group(1)
    r = run([cli, "--version"])
    report.check(r.rc == 0 and r.out_text == f"memlens-cli {want}\n" and not r.err,
                 f"{r.cmd()}: expected 'memlens-cli {want}' and exit 0, got {r.describe()} {r.out_text!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--snapshots", required=True)
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--only", help="test only files whose name contains this")
    a = ap.parse_args()

    if not os.path.isdir(a.snapshots):
        print(f"SKIP: snapshots directory {a.snapshots} not found")
        return test_support.SKIP
    if not os.access(a.cli, os.X_OK):
        print(f"FAIL: memlens-cli not found or not executable: {a.cli}")
        return 1
    files = snapshot_files(a.snapshots)
    if a.only:
        files = [f for f in files if a.only in os.path.basename(f)]
    if not files:
        print(f"SKIP: no *.pickle / *.pkl files in {a.snapshots}")
        return test_support.SKIP

    report = Report()
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="memlens-cli-test-") as tmp:
        # Big files first, so that the pool finishes together.
        files.sort(key=lambda f: -os.path.getsize(f))
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            futs = {pool.submit(FileCheck(a.cli, f, tmp, report)): f for f in files}
            for fut in concurrent.futures.as_completed(futs):
                try:
                    name, secs = fut.result()
                    print(f"checked {name} ({secs:.1f} s)")
                except Exception as e:  # a bug in the test itself, or an unreadable file
                    report.fail(f"{os.path.basename(futs[fut])}: test error {type(e).__name__}: {e}")
        if not a.only:
            check_invalid(a.cli, os.path.join(a.snapshots, "invalid"), report)
            traced = [f for f in files if any(len(t) for t in oracle.traces_of(oracle.load(f)))]
            check_usage(a.cli, files[-1], min(traced, key=os.path.getsize) if traced else None, report)
    print(f"({time.time() - t0:.1f} s)")
    return report.finish("cli.snapshots")


if __name__ == "__main__":
    sys.exit(main())
