"""The doctor's evidence (capture/python/memlens_agent/doctor.py, capture/README.md "What the
doctor records"): the mistake examples of capture/examples/mistakes/ and their --fixed twins,
recorded under `memlens-cli record` on the CPU (Debian's torch 1.13); the session files are read
with Python's sqlite3, independently of memlens's C++ code, and every figure is checked against
the size computed here from the example's shapes.

    test_mistakes.py --cli memlens-cli --python /usr/bin/python3 --case NAME [--agent-dir DIR]
                     [--device cuda]

--device cuda runs the examples on the GPU (capture/tests/gpu/run.sh does): the same figures,
on device cuda:0, and the allocator snapshots' `categories` (grads_kept); fragmentation then
really runs out of memory.

The recorder runs this source tree's agent (MEMLENS_AGENT_DIR = capture/python beside this file)
unless --agent-dir says otherwise. Each case is one ctest test (tests/capture/CMakeLists.txt).
Exit 0: passed, 1: failed, 77: skipped (no torch).
"""

import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
EXAMPLES = os.path.join(ROOT, "capture", "examples", "mistakes")
JOBS = os.path.join(HERE, "jobs")
SKIP = 77
F32 = 4

A = None
TMP = None
DEVICE = "cpu"   # the training device the markers should name


from capture_cases import Failure, check, run_case  # noqa: F401 (Failure: raised by cases)


def env():
    e = dict(os.environ)
    for k in ("PYTHONPATH", "MEMLENS_SOCKET", "MEMLENS_AGENT_CONFIG", "MEMLENS_NVML_LIBRARY"):
        e.pop(k, None)
    e["MEMLENS_AGENT_DIR"] = A.agent_dir
    return e


def start(name, script, *args, options=()):
    out = os.path.join(TMP, name + ".memlens")
    argv = ([A.cli, "record", "-o", out, "--quiet"] + list(options) + ["--", A.python, script]
            + [str(a) for a in args])
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(),
                         cwd=TMP)
    return p, out


def finish(p, out, timeout=180):
    so, se = p.communicate(timeout=timeout)
    if p.returncode != 0:
        raise Failure("%s: exit %d: %s" % (out, p.returncode, se.decode(errors="replace")[-600:]))
    return Session(out), so.decode(errors="replace")


def record_pair(example, *args, options=()):
    """Records EXAMPLE and its --fixed twin side by side (on --device); returns (mistake, fixed)
    sessions. options: more `memlens-cli record` options."""
    script = os.path.join(EXAMPLES, example + ".py")
    args = ("--device", A.device) + args
    a = start(example, script, *args, options=options)
    b = start(example + "-fixed", script, "--fixed", *args, options=options)
    return finish(*a)[0], finish(*b)[0]


class Session:
    """The rows of a session file that the doctor reads, straight from SQLite."""

    def __init__(self, path):
        self.path = path
        with sqlite3.connect("file:%s?mode=ro" % path, uri=True) as db:
            self.iterations = [dict(index=r[0], phase=r[1]) for r in
                               db.execute("SELECT idx, phase FROM iterations ORDER BY idx")]
            self.markers = [dict(iteration=r[0], name=r[1], data=json.loads(r[2]) if r[2] else {}, time_us=r[3])
                            for r in db.execute("SELECT iteration, name, data, time_us FROM markers ORDER BY id")]
            self.scans = [dict(iteration=r[0], scan=json.loads(r[1]))
                          for r in db.execute("SELECT iteration, scan FROM graph_scans ORDER BY id")]
            cols = [r[1] for r in db.execute("PRAGMA table_info(snapshots)")]
            info = "info" if "info" in cols else "NULL"
            self.snapshots = [dict(iteration=r[0], trigger=r[1], info=json.loads(r[2]) if r[2] else {})
                              for r in db.execute("SELECT iteration, trigger, %s FROM snapshots ORDER BY id" % info)]

    def named(self, name):
        return [m for m in self.markers if m["name"] == name]

    def forwards(self):
        return {m["iteration"]: m["data"] for m in self.named("forward")}

    def phases(self):
        return {it["index"]: it["phase"] for it in self.iterations}

    def kept(self, pattern):
        """[(iteration, group or None)] of the scans at iteration boundaries."""
        out = []
        for m in self.named("kept"):
            if m["data"].get("trigger") != "iteration":
                continue
            g = [g for g in m["data"]["groups"] if g["pattern"] == pattern]
            out.append((m["iteration"], g[0] if g else None))
        return out


def mlp_params(*widths):
    """Bytes of the parameters of Linear(w0, w1), Linear(w1, w2), ... (float32)."""
    return sum(F32 * (a * b + b) for a, b in zip(widths, widths[1:]))


def common(s, iterations, what):
    """Every iteration has exactly one forward marker, with the contract's keys."""
    f = s.forwards()
    check(len(s.iterations) == iterations, "%s: %d iterations (%d)" % (what, iterations, len(s.iterations)))
    check(sorted(f) == list(range(1, iterations + 1)) and len(s.named("forward")) == iterations,
          "%s: one forward marker per iteration" % what)
    keys = {"module", "training", "grad_enabled", "inference_mode", "device", "output_requires_grad", "output_bytes",
            "saved_bytes", "grads", "params", "inputs", "previous_inputs"}
    check(all(keys <= set(d) for d in f.values()), "%s: forward markers carry every key" % what)
    check(all(d["device"] == DEVICE for d in f.values()), "%s: training device %s" % (what, DEVICE))
    return f


def doctor(bad, good, rule, analytic, key="bytes", reference=None):
    """`memlens-cli check --json` on the mistake's session names RULE with KEY (bytes, or
    per_iteration_bytes) within 10 % of ANALYTIC and, when given, a reference containing REFERENCE;
    exit 3 when that finding is at warning or above; the fixed twin has no finding at warning."""
    def check_json(s):
        p = subprocess.run([A.cli, "check", s.path, "--json"], capture_output=True, timeout=120)
        check(p.returncode in (0, 3), "check %s: exit %d (%s)" % (os.path.basename(s.path), p.returncode,
                                                                 p.stderr.decode(errors="replace")[-300:]))
        return p.returncode, json.loads(p.stdout)
    rc, j = check_json(bad)
    found = [f for f in j["findings"] if f["rule"] == rule]
    check(found, "check: a %s finding (got %s)" % (rule, [(f["rule"], f["severity"]) for f in j["findings"]]))
    f = found[0]
    value = f[key]
    check(value is not None and abs(value - analytic) <= 0.1 * analytic,
          "check: %s %s = %s, analytic %d within 10%%" % (rule, key, value, analytic))
    if reference:
        check(any(reference in r for r in f["references"]), "check: %s references %s contain %s" % (rule, f["references"], reference))
    check(rc == (3 if f["severity"] in ("warning", "error") else rc), "check: exit %d with a %s %s" % (rc, f["severity"], rule))
    print("  check: [%s] %s" % (f["severity"], f["title"]))
    rc, j = check_json(good)
    serious = [(x["rule"], x["severity"]) for x in j["findings"] if x["severity"] != "info"]
    check(rc == 0 and not serious, "check on the fixed twin: exit %d, no finding at warning (%s)" % (rc, serious))


# ----- cases -----------------------------------------------------------------------------------

def case_eval_with_grad():
    bad, good = record_pair("eval_with_grad")
    B, D, H, C = 64, 512, 1024, 10
    saved = F32 * B * (D + H)          # x saved by the first Linear; the ReLU output (one storage)
    for s, what in ((bad, "mistake"), (good, "fixed")):
        f = common(s, 24, what)
        ph = s.phases()
        check([ph[i] for i in range(1, 25)] == ["train"] * 12 + ["eval"] * 12, "%s: 12 train, 12 eval" % what)
        check(all(f[i]["training"] for i in range(1, 13)) and not any(f[i]["training"] for i in range(13, 25)),
              "%s: training true in training, false in validation" % what)
        check(all(f[i]["params"] == {"count": 4, "bytes": mlp_params(D, H, C)} for i in f), "%s: params" % what)
        check(all(f[i]["inputs"][0]["shape"] == [B, D] and f[i]["inputs"][0]["bytes"] == F32 * B * D for i in f),
              "%s: input shapes and bytes" % what)
        check(all(f[i]["saved_bytes"] == 0 for i in range(1, 13)), "%s: no saved_bytes while training" % what)
    f = bad.forwards()
    ev = [f[i] for i in range(13, 25)]
    check(all(d["grad_enabled"] and d["output_requires_grad"] and not d["inference_mode"] for d in ev),
          "mistake: validation with grad mode on and outputs with a graph")
    measured = [d["saved_bytes"] for d in ev if d.get("saved_bytes_measured", True)]
    check(measured and all(abs(b - saved) <= 0.1 * saved for b in measured),
          "mistake: saved_bytes %s within 10%% of %d (4 x %d x (%d + %d))" % (sorted(set(measured)), saved, B, D, H))
    f = good.forwards()
    ev = [f[i] for i in range(13, 25)]
    check(all((not d["grad_enabled"] or not d["output_requires_grad"]) and d["saved_bytes"] == 0 for d in ev),
          "fixed: no_grad in validation, saved_bytes 0")
    doctor(bad, good, "eval-with-grad", saved)


def case_grads_kept():
    cuda = A.device.startswith("cuda")
    bad, good = record_pair("grads_kept", options=["--snapshot-iterations", "3"] if cuda else [])
    W = 1024
    params = mlp_params(W, W, W, 10)   # 8,437,800
    for s, what in ((bad, "mistake"), (good, "fixed")):
        f = common(s, 12, what)
        check(all(d["params"] == {"count": 6, "bytes": params} for d in f.values()),
              "%s: params 6 tensors, %d bytes" % (what, params))
        check(f[1]["grads"] == {"count": 0, "bytes": 0}, "%s: no gradient before the first backward" % what)
    f = bad.forwards()
    check(all(f[i]["grads"] == {"count": 6, "bytes": params} for i in range(2, 13)),
          "mistake: from iteration 2 every gradient is allocated at forward start: %d bytes" % params)
    f = good.forwards()
    check(all(d["grads"] == {"count": 0, "bytes": 0} for d in f.values()), "fixed: no gradient at forward start")
    doctor(bad, good, "grads-kept", params)
    if not cuda:
        return
    # the snapshot at the end of iteration 3 (its optimizer step): parameters and gradients of
    # the model, SGD without momentum has no state, the input batch 32 x 1024 float32
    for s, what in ((bad, "mistake"), (good, "fixed")):
        snaps = [x for x in s.snapshots if x["iteration"] == 3 and x["trigger"] == "iteration"]
        c = snaps[0]["info"].get("categories") if snaps else None
        check(isinstance(c, dict), "%s: the iteration 3 snapshot's info has categories" % what)
        sums = {k: (len(v), sum(b for _, b in v)) for k, v in c.items()}
        check(sums == {"parameter": (6, params), "gradient": (6, params), "optimizer_state": (0, 0),
                       "input": (1, F32 * 32 * W)}, "%s: categories by storage %s" % (what, sums))


def case_previous_batch():
    bad, good = record_pair("previous_batch")
    B, D = 128, 1024
    batch = F32 * B * D
    for s, what in ((bad, "mistake"), (good, "fixed")):
        f = common(s, 12, what)
        check(f[1]["previous_inputs"].get("count", 0) == 0, "%s: nothing before the first batch" % what)
    f = bad.forwards()
    prev = [f[i]["previous_inputs"] for i in range(2, 13)]
    check(all(p["count"] == 1 and p["bytes"] == batch for p in prev),
          "mistake: the previous batch alive at every forward start from iteration 2: %d bytes" % batch)
    refs = [r for p in prev for r in p.get("references", [])]
    check(refs and all("prev_batch" in r for r in refs) and "__main__.prev_batch[0]" in refs,
          "mistake: referenced by __main__.prev_batch[0] (%s)" % sorted(set(refs)))
    f = good.forwards()
    check(all(d["previous_inputs"].get("count", 0) == 0 and d["previous_inputs"].get("bytes", 0) == 0
              for d in f.values()), "fixed: no previous batch alive")
    doctor(bad, good, "previous-batch", batch, reference="prev_batch")


def case_kept_on_device():
    bad, good = record_pair("kept_on_device")
    B, C = 256, 1000
    per = F32 * B * C
    for s, what in ((bad, "mistake"), (good, "fixed")):
        # an evaluation script: no DataLoader, no optimizer: one iteration per call of the model
        f = common(s, 15, what)
        check(all(p == "eval" for p in s.phases().values()), "%s: every iteration eval" % what)
        check(all(not d["training"] and not d["grad_enabled"] and not d["output_requires_grad"] for d in f.values()),
              "%s: eval mode under no_grad" % what)
        check(all(d["output_bytes"] == per for d in f.values()), "%s: output %d bytes" % (what, per))
    kept = [(i, g) for i, g in bad.kept("__main__.preds[*]") if g is not None]
    check(len(kept) >= 5, "mistake: `kept` groups __main__.preds[*] at %d scans" % len(kept))
    # the scan after iteration i runs when call i + 1 starts: preds then holds i tensors
    check(all(g["count"] == i and g["bytes"] == i * per and g["device"] == DEVICE for i, g in kept),
          "mistake: preds grows by one tensor of %d bytes per iteration: %s" %
          (per, [(i, g["count"], g["bytes"]) for i, g in kept]))
    groups = [g for m in good.named("kept") for g in m["data"]["groups"]]
    check(good.named("kept") and not groups, "fixed: no container of tensors on the device (%s)" % groups)
    doctor(bad, good, "kept-on-device", per, key="per_iteration_bytes", reference="__main__.preds[*]")


def case_growth():
    bad, good = record_pair("growth")
    B, H = 64, 2048
    per = F32 * B * H
    for s, what in ((bad, "mistake"), (good, "fixed")):
        common(s, 15, what)
    kept = [(i, g) for i, g in bad.kept("__main__.cache[*]") if g is not None]
    check(len(kept) >= 5, "mistake: `kept` groups __main__.cache[*] at %d scans" % len(kept))
    # the scan after iteration i runs at its optimizer step, before that step's entry is added:
    # the cache holds i - 1 entries
    check(all(g["count"] == i - 1 and g["bytes"] == (i - 1) * per for i, g in kept),
          "mistake: cache grows by %d bytes per iteration: %s" % (per, [(i, g["bytes"]) for i, g in kept]))
    kept = [g for i, g in good.kept("__main__.cache[*]") if g is not None]
    check(kept and all(g["bytes"] == 2 * per for g in kept), "fixed: the cache holds 2 entries, %d bytes" % (2 * per))
    doctor(bad, good, "growth", per, key="per_iteration_bytes", reference="__main__.cache[*]")


def case_graph_kept():
    bad, good = record_pair("graph_kept")
    B, OUT = 64, 1024
    per = F32 * B * OUT + F32          # AbsBackward0 keeps out - y; the root is a float32 scalar
    for s, what in ((bad, "mistake"), (good, "fixed")):
        common(s, 20, what)

    def metrics(s):
        out = []
        for sc in s.scans:
            if sc["scan"].get("trigger") != "iteration":
                continue
            gs = [g for g in sc["scan"]["graphs"] if g["pattern"] == "__main__.metrics[*]"]
            out.append((sc["iteration"], len(gs), sum(g["retained_bytes"] for g in gs)))
        return out

    m = metrics(bad)
    # the scan after iteration i runs at its optimizer step, before that step's err is appended
    check(len(m) >= 5 and all(n == i - 1 and b == (i - 1) * per for i, n, b in m),
          "mistake: one more graph of %d bytes under __main__.metrics[*] per iteration: %s" % (per, m))
    check(all(g["pattern"] != "__main__.metrics[*]" for k in bad.named("kept") for g in k["data"]["groups"]),
          "mistake: tensors with a graph are not in `kept` groups")
    m = metrics(good)
    check(m and all(n == 0 for _, n, _ in m), "fixed: no graph under metrics")
    doctor(bad, good, "graph-kept", per, key="per_iteration_bytes", reference="__main__.metrics[*]")


def case_variable_length():
    bad, good = record_pair("variable_length")
    B, DIM, LMAX = 16, 64, 256
    rng = random.Random(1)
    lengths = [rng.randint(16, LMAX) for _ in range(20)]
    f = common(bad, 20, "mistake")
    got = [f[i]["inputs"][0]["shape"] for i in range(1, 21)]
    check(got == [[B, L, DIM] for L in lengths], "mistake: input shapes follow the lengths %s" % lengths)
    check(all(f[i]["inputs"][0]["bytes"] == F32 * B * DIM * lengths[i - 1] for i in range(1, 21)),
          "mistake: input bytes 4 x %d x L x %d" % (B, DIM))
    f = common(good, 20, "fixed")
    check(all(d["inputs"][0]["shape"] == [B, LMAX, DIM] and d["inputs"][0]["bytes"] == F32 * B * LMAX * DIM
              for d in f.values()), "fixed: one shape [%d, %d, %d]" % (B, LMAX, DIM))
    doctor(bad, good, "variable-length", F32 * B * DIM * (max(lengths) - min(lengths)))


def case_fragmentation():
    script = os.path.join(EXAMPLES, "fragmentation.py")

    has_cuda = A.device.startswith("cuda") and subprocess.run(
        [A.python, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
        capture_output=True).returncode == 0
    p, out = start("fragmentation", script, "--device", A.device)
    s, so = finish(p, out)
    if not has_cuda:
        check("needs CUDA" in so, "without CUDA the example says it needs CUDA and exits 0 (%r)" % so.strip())
        return None
    check("out of memory" in so, "the interleaved frees end in an out-of-memory error (%r)" % so.strip())
    check(any(m["name"] == "out_of_memory" for m in s.markers), "the agent saw the out-of-memory error")
    p, out = start("fragmentation-fixed", script, "--fixed", "--device", A.device)
    s, so = finish(p, out)
    check("succeeded" in so, "fixed: the 12 MiB request succeeds (%r)" % so.strip())


def case_eval_script():
    """Iterations of an evaluation script: one per call of the model; a second top-level module
    (the loss) is not an iteration; an exception inside forward does not stop the watch."""
    p, out = start("eval-script", os.path.join(JOBS, "doctor_eval_script.py"), 8)
    s, so = finish(p, out)
    check("completed 7" in so, "the job ran 8 calls, one raised (%s)" % so.strip())
    check(len(s.iterations) == 8 and all(it["phase"] == "eval" for it in s.iterations),
          "8 eval iterations, one per call of the model (%s)" % [it["phase"] for it in s.iterations])
    f = s.forwards()
    check(sorted(f) == list(range(1, 9)) and all(d["module"] == "Sequential" for d in f.values()),
          "one forward marker per iteration, for the model, not the loss module")
    check(f[3].get("raised") == "RuntimeError" and all("raised" not in f[i] for i in f if i != 3),
          "the call that raised says so, and later calls are still seen")
    check(all(d["params"] == {"count": 4, "bytes": mlp_params(32, 16, 4)} for d in f.values()), "params")
    ts = [m["time_us"] for m in s.named("forward")]
    check(ts == sorted(ts), "forward markers in time order")


def case_loops():
    """The evaluation-call iterations leave training loops as they were (doctor_loops.py)."""
    want = {"warmup_step": ["train"] * 3, "warmup_nograd": ["train"] * 3,
            "eval_then_train": ["eval"] * 4 + ["train"] * 5, "nested_cache": ["eval"] * 5}
    procs = {m: start("loops-" + m, os.path.join(JOBS, "doctor_loops.py"), m) for m in want}
    for m, phases in want.items():
        s, _ = finish(*procs[m])
        got = [it["phase"] for it in s.iterations]
        check(got == phases, "%s: iterations %s" % (m, got))
        f = s.forwards()
        check(sorted(f) == list(range(1, len(phases) + 1)), "%s: a forward marker per iteration" % m)
        if m == "nested_cache":
            kept = [(i, g) for i, g in s.kept("__main__.cache[*][*]") if g is not None]
            per = F32 * 16 * 4
            # the scan after iteration i runs when call i + 1 starts (the last at exit): i
            # entries of one tensor each; after iteration 1 one tensor is no group yet
            check([i for i, _ in kept] == [2, 3, 4, 5] and all(g["count"] == i and g["bytes"] == i * per and g["containers"] == i
                                         for i, g in kept),
                  "nested_cache: cache[*][*] grows by one list of one %d-byte tensor per call: %s" %
                  (per, [(i, g["count"], g["bytes"]) for i, g in kept]))
            groups = [g["pattern"] for k in s.named("kept") for g in k["data"]["groups"]]
            check(all("single" not in p for p in groups), "nested_cache: a lone tensor in a tuple is no group")


def case_categories():
    """categories() (the snapshot info's "categories", CUDA only in a recording) on CPU tensors."""
    code = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import torch
from memlens_agent import doctor
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(8, 16)
model(x).sum().backward()
opt.step()
def ptr(t):
    f = getattr(t, "untyped_storage", None) or t.storage
    return f().data_ptr()
c = doctor.categories(torch, [model], [opt], [x])
want = {"parameter": sorted([ptr(p), p.numel() * 4] for p in model.parameters()),
        "gradient": sorted([ptr(p.grad), p.numel() * 4] for p in model.parameters()),
        "input": [[ptr(x), x.numel() * 4]]}
state = []
for st in opt.state.values():
    for v in st.values():
        if torch.is_tensor(v):
            state.append([ptr(v), v.numel() * v.element_size()])
want["optimizer_state"] = sorted(state)
print(json.dumps({"got": {k: sorted(v) for k, v in c.items()}, "want": want,
                  "state_bytes": sum(b for _, b in state)}))
"""
    p = subprocess.run([A.python, "-c", code, os.path.join(A.agent_dir)], capture_output=True, text=True, timeout=120,
                       env=env())
    if p.returncode != 0:
        raise Failure("the categories job failed: %s" % p.stderr[-600:])
    r = json.loads(p.stdout.strip().splitlines()[-1])
    got, want = r["got"], r["want"]
    params = mlp_params(16, 32, 4)
    check(sum(b for _, b in got["parameter"]) == params and len(got["parameter"]) == 4,
          "parameter: 4 storages, %d bytes" % params)
    check(sum(b for _, b in got["gradient"]) == params and len(got["gradient"]) == 4,
          "gradient: 4 storages, %d bytes" % params)
    # Adam: exp_avg and exp_avg_sq per parameter (2 x params) and a step counter per parameter
    check(sum(b for _, b in got["optimizer_state"]) == r["state_bytes"]
          and 2 * params <= r["state_bytes"] <= 2 * params + 4 * 8,
          "optimizer_state: exp_avg, exp_avg_sq and step, %d bytes" % r["state_bytes"])
    check(got["input"] == [[want["input"][0][0], 8 * 16 * F32]], "input: the batch, %d bytes" % (8 * 16 * F32))
    check(got == want, "every storage at its own address, in its category")
    ptrs = [p for v in got.values() for p, _ in v]
    check(len(ptrs) == len(set(ptrs)), "no storage in two categories")


def case_cxx_grads_kept():
    """The C++ mistake: LibTorch's Optimizer::zero_grad() zeroes gradients in place; the twin sets
    them to None (Module::zero_grad(true)). memlens::capture::watchModel records, at every step,
    the gradients that were not freed since the previous one."""
    if not A.cxx_mistake:
        print("no --cxx-mistake (the C++ capture library is not built): skipped")
        return SKIP
    params = mlp_params(1024, 1024, 1024, 10)   # 8,437,800
    sessions = []
    for fixed in (False, True):
        out = os.path.join(TMP, "cxx-grads-kept%s.memlens" % ("-fixed" if fixed else ""))
        argv = [A.cli, "record", "-o", out, "--quiet", "--", A.cxx_mistake] + (["--fixed"] if fixed else [])
        p = subprocess.run(argv, capture_output=True, timeout=180, env=env(), cwd=TMP)
        check(p.returncode == 0, "record %s: exit %d %s" % (os.path.basename(out), p.returncode, p.stderr.decode(errors="replace")[-300:]))
        sessions.append(Session(out))
    bad, good = sessions
    f = bad.forwards()
    check(sorted(f) == list(range(1, 13)), "mistake: a forward marker per step (%s)" % sorted(f))
    check(all(d["params"] == {"count": 6, "bytes": params} for d in f.values()), "mistake: params 6 tensors, %d bytes" % params)
    check(f[1]["grads"]["count"] == 0 and all(f[i]["grads"] == {"count": 6, "bytes": params} for i in range(2, 13)),
          "mistake: from step 2 the same 6 gradients (%d bytes) were kept" % params)
    check(all(d["grads"]["count"] == 0 for d in good.forwards().values()), "fixed: gradients freed between steps")
    doctor(bad, good, "grads-kept", params)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global A, TMP, DEVICE
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--agent-dir", default=os.path.join(ROOT, "capture", "python"))
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda: where the examples run")
    ap.add_argument("--cxx-mistake", default="", help="memlens-mistake-grads-kept (case cxx_grads_kept)")
    A = ap.parse_args()
    DEVICE = "cuda:0" if A.device == "cuda" else A.device
    A.agent_dir = os.path.abspath(A.agent_dir)
    if subprocess.run([A.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print("%s has no torch: skipped" % A.python)
        return SKIP

    def set_tmp(tmp):
        global TMP
        TMP = tmp
    return run_case(A.case, CASES[A.case], "memlens-mistakes-", set_tmp)


if __name__ == "__main__":
    sys.exit(main())
