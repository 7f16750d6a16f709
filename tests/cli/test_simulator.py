#!/usr/bin/env python3
"""memlens-cli replay / whatif: the allocator simulator against the recordings and against answers
known analytically.

1. Fidelity. For every device trace of every real snapshot (and of traces generated here: the
   bundled example, make_large_snapshot.py), `replay --csv` must list, row for row, the recording's
   own alloc / free_completed / segment_alloc / segment_free / segment_map / segment_unmap / oom
   entries (action, address, size, stream), read here with Python's pickle: the simulation,
   started from the rewound state with the snapshot's allocator settings, reproduces the recording.
   A file that is known to differ is pinned in KNOWN_DIFFERENCES with the first differing entry and
   the reason; `replay --json` must agree (allocations at the recorded address, first difference).
2. What-if on generated traces whose answers follow by hand:
   - a capacity below the peak: the first allocation that does not fit is the first oom;
   - a fragmentation pattern (small live blocks pinning 20 MiB segments) that ends in an oom with
     the default settings, and that expandable segments cure;
   - a leak (a frame that keeps one allocation per iteration): --free-stack frees them at the end
     of their iteration and the peak falls to what one iteration needs; --drop-above; --scale
     (marked estimated).
   And `whatif` with nothing changed gives the recording's peaks, first oom and series.
3. --fix FINDING on the bundled example (resources/make_example.py plants a kept graph of 3 x 8 MiB
   per iteration for 30 iterations and dies of fragmentation): the kept graph fixed frees 720 MiB
   early and the out-of-memory goes; the fragmentation fixed (expandable segments) too.
4. Errors: unknown keys, bad values, a finding that is not there: one stderr line, exit 1;
   --fix with --free-stack: exit 2.

usage: test_simulator.py --cli PATH --snapshots DIR --source-dir DIR [--python PY]
Exit status: 0 all passed, 1 failures, 77 skipped (no snapshots directory; the generated checks
still run first and fail the test if they fail).
"""

import argparse
import csv
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile

import test_support
from test_support import Report, one_line_error, run, short

import snapshot_oracle as oracle

MiB = 1 << 20
COMPARED = {"alloc", "free_completed", "free", "segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom"}

# file name -> {device: (first differing entry, reason)}; files and devices not listed must match exactly.
KNOWN_DIFFERENCES = {}


def recorded_rows(trace):
    rows = []
    for e in trace:
        a = e.get("action")
        if a not in COMPARED:
            continue
        a = "free_completed" if a == "free" else a
        addr = e.get("device_free", 0) if a == "oom" else e.get("addr", 0)
        rows.append((a, int(addr), int(e.get("size", 0)), int(e.get("stream", 0) or 0)))
    return rows


def recorded_index(trace, k):
    """Trace index of the k-th compared entry."""
    n = -1
    for i, e in enumerate(trace):
        if e.get("action") in COMPARED:
            n += 1
            if n == k:
                return i
    return None


def simulated_rows(text):
    rd = csv.reader(io.StringIO(text))
    header = next(rd, None)
    if header != ["action", "addr", "size", "stream"]:
        raise ValueError(f"bad header {header!r}")
    return [(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rd]


def check_fidelity(cli, path, report, label=None, known=None):
    label = label or os.path.basename(path)
    data = oracle.load(path)
    out = {}
    for dev, trace in enumerate(oracle.traces_of(data)):
        if not trace:
            continue
        r = run([cli, "replay", path, "--device", str(dev), "--csv"], timeout=300)
        if not report.check(r.rc == 0, f"{label} device {dev}: replay --csv: {r.describe()}"):
            continue
        sim = simulated_rows(r.out_text)
        rec = recorded_rows(trace)
        first = next((k for k in range(min(len(sim), len(rec))) if sim[k] != rec[k]), None)
        if first is None and len(sim) != len(rec):
            first = min(len(sim), len(rec))
        entry = recorded_index(trace, first) if first is not None else None
        allocs = sum(1 for e in trace if e.get("action") == "alloc")
        expect = (known or {}).get(dev)
        if expect is None:
            if first is not None:
                report.fail(f"{label} device {dev}: the replay differs from the recording at compared row {first} "
                            f"(trace entry {entry}): recorded {rec[first] if first < len(rec) else None}, "
                            f"simulated {sim[first] if first < len(sim) else None}")
            else:
                report.check(True, "")
        else:
            report.check(entry == expect[0], f"{label} device {dev}: expected the known first difference at entry "
                                             f"{expect[0]} ({expect[1]}), got {entry}")
        # the summary agrees
        rj = run([cli, "replay", path, "--device", str(dev), "--json"], timeout=300)
        if report.check(rj.rc == 0, f"{label} device {dev}: replay --json: {rj.describe()}"):
            j = json.loads(rj.out)
            report.check(j["allocations"] == allocs, f"{label} device {dev}: json allocations {j['allocations']}, "
                                                     f"the trace has {allocs}")
            if first is None:
                report.check(j["exact"] and j["first_difference"] is None and j["at_recorded_address"] == allocs,
                             f"{label} device {dev}: json says {short(rj.out_text)}")
            else:
                fd = j["first_difference"] or {}
                report.check(fd.get("entry") == entry, f"{label} device {dev}: json first difference "
                                                       f"{fd.get('entry')}, the csv's {entry}")
        # what-if with nothing changed: the simulation's figures are the recording's (the capacity,
        # when the recording ran out of memory, inferred from it)
        if first is None and not known:
            rw = run([cli, "whatif", path, "--device", str(dev), "--json"], timeout=300)
            if report.check(rw.rc == 0, f"{label} device {dev}: whatif --json: {rw.describe()}"):
                j = json.loads(rw.out)
                rec_o, sim_o = j["recording"], j["simulation"]
                for k in ("peak_reserved", "peak_reserved_entry", "peak_live", "series"):
                    report.check(rec_o[k] == sim_o[k], f"{label} device {dev}: unchanged what-if: {k} recorded "
                                                       f"{short(rec_o[k], 120)}, simulated {short(sim_o[k], 120)}")
                ro, so = rec_o["first_oom"], sim_o["first_oom"]
                report.check((ro or {}).get("entry") == (so or {}).get("entry") and
                             (ro or {}).get("size") == (so or {}).get("size"),
                             f"{label} device {dev}: unchanged what-if: first oom recorded {ro}, simulated {so}")
        at = allocs if first is None else None
        out[dev] = (len(rec), first, entry, at)
    return out


# ---- generated snapshots ----

def frames(*names):
    return [{"filename": "train.py", "name": n, "line": 10 + i} for i, n in enumerate(names)]


class Gen:
    """A trace in which every allocation fits its own segment or a hand-placed spot; the final
    segments are given by the caller."""

    def __init__(self):
        self.trace, self.ann, self.t = [], [], 1_000_000

    def entry(self, action, addr, size, fr=None):
        self.t += 10
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.t,
                           "frames": fr or []})
        return len(self.trace) - 1

    def free(self, addr, size, fr=None):
        self.entry("free_requested", addr, size, fr)
        return self.entry("free_completed", addr, size, fr)

    def annotate(self, name, stage):
        self.t += 10
        self.ann.append({"device": 0, "time_us": self.t, "name": name, "stage": stage})

    def write(self, path, segments):
        segs = []
        for addr, blocks in segments:  # blocks: (size, requested, state)
            total = sum(b[0] for b in blocks)
            bl, a = [], addr
            for size, req, state in blocks:
                bl.append({"address": a, "size": size, "requested_size": req, "state": state, "frames": []})
                a += size
            segs.append({"device": 0, "address": addr, "total_size": total,
                         "allocated_size": sum(b[0] for b in blocks if b[2] == "active_allocated"),
                         "active_size": sum(b[0] for b in blocks if b[2] != "inactive"),
                         "requested_size": sum(b[1] for b in blocks if b[2] != "inactive"),
                         "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                         "frames": [], "blocks": bl})
        d = {"segments": segs, "device_traces": [self.trace], "external_annotations": self.ann,
             "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                    "garbage_collection_threshold": 0.0, "expandable_segments": False}}
        with open(path, "wb") as f:
            pickle.dump(d, f, protocol=4)


BASE = 0x7f0000000000


def gen_growing(path, n=10):
    """n allocations of 12 MiB, none freed: each gets its own 12 MiB segment."""
    g = Gen()
    allocs = []
    for k in range(n):
        a = BASE + k * 64 * MiB
        g.entry("segment_alloc", a, 12 * MiB)
        allocs.append(g.entry("alloc", a, 12 * MiB, frames("forward")))
    g.write(path, [(BASE + k * 64 * MiB, [(12 * MiB, 12 * MiB, "active_allocated")]) for k in range(n)])
    return allocs


def gen_fragmented(path, n=4):
    """n times: 3 MiB (kept) and 17 MiB (freed later) fill one 20 MiB segment; then 30 MiB."""
    g = Gen()
    for k in range(n):
        a = BASE + k * 64 * MiB
        g.entry("segment_alloc", a, 20 * MiB)
        g.entry("alloc", a, 3 * MiB)
        g.entry("alloc", a + 3 * MiB, 17 * MiB)
    for k in range(n):
        g.free(BASE + k * 64 * MiB + 3 * MiB, 17 * MiB)
    x = BASE + n * 64 * MiB
    g.entry("segment_alloc", x, 30 * MiB)
    last = g.entry("alloc", x, 30 * MiB)
    segs = [(BASE + k * 64 * MiB, [(3 * MiB, 3 * MiB, "active_allocated"), (17 * MiB, 17 * MiB, "inactive")])
            for k in range(n)]
    g.write(path, segs + [(x, [(30 * MiB, 30 * MiB, "active_allocated")])])
    return last


def gen_leak(path, iterations=4):
    """Each iteration: a 12 MiB temporary (freed in it) and a 12 MiB allocation under leaky_fn that
    is never freed. Segments: T (temporaries, reused), L1..Ln."""
    g = Gen()
    T = BASE
    for k in range(iterations):
        g.annotate(f"iteration {k}", "START")
        if k == 0:
            g.entry("segment_alloc", T, 12 * MiB)
        g.entry("alloc", T, 12 * MiB, frames("main", "forward"))
        L = BASE + (k + 1) * 64 * MiB
        g.entry("segment_alloc", L, 12 * MiB)
        g.entry("alloc", L, 12 * MiB, frames("main", "leaky_fn"))
        g.free(T, 12 * MiB, frames("main", "forward"))
        g.annotate(f"iteration {k}", "END")
    segs = [(T, [(12 * MiB, 12 * MiB, "inactive")])]
    segs += [(BASE + (k + 1) * 64 * MiB, [(12 * MiB, 12 * MiB, "active_allocated")]) for k in range(iterations)]
    g.write(path, segs)


def gen_stray_frees(path):
    """A block P (2 MiB) allocated before the trace in a 20 MiB segment. The trace frees P, frees an
    address no block ever had, frees P again, then allocates and frees A at P's place. Entries:
    0, 1: free P; 2, 3: the stray free; 4: P again; 5: alloc A; 6: free A."""
    g = Gen()
    g.free(BASE, 2 * MiB)
    g.free(BASE + (1 << 32), 4 * MiB)
    g.entry("free_completed", BASE, 2 * MiB)
    g.entry("alloc", BASE, 2 * MiB)
    g.entry("free_completed", BASE, 2 * MiB)
    g.write(path, [(BASE, [(20 * MiB, 0, "inactive")])])


def check_stray_frees(cli, tmp, report):
    """A free of a block allocated before the trace frees it in the replay; a free of an address
    no block had, or of one freed already, is left out and counted (unmatched_frees)."""
    p = os.path.join(tmp, "stray.pickle")
    gen_stray_frees(p)
    r = run([cli, "replay", p, "--device", "0", "--csv"])
    if report.check(r.rc == 0, f"stray frees: replay --csv: {r.describe()}"):
        rec = recorded_rows(oracle.traces_of(oracle.load(p))[0])
        expect = [rec[0], rec[3], rec[4]]  # free P, alloc A, free A: the two unmatched frees left out
        sim = simulated_rows(r.out_text)
        report.check(sim == expect, f"stray frees: simulated {sim}, expected {expect}")
    r = run([cli, "replay", p, "--device", "0", "--json"])
    if report.check(r.rc == 0, f"stray frees: replay --json: {r.describe()}"):
        j = json.loads(r.out)
        report.check(j.get("unmatched_frees") == 2 and j.get("allocations") == 1 and j.get("at_recorded_address") == 1,
                     f"stray frees: expected 2 unmatched frees and A at its address, got {short(r.out_text)}")
    # what-if, nothing changed: the segment is all the simulation reserves, and only A or P is live
    j = whatif(cli, p)
    report.check(j["recording"]["peak_reserved"] == 20 * MiB and j["simulation"]["peak_reserved"] == 20 * MiB and
                 j["simulation"]["peak_live"] == 2 * MiB and j["simulation"]["first_oom"] is None,
                 f"stray frees: whatif unchanged: recording {short(j['recording'])}, simulation {short(j['simulation'])}")


def whatif(cli, path, *args):
    r = run([cli, "whatif", path, "--device", "0", "--json", *args])
    if r.rc != 0:
        raise AssertionError(f"{r.cmd()}: {r.describe()}")
    return json.loads(r.out)


def check_whatif(cli, tmp, report):
    # a capacity below the peak: the 5th 12 MiB allocation does not fit 50 MiB (48 + 12 > 50)
    p = os.path.join(tmp, "growing.pickle")
    allocs = gen_growing(p)
    j = whatif(cli, p, "--capacity", str(50 * MiB))
    rec, sim = j["recording"], j["simulation"]
    report.check(rec["first_oom"] is None and rec["peak_reserved"] == 120 * MiB, f"growing: recording {short(rec)}")
    oom = sim["first_oom"] or {}
    report.check(oom.get("entry") == allocs[4] and oom.get("size") == 12 * MiB,
                 f"growing: expected the first oom at entry {allocs[4]} (12 MiB), got {oom}")
    report.check(oom.get("total_free") == 0 and oom.get("largest_free_block") == 0 and
                 oom.get("device_free") == 2 * MiB, f"growing: oom figures {oom}")
    report.check(sim["peak_reserved"] == 48 * MiB, f"growing: simulated peak reserved {sim['peak_reserved']}")
    report.check(j["capacity"] == 50 * MiB and j["capacity_source"] == "given", f"growing: capacity {j['capacity']}")
    # unchanged settings, no capacity: the simulation is the recording
    j = whatif(cli, p)
    report.check(j["simulation"]["peak_reserved"] == 120 * MiB and j["simulation"]["first_oom"] is None and
                 j["simulation"]["series"] == j["recording"]["series"], "growing: unchanged what-if differs")
    # a fraction of the capacity: 0.5 x 100 MiB allows 4 segments (48 MiB) too
    j = whatif(cli, p, "--capacity", str(100 * MiB), "--fraction", "0.5")
    report.check((j["simulation"]["first_oom"] or {}).get("entry") == allocs[4], f"growing: fraction oom {j['simulation']['first_oom']}")

    # fragmentation that expandable segments cure: 4 x (3 MiB kept in a 20 MiB segment) + 30 MiB
    p = os.path.join(tmp, "fragmented.pickle")
    last = gen_fragmented(p)
    cap = str(100 * MiB)
    j = whatif(cli, p, "--capacity", cap)
    oom = j["simulation"]["first_oom"] or {}
    report.check(oom.get("entry") == last and oom.get("size") == 30 * MiB and oom.get("largest_free_block") == 17 * MiB
                 and oom.get("total_free") == 68 * MiB,
                 f"fragmented: default settings: expected an oom at entry {last} with 68 MiB free in 17 MiB pieces, got {oom}")
    report.check(j["verdict"].startswith("With capacity 100 MiB ") and
                 f"but it runs out of memory at entry #{last} (asking 30 MiB with 68 MiB free in the cache, the largest "
                 "free block 17 MiB)." in j["verdict"], f"fragmented: verdict {j['verdict']!r}")
    j = whatif(cli, p, "--capacity", cap, "--set", "expandable_segments=True")
    report.check(j["simulation"]["first_oom"] is None and j["simulation"]["peak_reserved"] == 100 * MiB,
                 f"fragmented: expandable segments: expected no oom and 100 MiB reserved, got "
                 f"{j['simulation']['first_oom']}, {j['simulation']['peak_reserved']}")
    report.check(j["settings"]["simulation"] == "expandable_segments:True", f"fragmented: settings {j['settings']}")
    report.check(j["verdict"].startswith("With expandable_segments:True, capacity 100 MiB ") and
                 j["verdict"].endswith("; no out-of-memory error either way."), f"fragmented: verdict {j['verdict']!r}")

    # a leak fixed; sizes dropped; scaled
    p = os.path.join(tmp, "leak.pickle")
    gen_leak(p)
    j = whatif(cli, p)
    report.check(j["recording"]["peak_live"] == 60 * MiB and j["simulation"]["peak_live"] == 60 * MiB and
                 j["recording"]["peak_reserved"] == 60 * MiB, f"leak: as recorded {short(j['recording'])}")
    j = whatif(cli, p, "--free-stack", "leaky_fn")
    e = j["edits"]
    report.check(e["iterations"] == 4 and e["matched"] == 4 and e["freed_early"] == 4 and
                 e["bytes_freed_early"] == 48 * MiB, f"leak: edits {e}")
    report.check(j["simulation"]["peak_live"] == 24 * MiB and j["simulation"]["peak_reserved"] == 24 * MiB,
                 f"leak fixed: expected 24 MiB live and reserved at the peak, got {j['simulation']['peak_live']}, "
                 f"{j['simulation']['peak_reserved']}")
    report.check(not j["estimated"], "leak fixed: marked estimated")
    j = whatif(cli, p, "--drop-above", str(12 * MiB - 1))
    report.check(j["edits"]["dropped"] == 8 and j["simulation"]["peak_reserved"] == 0, f"drop-above: {j['edits']}")
    j = whatif(cli, p, "--scale", "0.5")
    report.check(j["estimated"] and j["edits"]["scaled"] == 4 and j["simulation"]["peak_live"] == 54 * MiB,
                 f"scale 0.5: expected the 4 temporaries (under forward) scaled to 6 MiB, peak live 6 + 48 MiB; "
                 f"got {j['edits']}, peak live {j['simulation']['peak_live']}")


    # one iteration only: iteration 2's temporary and leak dropped; at the peak (iteration 3) the
    # temporary and the leaks of iterations 0, 1 and 3 are live: 48 MiB
    j = whatif(cli, p, "--drop-above", str(12 * MiB - 1), "--iteration", "2")
    report.check(j["edits"]["dropped"] == 2 and j["edits"]["iteration"] == 2 and
                 j["simulation"]["peak_live"] == 60 * MiB - 12 * MiB,
                 f"drop-above in iteration 2: expected its 2 allocations dropped and 48 MiB live at the peak, got "
                 f"{j['edits']}, {j['simulation']['peak_live']}")


def check_errors(cli, tmp, report):
    p = os.path.join(tmp, "growing.pickle")
    for args, what in ((["--set", "expandable_segment=True"], "an unknown key"),
                       (["--set", "expandable_segments=maybe"], "a bad value"),
                       (["--set", "max_split_size_mb=4"], "a value below the minimum"),
                       (["--set", "roundup_power2_divisions=3"], "divisions not a power of two"),
                       (["--set", "max_split_size_mb"], "no '='"),
                       (["--capacity", "lots"], "a capacity that is not a number"),
                       (["--fraction", "2"], "a fraction above 1"),
                       (["--fraction", "0.5"], "a fraction without a capacity"),
                       (["--scale", "-1"], "a negative scale"),
                       (["--drop-above", "x"], "a size that is not a number"),
                       (["--drop-above", "5", "--iteration", "1"], "an iteration where the snapshot has none")):
        r = run([cli, "whatif", p, "--device", "0", "--json", *args])
        one_line_error(r, p, report, what, expect_rc=1)
    r = run([cli, "whatif", p, "--device", "0", "--fix", "9", "--json"])
    one_line_error(r, p, report, "--fix of a finding that is not there", expect_rc=1)
    r = run([cli, "whatif", p, "--device", "0", "--fix", "1", "--free-stack", "x"])
    report.check(r.rc == 2, f"whatif --fix with --free-stack: expected a usage error, got {r.describe()}")
    r = run([cli, "replay", p, "--device", "5", "--json"])
    one_line_error(r, p, report, "a device that is not there", expect_rc=1)


def check_fix(cli, example, report):
    """whatif --fix: the doctor's findings of the example, fixed in the simulation."""
    r = run([cli, "whatif", example, "--device", "0", "--fix", "graph-kept", "--json"])
    if report.check(r.rc == 0, f"{r.cmd()}: {r.describe()}"):
        j = json.loads(r.out_text)
        report.check(j["recording"]["first_oom"] is not None, "example: the recording has no oom")
        report.check(j["simulation"]["first_oom"] is None, f"--fix graph-kept: the oom stays: {j['simulation']['first_oom']}")
        report.check(j["edits"]["bytes_freed_early"] == 30 * 24 * MiB + 0 or
                     abs(j["edits"]["bytes_freed_early"] - 30 * 24 * MiB) <= 30 * 512,
                     f"--fix graph-kept: {j['edits']['bytes_freed_early']} bytes freed early, expected 30 x 24 MiB (+ scalars)")
    r = run([cli, "whatif", example, "--device", "0", "--fix", "fragmentation", "--json"])
    if report.check(r.rc == 0, f"{r.cmd()}: {r.describe()}"):
        j = json.loads(r.out_text)
        report.check("expandable_segments" in j["settings"]["simulation"] and j["simulation"]["first_oom"] is None,
                     f"--fix fragmentation: settings {j['settings']['simulation']}, first oom {j['simulation']['first_oom']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--snapshots", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--python", default=sys.executable)
    a = ap.parse_args()
    report = Report()
    with tempfile.TemporaryDirectory(prefix="memlens-sim-test-") as tmp:
        check_fix(a.cli, os.path.join(a.source_dir, "resources", "example.pickle"), report)
        check_whatif(a.cli, tmp, report)
        check_errors(a.cli, tmp, report)
        check_stray_frees(a.cli, tmp, report)
        # generated traces: the bundled example, and a generated 20,000-entry snapshot
        check_fidelity(a.cli, os.path.join(a.source_dir, "resources", "example.pickle"), report)
        big = os.path.join(tmp, "large.pickle")
        subprocess.run([a.python, os.path.join(a.source_dir, "tests", "bench", "make_large_snapshot.py"), big,
                        "--entries", "20000"], check=True, capture_output=True)
        check_fidelity(a.cli, big, report, label="make_large_snapshot --entries 20000")
        for p in ("growing", "fragmented", "leak"):
            check_fidelity(a.cli, os.path.join(tmp, p + ".pickle"), report)
    if not os.path.isdir(a.snapshots):
        print(f"SKIP (real snapshots): snapshots directory {a.snapshots} not found")
        code = report.finish("cli.simulator")
        return code if code else test_support.SKIP
    files = sorted(os.path.join(a.snapshots, n) for n in os.listdir(a.snapshots)
                   if n.endswith((".pickle", ".pkl")) and os.path.isfile(os.path.join(a.snapshots, n)))
    print(f"{'file':<80} {'dev':>3} {'compared':>8} {'allocs at recorded address':>26}  first difference")
    for f in files:
        name = os.path.basename(f)
        res = check_fidelity(a.cli, f, report, known=KNOWN_DIFFERENCES.get(name))
        for dev, (n, first, entry, at) in sorted(res.items()):
            print(f"{name:<80} {dev:>3} {n:>8} {('all' if at is not None else '-'):>26}  "
                  f"{'none' if first is None else 'entry ' + str(entry)}")
    return report.finish("cli.simulator")


if __name__ == "__main__":
    sys.exit(main())
