#!/usr/bin/env python3
"""memlens-cli check / diff against training loops written here with Python's pickle, with mistakes
planted at sizes chosen here (the figures the doctor must find), the bundled example (its
generator, resources/make_example.py, documents a kept graph of 3 x 8 MiB per iteration and an
out-of-memory from fragmentation), and the real snapshots (exit 0 or 3, never an error).

The contract (issue "The doctor"):
  check FILE [--json] [--fail-on info|warning|error]: exit 0 when no finding is at or above
  --fail-on (default warning), 3 when one is, 1 on an error, 2 on usage.
  diff FILE --from N --to M [--json]; diff A B [--json].

usage: test_doctor.py --cli PATH --snapshots DIR --source-dir DIR
"""

import argparse
import json
import os
import pickle
import sys
import tempfile

import test_support
from test_support import Report, one_line_error, run

MiB = 1 << 20
KiB = 1 << 10
BASE = 0x7F0000000000
TORCH = "/venv/lib/python3.11/site-packages/torch"


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


def user(name, line, inner=()):
    return list(inner) + [frame(name, "/home/me/train.py", line), frame("<module>", "/home/me/train.py", 99)]


def forward(layer):
    return user("train_step", 40, [frame("linear", TORCH + "/nn/functional.py", 2000), frame("forward", "/home/me/model.py", 10 + layer),
                                   frame("_call_impl", TORCH + "/nn/modules/module.py", 1527)])


BACKWARD = [frame("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??", 0)]
OPTIM = user("train_step", 50, [frame("_single_tensor_adam", TORCH + "/optim/adam.py", 400)])


def loop(iterations=8, layers=4, graph_kept=(), kept_logits=0, cache=0, grads_kept=False, annotate=True):
    """A training loop as a torch 2.x snapshot dict; returns (snapshot, facts)."""
    trace, notes, live = [], [], {}
    state = {"t": 1000, "next": BASE}

    def tick(n=10):
        state["t"] += n
        return state["t"]

    def alloc(size, frames):
        addr = state["next"]
        state["next"] += (size + 511) // 512 * 512
        live[addr] = size
        trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": tick(), "frames": frames})
        return addr

    def free(addr):
        size = live.pop(addr)
        trace.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": tick(), "frames": []})
        trace.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": tick(), "frames": []})

    params = [alloc(MiB, user("main", 20, [frame("_apply", TORCH + "/nn/modules/module.py", 900)])) for _ in range(3)]
    grads, state_made = [], False
    for i in range(1, iterations + 1):
        if annotate:
            notes.append({"device": 0, "stage": "START", "name": f"ProfilerStep#{i}", "time_us": tick(5)})
        batch = alloc(2 * MiB, user("main", 35))
        acts = [alloc(4 * MiB, forward(l)) for l in range(layers)]
        if kept_logits:
            alloc(kept_logits, forward(layers))
        loss = alloc(512, user("train_step", 41, [frame("forward", TORCH + "/nn/modules/loss.py", 1100),
                                                  frame("_call_impl", TORCH + "/nn/modules/module.py", 1527)]))
        for k, size in enumerate(graph_kept):
            alloc(size, user("main", 81, [frame("aux_entropy", "/home/me/train.py", 70 + k)]))
        if cache:
            alloc(cache, user("main", 60))
        for a in acts:
            free(a)
        if not grads:
            grads = [alloc(MiB, BACKWARD) for _ in params]
        free(loss)
        if not state_made:
            for _ in range(2 * len(params)):
                alloc(MiB, OPTIM)
            state_made = True
        free(alloc(MiB, OPTIM))
        if not grads_kept:
            for g in grads:
                free(g)
            grads = []
        free(batch)
        if annotate:
            notes.append({"device": 0, "stage": "END", "name": f"ProfilerStep#{i}", "time_us": tick(5)})
    end = BASE + ((state["next"] - BASE + 2 * MiB - 1) // (2 * MiB)) * 2 * MiB
    blocks, at = [], BASE
    for addr in sorted(live):
        if addr > at:
            blocks.append({"address": at, "size": addr - at, "requested_size": 0, "state": "inactive", "frames": []})
        size = (live[addr] + 511) // 512 * 512
        blocks.append({"address": addr, "size": size, "requested_size": live[addr], "state": "active_allocated", "frames": []})
        at = addr + size
    if at < end:
        blocks.append({"address": at, "size": end - at, "requested_size": 0, "state": "inactive", "frames": []})
    seg = {"device": 0, "address": BASE, "total_size": end - BASE, "stream": 0, "segment_type": "large",
           "allocated_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
           "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
           "requested_size": sum(b["requested_size"] for b in blocks), "segment_pool_id": (0, 0), "is_expandable": False,
           "frames": [], "blocks": blocks}
    return {"segments": [seg], "device_traces": [trace], "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""},
            "external_annotations": notes}


def write(tmp, name, snap):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    return path


def check_json(cli, path, report, *extra):
    r = run([cli, "check", path, "--json", *extra])
    if not report.check(r.rc in (0, 3), f"{r.cmd()}: {r.describe()}"):
        return r.rc, None
    try:
        return r.rc, json.loads(r.out_text)
    except ValueError as e:
        report.fail(f"{r.cmd()}: not JSON ({e})")
        return r.rc, None


def near(value, analytic):
    return value is not None and abs(value - analytic) <= 0.1 * analytic


def rules(j):
    return [(f["rule"], f["severity"]) for f in j["findings"]]


def check_planted(cli, tmp, report):
    cases = {
        # name: (loop arguments, rule, analytic bytes per iteration or total)
        "graph_kept": (dict(iterations=10, graph_kept=(3 * MiB, 5 * MiB)), "graph-kept", 8 * MiB),
        "graph_kept_no_annotations": (dict(iterations=10, graph_kept=(3 * MiB, 5 * MiB), annotate=False), "graph-kept", 8 * MiB),
        "kept_on_device": (dict(kept_logits=768 * KiB), "kept-on-device", 768 * KiB),
        "growth": (dict(cache=MiB), "growth", MiB),
    }
    for name, (args, rule, per_iteration) in cases.items():
        path = write(tmp, name + ".pickle", loop(**args))
        rc, j = check_json(cli, path, report)
        if j is None:
            continue
        report.check(rc == 3, f"{name}: check exits {rc}, expected 3 (an error-level finding)")
        found = [f for f in j["findings"] if f["rule"] == rule]
        if not report.check(found, f"{name}: no {rule} finding; got {rules(j)}"):
            continue
        f = found[0]
        report.check(f["severity"] == "error", f"{name}: severity {f['severity']}, expected error (it grows)")
        report.check(near(f["per_iteration_bytes"], per_iteration),
                     f"{name}: per_iteration_bytes {f['per_iteration_bytes']}, expected {per_iteration} within 10%")
        for key in ("rule", "severity", "title", "device", "bytes", "per_iteration_bytes", "since_iteration", "count",
                    "references", "frames", "evidence", "fix"):
            report.check(key in f, f"{name}: finding has no '{key}'")
        report.check(j["kind"] == "snapshot" and j["file"] == path, f"{name}: kind/file wrong: {j['kind']}, {j['file']}")
        for key in ("nvidia_smi", "batch_size"):
            report.check(j["summary"].get(key), f"{name}: summary has no {key}")
        # --fail-on error still fails; a correct twin passes at every level but info
    path = write(tmp, "grads_kept.pickle", loop(grads_kept=True))
    rc, j = check_json(cli, path, report)
    if j is not None:
        found = [f for f in j["findings"] if f["rule"] == "grads-kept"]
        if report.check(found, f"grads_kept: no grads-kept finding; got {rules(j)}"):
            report.check(found[0]["bytes"] == 3 * MiB, f"grads_kept: bytes {found[0]['bytes']}, expected {3 * MiB}")
            report.check(found[0]["severity"] == "warning", f"grads_kept: severity {found[0]['severity']}")
        report.check(rc == 3, f"grads_kept: exit {rc}, expected 3 (a warning)")
        rc, _ = check_json(cli, path, report, "--fail-on", "error")
        report.check(rc == 0, f"grads_kept --fail-on error: exit {rc}, expected 0 (only a warning)")
    correct = write(tmp, "correct.pickle", loop())
    rc, j = check_json(cli, correct, report)
    if j is not None:
        report.check(rc == 0 and not [f for f in j["findings"] if f["severity"] != "info"],
                     f"correct loop: exit {rc}, findings {rules(j)}: expected none at warning")
        report.check(j["iterations"]["count"] == 8 and j["iterations"]["source"] == "annotations",
                     f"correct loop: iterations {j['iterations']}")
    r = run([cli, "check", correct])
    report.check(r.rc == 0 and "no findings" in r.out_text, f"{r.cmd()}: {r.describe()}: expected 'no findings'")


def check_diffs(cli, tmp, report):
    leak = write(tmp, "leak10.pickle", loop(iterations=10, graph_kept=(3 * MiB, 5 * MiB)))
    r = run([cli, "diff", leak, "--from", "2", "--to", "4", "--json"])
    if report.check(r.rc == 0, f"{r.cmd()}: {r.describe()}"):
        j = json.loads(r.out_text)
        report.check(j["bytes"] == 3 * 8 * MiB, f"diff --from 2 --to 4: bytes {j['bytes']}, expected {3 * 8 * MiB}")
        got = sorted((s["bytes"], s["count"], s["first_iteration"]) for s in j["stacks"])
        report.check(got == [(3 * 3 * MiB, 3, 2), (3 * 5 * MiB, 3, 2)], f"diff --from 2 --to 4: stacks {got}")
    short = write(tmp, "leak4.pickle", loop(iterations=4, graph_kept=(3 * MiB, 5 * MiB)))
    r = run([cli, "diff", short, leak, "--json"])
    if report.check(r.rc == 0, f"{r.cmd()}: {r.describe()}"):
        j = json.loads(r.out_text)
        report.check(j["delta"] == 6 * 8 * MiB, f"diff A B: delta {j['delta']}, expected {6 * 8 * MiB}")
        grew = sorted(s["delta"] for s in j["stacks"] if s["change"] == "grew")
        report.check(grew == [6 * 3 * MiB, 6 * 5 * MiB], f"diff A B: grew {grew}")
    r = run([cli, "diff", leak])
    report.check(r.rc == 2, f"{r.cmd()}: {r.describe()}, expected usage error 2")
    r = run([cli, "diff", leak, "--from", "4", "--to", "2"])
    report.check(r.rc == 2, f"{r.cmd()}: {r.describe()}, expected usage error 2")
    r = run([cli, "diff", leak, "--from", "2", "--to", "40"])
    one_line_error(r, leak, report, "an iteration the trace does not have")


def check_errors(cli, tmp, report):
    r = run([cli, "check"])
    report.check(r.rc == 2, f"{r.cmd()}: {r.describe()}, expected 2")
    path = write(tmp, "any.pickle", loop(iterations=3))
    r = run([cli, "check", path, "--fail-on", "fatal"])
    report.check(r.rc == 2, f"{r.cmd()}: {r.describe()}, expected 2")
    missing = os.path.join(tmp, "missing.pickle")
    one_line_error(run([cli, "check", missing]), missing, report, "a missing file")
    broken = os.path.join(tmp, "broken.pickle")
    with open(broken, "wb") as f:
        f.write(pickle.dumps({"segments": [1, 2, 3]}, protocol=4)[:-7])
    one_line_error(run([cli, "check", broken]), broken, report, "a truncated file")


def check_example(cli, source_dir, report):
    path = os.path.join(source_dir, "resources", "example.pickle")
    rc, j = check_json(cli, path, report)
    if j is None:
        return
    report.check(rc == 3, f"example: exit {rc}, expected 3")
    kept = [f for f in j["findings"] if f["rule"] == "graph-kept"]
    if report.check(kept, f"example: no graph-kept finding; got {rules(j)}"):
        report.check(near(kept[0]["per_iteration_bytes"], 24 * MiB),
                     f"example: graph-kept per iteration {kept[0]['per_iteration_bytes']}, expected 24 MiB within 10%")
        report.check(any(fr["filename"].endswith("train.py") and fr["line"] == 81 for fr in kept[0]["frames"]),
                     "example: graph-kept frames do not include train.py:81")
    frag = [f for f in j["findings"] if f["rule"] == "fragmentation"]
    if report.check(frag, f"example: no fragmentation finding; got {rules(j)}"):
        report.check(frag[0]["bytes"] == 256 * MiB, f"example: fragmentation bytes {frag[0]['bytes']}")
    report.check(j["summary"]["oom"] is True, "example: summary.oom is not true")
    report.check("not the batch size" in j["summary"]["batch_size"], f"example: batch_size {j['summary']['batch_size']!r}")


def check_real(cli, snapshots, report):
    files = sorted(os.path.join(snapshots, n) for n in os.listdir(snapshots)
                   if n.endswith((".pickle", ".pkl")) and os.path.isfile(os.path.join(snapshots, n)))
    for f in files:
        rc, j = check_json(cli, f, report)
        if j is None:
            continue
        print(f"{os.path.basename(f):<80} {j['iterations']['count']:>4} {j['iterations']['source']:<12} {rules(j)}")
        for x in j["findings"]:
            report.check(x["title"] and x["evidence"] and x["fix"], f"{os.path.basename(f)}: a finding without text: {x}")
        rc2, j2 = check_json(cli, f, report)
        report.check(j2 == j and rc2 == rc, f"{os.path.basename(f)}: two runs differ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--snapshots", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    report = Report()
    with tempfile.TemporaryDirectory(prefix="memlens-doctor-test-") as tmp:
        check_planted(a.cli, tmp, report)
        check_diffs(a.cli, tmp, report)
        check_errors(a.cli, tmp, report)
    check_example(a.cli, a.source_dir, report)
    if not os.path.isdir(a.snapshots):
        print(f"SKIP (real snapshots): snapshots directory {a.snapshots} not found")
        code = report.finish("cli.doctor")
        return code if code else test_support.SKIP
    check_real(a.cli, a.snapshots, report)
    return report.finish("cli.doctor")


if __name__ == "__main__":
    sys.exit(main())
