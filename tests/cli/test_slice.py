#!/usr/bin/env python3
"""memlens-cli slice against the independent oracle (tests/tools/snapshot_oracle.py).

For the bundled example, the torch-2.14-shaped fixture of tests/tools/make_newer_snapshot.py and
every real snapshot with a trace, a few ranges A..B of the busiest device (the whole trace, its
middle third, one entry, the last tenth) are cut with
`memlens-cli slice FILE --device D --from A --to B -o OUT.pickle`, and then, with Python alone:

  - OUT loads with Python's pickle (a refusing unpickler: plain data only), and uses only opcodes
    that PyTorch's memory_viz unpickles (the list in torch/utils/viz/MemoryViz.js, unpickle());
  - its trace is entries A..B of the original, field by field (action, addr / device_free, size,
    stream, time_us, frames);
  - its timeline (live and reserved bytes after each entry, rewound by the oracle from OUT's own
    segments) equals the original's over A..B, rewound from the original's final state;
  - its external_annotations are the original's of that device inside A..B's time span.
Errors keep the contract: a range outside the trace exits 1 with one line.

  test_slice.py --cli build/app/memlens-cli --snapshots ../shared/snapshots --source-dir .
"""
import argparse
import os
import pickletools
import sys
import tempfile

import test_support
from test_support import Report, one_line_error, run, short

import snapshot_oracle as oracle

# the opcodes MemoryViz.js's unpickle() knows
MEMORY_VIZ_OPS = {"PROTO", "APPEND", "APPENDS", "LIST", "TUPLE", "NEWFALSE", "NEWTRUE", "NONE", "BINGET",
                  "BININT", "BININT1", "BININT2", "EMPTY_DICT", "EMPTY_LIST", "FRAME", "LONG1", "LONG_BINGET",
                  "MARK", "MEMOIZE", "BINPUT", "LONG_BINPUT", "SETITEMS", "SETITEM", "DICT", "SHORT_BINUNICODE",
                  "BINUNICODE", "STOP", "EMPTY_TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "BINFLOAT"}


def frames_of(e):
    return [(f.get("name"), f.get("filename"), f.get("line")) for f in (e.get("frames") or [])]


def entry_fields(e):
    where = e.get("device_free") if e["action"] == "oom" else e.get("addr")
    return (e["action"], where, e.get("size"), e.get("stream"), e.get("time_us"), frames_of(e))


def check_slice(cli, path, device, a, b, work, report, name):
    out = os.path.join(work, f"slice-{a}-{b}.pickle")
    r = run([cli, "slice", path, "--device", str(device), "--from", str(a), "--to", str(b), "-o", out])
    label = f"{name}: slice --device {device} --from {a} --to {b}"
    if not report.check(r.rc == 0 and os.path.exists(out), f"{label}: exit {r.describe()}: {short(r.err_text)!r}"):
        return
    raw = open(out, "rb").read()
    ops = {op.name for op, _arg, _pos in pickletools.genops(raw)}
    report.check(ops <= MEMORY_VIZ_OPS, f"{label}: opcodes memory_viz does not read: {sorted(ops - MEMORY_VIZ_OPS)}")
    report.check(raw[:2] in (b"\x80\x02", b"\x80\x03", b"\x80\x04"), f"{label}: not protocol 2-4: {raw[:2]!r}")
    try:
        sl = oracle.load(out)
    except Exception as e:
        report.fail(f"{label}: Python's pickle cannot load it: {type(e).__name__}: {e}")
        return
    orig = oracle.load(path)
    otrace = oracle.trace_of(orig, device)
    strace = oracle.trace_of(sl, device)
    report.check(len(strace) == b - a + 1, f"{label}: {len(strace)} entries, expected {b - a + 1}")
    bad = [i for i, (x, y) in enumerate(zip(otrace[a:b + 1], strace)) if entry_fields(x) != entry_fields(y)]
    report.check(not bad, f"{label}: entries differ from the original's, first at {a + bad[0] if bad else 0}: "
                          f"{entry_fields(strace[bad[0]]) if bad else ''} vs {entry_fields(otrace[a + bad[0]]) if bad else ''}")
    # the timeline over the range, each rewound from its own file's final state by the oracle
    ot = [(row[4], row[5]) for row in oracle.timeline(orig, device)[a:b + 1]]
    st = [(row[4], row[5]) for row in oracle.timeline(sl, device)]
    diff = [i for i, (x, y) in enumerate(zip(ot, st)) if x != y]
    report.check(not diff, f"{label}: live/reserved differ from the original's over the range, first after entry "
                           f"{a + diff[0] if diff else 0}: {st[diff[0]] if diff else ''} vs {ot[diff[0]] if diff else ''}")
    # annotations of the device inside the time span
    t0, t1 = otrace[a].get("time_us"), otrace[b].get("time_us")
    if t0 is not None and t1 is not None and isinstance(orig, dict):
        want = [(x.get("name"), x.get("stage"), x.get("time_us")) for x in orig.get("external_annotations", [])
                if x.get("device", 0) == device and t0 <= x.get("time_us", -1) <= t1 and "name" in x and "stage" in x]
        got = [(x.get("name"), x.get("stage"), x.get("time_us")) for x in sl.get("external_annotations", [])]
        report.check(got == want, f"{label}: {len(got)} annotations, expected {len(want)}")
    os.remove(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--snapshots", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    report = Report()
    with tempfile.TemporaryDirectory(prefix="memlens-slice-") as work:
        newer = test_support.write_newer_fixture(args.source_dir, os.path.join(work, "newer.pickle"), args.python)
        files = [os.path.join(args.source_dir, "resources", "example.pickle"), newer]
        if os.path.isdir(args.snapshots):
            files += sorted(os.path.join(args.snapshots, n) for n in os.listdir(args.snapshots)
                            if n.endswith((".pickle", ".pkl")))
        else:
            print(f"note: no real snapshots at {args.snapshots}: the example and the generated fixture only")
        sliced = 0
        for path in files:
            data = oracle.load(path)
            traced = [(len(oracle.trace_of(data, d)), d) for d in oracle.devices_of(data) if d >= 0]
            traced = [x for x in traced if x[0] > 0]
            if not traced:
                continue
            n, device = max(traced)
            name = os.path.basename(path)
            ranges = {(0, n - 1), (n // 3, max(n // 3, 2 * n // 3 - 1)), (n // 2, n // 2), (n - max(1, n // 10), n - 1)}
            for a, b in sorted(ranges):
                check_slice(args.cli, path, device, a, b, work, report, name)
            sliced += 1
        # the error contract: a range outside the trace
        ex = files[0]
        r = run([args.cli, "slice", ex, "--device", "0", "--from", "10", "--to", "99999999", "-o",
                 os.path.join(work, "x.pickle")])
        one_line_error(r, ex, report, "a range outside the trace",
                       place=("the range", lambda m: "99999999" in m))
        report.check(not os.path.exists(os.path.join(work, "x.pickle")), "a failed slice left a file behind")
        r = run([args.cli, "slice", ex, "--device", "0", "--from", "1", "--to", "2"])
        report.check(r.rc == 2, f"slice without -o: expected exit 2, got {r.describe()}")
        print(f"{sliced} files sliced")
    return report.finish("cli.slice")


if __name__ == "__main__":
    sys.exit(main())
