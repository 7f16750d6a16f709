"""GPU check of the newer snapshot fields, recorded with torch's own API (run by run.sh).

Records a small job with torch.cuda.memory._record_memory_history(max_entries=...) (and
record_pinned_host_memory=True where the installed torch accepts it), with, where this torch has
them: a few allocations in a torch.cuda.MemPool (torch.cuda.use_mem_pool), phases set with
torch.cuda.memory._set_memory_metadata, a CUDA graph capture (its private pool), a tiny
torch.compile'd function (skipped if compiling fails), a pinned host tensor copied to the device;
dumps the snapshot (augment_with_fx_traces=True where _dump_snapshot accepts it), then runs
`memlens-cli stats FILE --json` and `memlens-cli check FILE` and compares stats with the
independent oracle (tests/tools/snapshot_oracle.py, reading the pickle with Python's pickle).

Writes to OUT: newer.pickle, newer-stats.json (memlens-cli's output), newer-check.txt, and
newer.json (the torch version, which features were used, what the pickle holds, the checks).

  python newer_fields.py --cli MEMLENS_CLI --out DIR [--max-entries N]

Exit 0 when every check passed, 1 otherwise (a feature this torch lacks is noted, not failed).
"""
import argparse
import inspect
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

import torch

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "tools"))
import snapshot_oracle as oracle  # noqa: E402
from check_rows import Checks  # noqa: E402


def accepts(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def record(work, max_entries, features):
    """Runs the job under memory history recording; returns the snapshot's path."""
    mem = torch.cuda.memory
    dev = "cuda"
    kw = {"max_entries": max_entries}
    if accepts(mem._record_memory_history, "stacks"):
        kw["stacks"] = "python"  # C++ frames are slow to symbolise, and not what is checked here
    for name in ("compile_context", "global_record_annotations"):  # both off by default
        features[name] = accepts(mem._record_memory_history, name)
        if features[name]:
            kw[name] = True
    features["record_pinned_host_memory"] = accepts(mem._record_memory_history, "record_pinned_host_memory")
    if features["record_pinned_host_memory"]:
        kw["record_pinned_host_memory"] = True
    mem._record_memory_history(**kw)
    set_meta = getattr(mem, "_set_memory_metadata", None)
    features["set_memory_metadata"] = set_meta is not None

    def phase(text):
        if set_meta is not None:
            set_meta(text)

    phase("phase=setup")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 256)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    keep = []

    # a torch.cuda.MemPool: three buffers, the middle one freed
    if hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool"):
        try:
            pool = torch.cuda.MemPool()
            with torch.cuda.use_mem_pool(pool):
                bufs = [torch.empty(3 << 20, dtype=torch.uint8, device=dev) for _ in range(3)]
            del bufs[1]
            keep += [pool, bufs]
            features["mem_pool"] = [int(v) for v in pool.id]
        except Exception as e:  # noqa: BLE001
            features["mem_pool"] = "failed: %s: %s" % (type(e).__name__, str(e)[:200])
    else:
        features["mem_pool"] = None

    for step in range(3):
        phase("phase=train step=%d" % step)
        x = torch.randn(64, 256, device=dev)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    # a CUDA graph: its capture allocates from the graph's private pool
    phase("phase=graph")
    try:
        static_x = torch.randn(32, 256, device=dev)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            for _ in range(2):
                model(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_out = model(static_x)
        graph.replay()
        keep += [graph, static_x, static_out]
        try:
            features["cuda_graph"] = [int(v) for v in graph.pool()]
        except Exception:  # noqa: BLE001  (an opaque pool token: the capture still ran)
            features["cuda_graph"] = "captured, pool id %r" % (graph.pool(),)
    except Exception as e:  # noqa: BLE001
        features["cuda_graph"] = "failed: %s: %s" % (type(e).__name__, str(e)[:200])

    # pinned host memory, copied to the device without blocking
    phase("phase=pin")
    pinned = torch.randn(1000, 250).pin_memory()  # 1,000,000 bytes: a 1 MiB block
    on_dev = pinned.to(dev, non_blocking=True)
    torch.cuda.synchronize()
    keep += [pinned, on_dev]

    # a tiny compiled function
    phase("phase=compile")
    try:
        def stats_fn(t):
            p = t.softmax(-1)
            return p.amax(-1), (p * p).sum(-1)

        compiled = torch.compile(stats_fn)
        for _ in range(2):
            keep.append(compiled(torch.randn(32, 128, device=dev)))
        torch.cuda.synchronize()
        features["compile"] = "ok"
    except Exception as e:  # noqa: BLE001
        features["compile"] = "skipped: %s: %s" % (type(e).__name__, str(e)[:300])

    phase("phase=dump")
    path = os.path.join(work, "newer.pickle")
    dkw = {}
    features["augment_with_fx_traces"] = accepts(mem._dump_snapshot, "augment_with_fx_traces")
    if features["augment_with_fx_traces"]:
        dkw["augment_with_fx_traces"] = True
    mem._dump_snapshot(path, **dkw)
    mem._record_memory_history(enabled=None)
    del keep
    return path


def contents(data):
    """What the pickle holds, read with Python's pickle."""
    trace = oracle.trace_of(data, 0)
    frames = [f for e in trace for f in (e.get("frames") or [])]
    settings = data.get("allocator_settings") or {}
    return {
        "top_level": sorted(data) if isinstance(data, dict) else type(data).__name__,
        "pools": sorted({tuple(oracle.pool_id(s)) for s in oracle.segments_of(data)}),
        "host_segments": len(oracle.host_segments_of(data)),
        "host_trace": len(oracle.host_trace_of(data)),
        "device_trace": len(trace),
        "user_metadata": sorted({str(e.get("user_metadata")) for e in trace})[:20],
        "compile_context": sorted({str(e.get("compile_context")) for e in trace})[:10],
        "fx_frames": sum(1 for f in frames if "fx_node_name" in f),
        "fx_example": next(({k: f[k] for k in f} for f in frames if "fx_node_name" in f), None),
        "flags": {k: settings.get(k, data.get(k)) for k in oracle.TRACE_FLAG_KEYS},
        "settings": sorted(settings),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-entries", type=int, default=20000)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    checks = Checks()
    report = {"torch": torch.__version__, "cuda": torch.version.cuda, "features": {}}
    if not torch.cuda.is_available():
        checks.note("newer: CUDA", False, "torch.cuda.is_available() is False")
        json.dump(dict(report, checks=checks.rows), open(os.path.join(a.out, "newer.json"), "w"), indent=1)
        return 1
    work = tempfile.mkdtemp(prefix="memlens-newer-")
    features = report["features"]
    try:
        path = record(work, a.max_entries, features)
    except Exception as e:  # noqa: BLE001
        checks.note("newer: record", False, "%s: %s" % (type(e).__name__, str(e)[:300]))
        json.dump(dict(report, checks=checks.rows), open(os.path.join(a.out, "newer.json"), "w"), indent=1)
        return 1
    print("torch %s, features %s" % (torch.__version__, json.dumps(features)), flush=True)
    shutil.copy(path, os.path.join(a.out, "newer.pickle"))
    with open(path, "rb") as f:
        data = oracle.RefusingUnpickler(f).load()
    found = report["pickle"] = contents(data)
    print("pickle: %s" % json.dumps(found, default=str)[:1500], flush=True)

    # the oracle's own reading must be coherent (for the host: its trace replays to host_segments,
    # one block per segment, which is what shared/reference assumes of the pinned host allocator)
    problems = oracle.self_check(data)
    checks.note("newer: the oracle's self-check", not problems, "; ".join(problems[:4]) or "coherent")
    # what this torch wrote, for what was asked of it
    if isinstance(features.get("mem_pool"), list):
        checks.note("newer: MemPool segments", tuple(features["mem_pool"]) in found["pools"],
                    "pool %s; pools in the file %s" % (features["mem_pool"], found["pools"]))
    if isinstance(features.get("cuda_graph"), list):
        checks.note("newer: graph pool segments", tuple(features["cuda_graph"]) in found["pools"],
                    "pool %s; pools in the file %s" % (features["cuda_graph"], found["pools"]))
    if features["set_memory_metadata"]:
        checks.note("newer: user_metadata", any(m.startswith("phase=train") for m in found["user_metadata"]),
                    "%s" % found["user_metadata"][:8])
    if features.get("compile") == "ok":
        checks.note("newer: compile_context", any(c not in ("N/A", "None") for c in found["compile_context"]),
                    "%s" % found["compile_context"])
    print("  note: record_pinned_host_memory %s, host segments %d, host trace %d; augment_with_fx_traces %s, "
          "FX frames %d; flags %s" % (features["record_pinned_host_memory"], found["host_segments"],
                                      found["host_trace"], features["augment_with_fx_traces"], found["fx_frames"],
                                      found["flags"]), flush=True)

    # memlens-cli stats: exit 0, and equal to the oracle's figures
    p = subprocess.run([a.cli, "stats", path, "--json"], capture_output=True, text=True, timeout=300)
    with open(os.path.join(a.out, "newer-stats.json"), "w") as f:
        f.write(p.stdout if p.returncode == 0 else p.stdout + p.stderr)
    if checks.note("newer: memlens-cli stats", p.returncode == 0, "exit %d %s" % (p.returncode, p.stderr.strip()[-300:])):
        got = json.loads(p.stdout)
        report["stats"] = got
        exp = oracle.stats(data, newer=True)
        exp_devs = {d["device"]: d for d in exp["devices"]}
        got_devs = {d.get("device"): d for d in got.get("devices", [])}
        checks.note("newer: stats devices", sorted(exp_devs, key=str) == sorted(got_devs, key=str),
                    "expected %s, got %s" % (sorted(exp_devs, key=str), sorted(got_devs, key=str)))
        for d, e in exp_devs.items():
            g = got_devs.get(d, {})
            bad = [k for k in e if g.get(k) != e[k]]
            checks.note("newer: stats %s equal the oracle's" % e["name"], not bad,
                        "; ".join("%s: expected %s, got %s" % (k, json.dumps(e[k])[:200], json.dumps(g.get(k))[:200])
                                  for k in bad[:4]) or "%d segments, %d pools, trace %d, overflowed %s" % (
                            e["segments"], len(e["pools"]), e["trace_events"], e["trace_overflowed"]))

    # memlens-cli check: the doctor reads it (exit 0 or 3)
    p = subprocess.run([a.cli, "check", path], capture_output=True, text=True, timeout=300)
    with open(os.path.join(a.out, "newer-check.txt"), "w") as f:
        f.write(p.stdout + p.stderr)
    checks.note("newer: memlens-cli check", p.returncode in (0, 3),
                "exit %d: %s" % (p.returncode, (p.stdout + p.stderr).strip().splitlines()[-1:] if (p.stdout + p.stderr).strip() else ""))

    report["checks"] = checks.rows
    with open(os.path.join(a.out, "newer.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    shutil.rmtree(work, ignore_errors=True)
    return checks.finish("newer")


if __name__ == "__main__":
    sys.exit(main())
