#!/usr/bin/env python3
"""memlens-cli on snapshots shaped as torch 2.12-2.14 writes them, against the independent oracle.

The fixtures are written here by tests/tools/make_newer_snapshot.py (a simulated job: private pools
(1, 0) of a CUDA graph and (0, 1) of a MemPool besides the default pool, user_metadata,
compile_context, FX frames, the ring-buffer flags of PR #179276, pinned host memory in
host_segments / host_traces): "newer" (the whole trace) and "newer-truncated" (the device trace is
an overflowed ring buffer of 400 entries). What memlens-cli prints is compared with what
tests/tools/snapshot_oracle.py computes from the pickle read by Python's own pickle module:

  - the generator's own consistency check (--verify: each pool's entries replayed lead to its
    segments, the host trace replayed leads to host_segments) and the oracle's self-check;
  - `stats FILE --json`: the same devices (0 and the host, -1); per device the totals, the trace's
    entry and action counts, `name` ("cuda:0" / "host"), `pools` (per segment_pool_id: segments,
    reserved and allocated bytes), `trace_overflowed` / `trace_max_entries`, and no other key;
  - `timeline FILE --device host --csv` and `--device 0 --csv`: row for row the oracle's rewind;
  - `state FILE --device host --at K --json` at a few K (among them one inside a pending free and
    one after a segment_free): the host's state replayed forwards by the oracle (segments, blocks,
    which the host allocator never splits, totals); at the last entry the file's own host segments
    (the whole fixture only: the truncated one has the same host data);
  - `state FILE --device 0 --at LAST --json`: the file's own segments, each with its `pool`;
    for the truncated fixture `--at -1` holds the rewound reserved bytes (blocks allocated before
    the kept entries included);
  - `check FILE` exits 0 or 3 (the doctor copes with the newer keys);
  - the bundled example (no flags, no host, no private pool): trace_overflowed/trace_max_entries
    null, name "cuda:0", one pool [0, 0];
  - the flags written other ways (a scalar in allocator_settings, a dict keyed by device at the top
    level, none at all): the CUDA device's trace_overflowed / trace_max_entries.

One line per check, a summary line; exit 0 when every check passed, 1 otherwise.

usage: test_newer_fields.py --cli PATH --source-dir DIR
"""

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile

import test_support  # noqa: F401  (puts tests/tools on sys.path)
from test_support import json_diff, run, short

import snapshot_oracle as oracle

HOST = oracle.HOST
STATE_TOTALS = ["reserved_bytes", "allocated_bytes", "requested_bytes", "free_bytes", "largest_free_block"]
STATS_TOTALS = ["segments", "blocks"] + STATE_TOTALS
SAMPLES_INSIDE = 5


class Checks:
    """Prints one line per check as it runs."""

    def __init__(self):
        self.total = self.failed = 0

    def check(self, ok, label, detail=""):
        self.total += 1
        if ok:
            print(f"ok   {label}")
        else:
            self.failed += 1
            print(f"FAIL {label}" + (f": {detail}" if detail else ""))
        sys.stdout.flush()
        return ok

    def finish(self):
        print(f"cli.newer: {self.total} checks, {self.failed} failed")
        return 1 if self.failed else 0


def dev_arg(d):
    return "host" if d == HOST else str(d)


def cli_json(checks, label, cli, *args):
    """Runs memlens-cli ARGS; one check that it exited 0 with JSON on stdout. The parsed JSON or None."""
    r = run([cli, *args])
    if r.timed_out or r.rc != 0:
        checks.check(False, f"{label}: {r.cmd()} exits 0", r.describe())
        return None
    try:
        got = json.loads(r.out)
    except ValueError as e:
        checks.check(False, f"{label}: {r.cmd()} prints JSON", f"{e}: {short(r.out_text)!r}")
        return None
    checks.check(True, f"{label}: {r.cmd()} exits 0 with JSON")
    return got


def diff_line(diffs):
    return "; ".join(diffs)


# ---------------------------------------------------------------------------------------------


def check_stats(checks, cli, path, label, data, cuda_only_flags=False):
    """stats --json against oracle.stats(data, newer=True), device by device. Returns the output."""
    exp = oracle.stats(data, newer=True)
    got = cli_json(checks, label, cli, "stats", path, "--json")
    if got is None:
        return None
    if not checks.check(isinstance(got, dict) and isinstance(got.get("devices"), list),
                        f"{label}: stats: a 'devices' list", short(json.dumps(got), 200)):
        return None
    exp_devs = {d["device"]: d for d in exp["devices"]}
    got_devs = {d.get("device"): d for d in got["devices"] if isinstance(d, dict)}
    checks.check(sorted(got_devs, key=str) == sorted(exp_devs, key=str),
                 f"{label}: stats: devices {sorted(exp_devs)}", f"got {sorted(got_devs, key=str)}")
    for d, e in exp_devs.items():
        g = got_devs.get(d)
        if g is None:
            continue
        name = oracle.device_name(d)
        sub = lambda keys, x: {k: x.get(k, "<missing>") for k in keys}  # noqa: E731
        checks.check(g.get("name") == e["name"], f"{label}: stats {name}: name {e['name']!r}", f"got {g.get('name')!r}")
        diffs = json_diff(sub(STATS_TOTALS, e), sub(STATS_TOTALS, g))
        checks.check(not diffs, f"{label}: stats {name}: segments, blocks, reserved/allocated/requested/free bytes",
                     diff_line(diffs))
        diffs = json_diff(sub(["trace_events", "actions"], e), sub(["trace_events", "actions"], g))
        checks.check(not diffs, f"{label}: stats {name}: trace_events {e['trace_events']} and actions", diff_line(diffs))
        diffs = json_diff(e["pools"], g.get("pools", "<missing>"), "pools")
        checks.check(not diffs, f"{label}: stats {name}: pools "
                     + ", ".join(f"{p['pool']}" for p in e["pools"]), diff_line(diffs))
        if not (cuda_only_flags and d == HOST):
            keys = ["trace_overflowed", "trace_max_entries"]
            diffs = json_diff(sub(keys, e), sub(keys, g))
            checks.check(not diffs, f"{label}: stats {name}: trace_overflowed {json.dumps(e['trace_overflowed'])}, "
                         f"trace_max_entries {json.dumps(e['trace_max_entries'])}", diff_line(diffs))
        extra = sorted(set(g) - set(e))
        missing = sorted(set(e) - set(g))
        checks.check(not extra and not missing, f"{label}: stats {name}: exactly the contract's keys",
                     f"missing {missing}, unexpected {extra}")
    return got


def check_timeline(checks, cli, path, label, data, d):
    r = run([cli, "timeline", path, "--device", dev_arg(d), "--csv"])
    lab = f"{label}: {r.cmd()}"
    if r.timed_out or r.rc != 0:
        checks.check(False, f"{lab}: exits 0", r.describe())
        return
    exp = oracle.timeline_csv(data, d).split("\n")
    got = r.out_text.split("\n")
    bad = [(i, e, g) for i, (e, g) in enumerate(zip(exp, got)) if e != g]
    detail = f"{len(exp) - 1} lines expected, {len(got) - 1} got"
    if bad:
        i, e, g = bad[0]
        detail += f"; {len(bad)} differ, first line {i + 1}: expected {e!r}, got {g!r}"
    checks.check(exp == got, f"{lab}: equals the oracle's rewind ({len(exp) - 2} rows: live and reserved after each entry)",
                 detail)


def state_at(checks, cli, path, label, d, at):
    got = cli_json(checks, label, cli, "state", path, "--device", dev_arg(d), "--at", str(at), "--json")
    if not isinstance(got, dict):
        return None
    got.pop("categories", None)  # an estimate the oracle does not make
    # the state output may name its device (the implementation does; the contract does not say)
    if "name" in got:
        checks.check(got["name"] == oracle.device_name(d), f"{label}: state --device {dev_arg(d)} --at {at}: name",
                     f"got {got['name']!r}")
        got.pop("name")
    if isinstance(got.get("segments"), list):
        got["segments"] = sorted(got["segments"], key=lambda s: s.get("address", 0) if isinstance(s, dict) else 0)
    return got


def check_host_states(checks, cli, path, label, data):
    trace = oracle.trace_of(data, HOST)
    n = len(trace)
    points = {-1, n - 1}
    points |= {(n * (i + 1)) // (SAMPLES_INSIDE + 1) for i in range(SAMPLES_INSIDE)}
    # right after a free_requested whose free_completed comes later (a block pending free), and right
    # after a segment_free
    pend = next((i for i, e in enumerate(trace) if e["action"] == "free_requested"
                 and i + 1 < n and trace[i + 1]["action"] != "free_completed"), None)
    sfree = next((i for i, e in enumerate(trace) if e["action"] == "segment_free"), None)
    points |= {p for p in (pend, sfree) if p is not None}
    for k in sorted(points):
        exp = oracle.host_state(data, k)
        got = state_at(checks, cli, path, label, HOST, k)
        if got is None:
            continue
        lab = f"{label}: state --device host --at {k}"
        checks.check(got.get("device") == HOST and got.get("at") == k, f"{lab}: device -1, at {k}",
                     f"got {got.get('device')!r}/{got.get('at')!r}")
        segs = got.get("segments") if isinstance(got.get("segments"), list) else []
        e_segs = [(s["address"], s["total_size"]) for s in exp["segments"]]
        g_segs = [(s.get("address"), s.get("total_size")) for s in segs]
        checks.check(e_segs == g_segs, f"{lab}: {len(e_segs)} segments (address, total_size)",
                     f"expected {e_segs}, got {g_segs}")
        checks.check(all(s.get("pool") == [0, 0] for s in segs), f"{lab}: every segment in pool [0, 0]",
                     f"got {[s.get('pool') for s in segs]}")

        def blocks(st):
            return [b for s in (st["segments"] if isinstance(st.get("segments"), list) else [])
                    for b in s.get("blocks", [])]
        e_b = [(b["address"], b["size"], b["state"]) for b in blocks(exp)]
        g_b = [(b.get("address"), b.get("size"), b.get("state")) for b in blocks(got)]
        checks.check(e_b == g_b, f"{lab}: blocks (address, size, state): one per segment, never split",
                     f"{len(set(e_b) ^ set(g_b))} rows differ; expected {short(e_b, 400)}, got {short(g_b, 400)}")
        e_r = [(b["address"], b["state"], b["requested_size"]) for b in blocks(exp) if b["state"] != "inactive"]
        g_r = [(b.get("address"), b.get("state"), b.get("requested_size")) for b in blocks(got)
               if b.get("state") != "inactive"]
        checks.check(e_r == g_r, f"{lab}: the {len(e_r)} active blocks (address, state, requested_size)",
                     f"expected {e_r}, got {g_r}")
        diffs = json_diff({k: exp[k] for k in STATE_TOTALS}, {k: got.get(k, "<missing>") for k in STATE_TOTALS})
        checks.check(not diffs, f"{lab}: reserved {exp['reserved_bytes']}, allocated {exp['allocated_bytes']}, "
                     "requested, free, largest free", diff_line(diffs))
    # at the last entry: exactly the file's own host segments
    got = state_at(checks, cli, path, label, HOST, n - 1)
    if got is not None:
        diffs = json_diff(oracle.final_state(data, HOST, newer=True), got)
        checks.check(not diffs, f"{label}: state --device host --at {n - 1}: the file's own host segments and blocks",
                     diff_line(diffs))


def check_device_states(checks, cli, path, label, data, truncated):
    n = len(oracle.trace_of(data, 0))
    got = state_at(checks, cli, path, label, 0, n - 1)
    if got is not None:
        exp = oracle.final_state(data, 0, newer=True)
        diffs = json_diff(exp, got)
        checks.check(not diffs, f"{label}: state --device 0 --at {n - 1}: the file's own segments and blocks, "
                     f"each with its pool", diff_line(diffs))
    live0, res0 = oracle.before_first(data, 0)
    got = state_at(checks, cli, path, label, 0, -1)
    if got is not None:
        checks.check(got.get("reserved_bytes") == res0,
                     f"{label}: state --device 0 --at -1: reserved {res0} (rewound"
                     + (", the ring buffer's lost entries before it)" if truncated else ")"),
                     f"got {got.get('reserved_bytes')}")
        segs = got.get("segments") if isinstance(got.get("segments"), list) else []
        if truncated:
            kinds = {b.get("state") for s in segs for b in s.get("blocks", [])}
            checks.check(live0 == 0 or kinds - {"inactive"},
                         f"{label}: state --device 0 --at -1: the {live0} bytes live before the kept entries "
                         "are shown as blocks", f"states {sorted(map(str, kinds))}")


def check_doctor(checks, cli, path, label):
    r = run([cli, "check", path])
    checks.check(r.rc in (0, 3), f"{label}: {r.cmd()} exits 0 or 3", r.describe())


def check_fixture(checks, cli, tools, tmp, name, truncated):
    path = os.path.join(tmp, name + ".pickle")
    gen = [sys.executable, os.path.join(tools, "make_newer_snapshot.py"), "-o", path, "--verify"]
    if truncated:
        gen.append("--truncated")
    p = subprocess.run(gen, capture_output=True, text=True, timeout=120)
    if not checks.check(p.returncode == 0 and os.path.exists(path),
                        f"{name}: make_newer_snapshot.py{' --truncated' if truncated else ''} --verify: "
                        "the fixture replays to its own final state", (p.stderr or p.stdout).strip()[-600:]):
        return
    print(f"     ({p.stdout.strip().splitlines()[0]})")
    data = oracle.load(path)
    problems = oracle.self_check(data)
    checks.check(not problems, f"{name}: the oracle's self-check", "; ".join(problems[:5]))
    over, most = oracle.trace_flags(data, 0)
    n = len(oracle.trace_of(data, 0))
    checks.check(over is truncated and (n == most if truncated else n < most),
                 f"{name}: the fixture's flags: overflowed {over}, {n} entries of at most {most}")

    check_stats(checks, cli, path, name, data)
    check_timeline(checks, cli, path, name, data, HOST)
    check_timeline(checks, cli, path, name, data, 0)
    if not truncated:  # the truncated fixture's host data is the same: its states are checked once
        check_host_states(checks, cli, path, name, data)
    check_device_states(checks, cli, path, name, data, truncated)
    check_doctor(checks, cli, path, name)
    return path


def check_example(checks, cli, source_dir):
    path = os.path.join(source_dir, "resources", "example.pickle")
    if not checks.check(os.path.exists(path), f"example: {path} exists"):
        return
    data = oracle.load(path)
    for d in oracle.stats(data, newer=True)["devices"]:
        checks.check(d["trace_overflowed"] is None and d["trace_max_entries"] is None and [p["pool"] for p in d["pools"]] == [[0, 0]],
                     f"example: the oracle: no flags, default pool (device {d['device']})")
    check_stats(checks, cli, path, "example", data)


def check_flag_variants(checks, cli, tmp, truncated_path):
    """The flags written other ways; compared for the CUDA device (what a scalar means for the host
    is not settled)."""
    base = oracle.load(truncated_path)

    def variant(name, edit):
        data = pickle.loads(pickle.dumps(base, protocol=4))
        edit(data)
        path = os.path.join(tmp, f"flags-{name}.pickle")
        with open(path, "wb") as f:
            pickle.dump(data, f, protocol=4)
        check_stats(checks, cli, path, f"flags-{name}", oracle.load(path), cuda_only_flags=True)

    def scalar(d):
        d["allocator_settings"]["trace_alloc_overflowed"] = True
        d["allocator_settings"]["trace_alloc_max_entries"] = 400

    def top_dict(d):
        del d["allocator_settings"]["trace_alloc_overflowed"]
        del d["allocator_settings"]["trace_alloc_max_entries"]
        d["trace_alloc_overflowed"] = {0: True}
        d["trace_alloc_max_entries"] = {0: 400}

    def absent(d):
        del d["allocator_settings"]["trace_alloc_overflowed"]
        del d["allocator_settings"]["trace_alloc_max_entries"]

    variant("scalar", scalar)
    variant("top-level-dict", top_dict)
    variant("absent", absent)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    tools = os.path.join(a.source_dir, "tests", "tools")
    checks = Checks()
    if not checks.check(os.access(a.cli, os.X_OK), f"memlens-cli is executable: {a.cli}"):
        return checks.finish()
    with tempfile.TemporaryDirectory(prefix="memlens-newer-test-") as tmp:
        check_fixture(checks, a.cli, tools, tmp, "newer", truncated=False)
        truncated = check_fixture(checks, a.cli, tools, tmp, "newer-truncated", truncated=True)
        check_example(checks, a.cli, a.source_dir)
        if truncated:
            check_flag_variants(checks, a.cli, tmp, truncated)
    return checks.finish()


if __name__ == "__main__":
    sys.exit(main())
