"""Retained-graph scans (capture/python/memlens_agent/graphs.py) on small CPU jobs.

Each job in jobs/ runs in a subprocess of its own (a clean heap and gc state), calls
graphs.scan() where a real agent would, and writes the scans as JSON. Expected figures are
computed here from the tensors' shapes.

Run: /usr/bin/python3 tests/capture/graphs/test_graphs.py [--cli build/app/memlens-cli] [-v]
(exit 77: no torch, skipped; without --cli the recorded end-to-end test is skipped)
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(HERE, "jobs")
F32 = 4


def nbytes(*shape, size=F32):
    n = size
    for d in shape:
        n *= d
    return n


def run_job(name, *args, timeout=120):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        p = subprocess.run([sys.executable, os.path.join(JOBS, name), out] + [str(a) for a in args],
                           cwd=JOBS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           universal_newlines=True)
        if p.returncode != 0:
            raise AssertionError("job %s failed (%d):\n%s%s" % (name, p.returncode, p.stdout, p.stderr))
        with open(out) as f:
            return json.load(f)


_cache = {}


def job(name, *args):
    key = (name,) + args
    if key not in _cache:
        _cache[key] = run_job(name, *args)
    return _cache[key]


def by_root(scan):
    return {g["root"]: g for g in scan["graphs"]}


CONTRACT_KEYS = ("root", "referrers", "nodes", "saved_tensors", "saved_tensors_alive",
                 "hooked_saved_tensors", "retained_bytes", "device")


class ScanContract(unittest.TestCase):
    def check_scan(self, scan):
        for k in ("partial", "graphs"):
            self.assertIn(k, scan)
        self.assertFalse(scan["partial"], scan.get("partial_reason"))
        self.assertEqual(scan["hook_detection"], "memory")
        for g in scan["graphs"]:
            for k in CONTRACT_KEYS:
                self.assertIn(k, g)
            self.assertEqual(g["root"], g["referrers"][0])
            if not g.get("detail_omitted"):
                self.assertEqual(g["nodes"], len(g["nodes_list"]))
            for a, b in g["edges"]:
                self.assertTrue(0 <= a < g["nodes"] and 0 <= b < g["nodes"])
            self.assertEqual(g["retained_bytes"], sum(s["bytes"] for s in g["storages"]))
            self.assertEqual(len({(s["device"], s["ptr"]) for s in g["storages"]}), len(g["storages"]))
            if not g.get("detail_omitted"):
                counted = sum(len(n["saved"]) for n in g["nodes_list"])
                self.assertEqual(counted, g["saved_tensors"])
            self.assertEqual(g["saved_tensors"], g["saved_tensors_alive"] + g["saved_tensors_released"]
                             + g["hooked_saved_tensors"])
            # nothing of the scanner itself is ever named
            for p in g["referrers"]:
                for word in ("memlens", "_Scanner", "graphs_refs", "ReferrerSearch", "scanner"):
                    self.assertNotIn(word, p)
        sizes = [g["retained_bytes"] for g in scan["graphs"]]
        self.assertEqual(sizes, sorted(sizes, reverse=True))


class ValidationKeptOutputs(ScanContract):
    """validation without no_grad, outputs kept in a list: full graphs, one per batch"""

    def test_roots_paths_and_bytes(self):
        scan = job("validation_kept.py")["scan"]
        self.check_scan(scan)
        roots = by_root(scan)
        self.assertEqual(sorted(roots), ["validate.kept_outputs[%d]" % i for i in range(4)])
        # Linear(64,32) -> ReLU -> Linear(32,8) on 16 rows: the input (saved by the first addmm),
        # the ReLU output (saved by ReLU and by the second addmm: one storage) and the output.
        expected = nbytes(16, 64) + nbytes(16, 32) + nbytes(16, 8)
        for g in roots.values():
            self.assertEqual(g["retained_bytes"], expected)
            self.assertEqual(g["exclusive_bytes"], expected)
            self.assertEqual(g["saved_tensors"], 4)          # addmm1.mat1, relu.result, addmm2.mat1/mat2
            self.assertEqual(g["saved_tensors_alive"], 4)
            self.assertEqual(g["saved_parameter_tensors"], 1)   # addmm2.mat2 is the weight
            self.assertEqual(g["hooked_saved_tensors"], 0)
            self.assertFalse(g["backward_ran"])
            self.assertEqual(g["nodes"], 9)
            self.assertEqual(g["root_shape"], [16, 8])
            self.assertEqual(g["root_dtype"], "float32")
            self.assertEqual(g["device"], "cpu")
            self.assertEqual(g["pattern"], "validate.kept_outputs[*]")
            names = [n["name"] for n in g["nodes_list"]]
            self.assertEqual(names[0], "AddmmBackward0")
            self.assertEqual(sum(1 for n in names if n.endswith("AccumulateGrad")), 4)
            self.assertTrue(all(n.get("param") for n in g["nodes_list"] if n["name"].endswith("AccumulateGrad")))
        self.assertEqual(scan["total_retained_bytes"], 4 * expected)
        self.assertEqual(len({g["signature"] for g in roots.values()}), 1)

    def test_saved_tensor_details(self):
        g = by_root(job("validation_kept.py")["scan"])["validate.kept_outputs[0]"]
        saved = [(n["name"], s) for n in g["nodes_list"] for s in n["saved"]]
        relu = [s for n, s in saved if n == "ReluBackward0"]
        self.assertEqual(len(relu), 1)
        relu = relu[0]
        self.assertEqual((relu["name"], relu["shape"], relu["dtype"], relu["bytes"], relu["state"]),
                         ("result", [16, 32], "float32", nbytes(16, 32), "alive"))
        mat1 = sorted((s["shape"], s["bytes"], s["ptr"]) for n, s in saved if s["name"] == "mat1")
        self.assertEqual([m[:2] for m in mat1], [([16, 32], nbytes(16, 32)), ([16, 64], nbytes(16, 64))])
        # the second addmm's mat1 is the ReLU output's storage: one storage, counted once
        self.assertEqual(mat1[0][2], relu["ptr"])
        weight = [s for n, s in saved if s["name"] == "mat2"]
        self.assertEqual(len(weight), 1)
        self.assertTrue(weight[0].get("param"))
        self.assertEqual(weight[0]["shape"], [32, 8])


class LossesAfterBackward(ScanContract):
    """losses kept after backward: skeletons; retain_graph=True: everything kept"""

    def test_skeletons_and_retain_graph(self):
        scan = job("losses_after_backward.py")["scan"]
        self.check_scan(scan)
        roots = by_root(scan)
        self.assertEqual(sorted(roots), ["__main__.retained"] + ["__main__.train_losses[%d]" % i for i in range(3)])
        for i in range(3):
            g = roots["__main__.train_losses[%d]" % i]
            self.assertTrue(g["backward_ran"])
            self.assertEqual(g["saved_tensors_alive"], 0)
            self.assertEqual(g["saved_tensors_released"], g["saved_tensors"])
            self.assertEqual(g["saved_tensors"], 5)
            self.assertEqual(g["retained_bytes"], nbytes())      # the scalar loss itself
            self.assertEqual(g["root_shape"], [])
            self.assertEqual(g["nodes"], 11)
            self.assertTrue(all(s["state"] == "released" for n in g["nodes_list"] for s in n["saved"]))
        g = roots["__main__.retained"]
        self.assertFalse(g["backward_ran"])
        self.assertEqual(g["saved_tensors"], 5)
        self.assertEqual(g["saved_tensors_alive"], 5)
        self.assertEqual(g["saved_tensors_released"], 0)
        # input, ReLU output (one storage for two slots), output (saved by pow), the loss
        self.assertEqual(g["retained_bytes"], nbytes(16, 64) + nbytes(16, 32) + nbytes(16, 8) + nbytes())
        self.assertEqual(scan["graphs"][0]["root"], "__main__.retained")


class HooksAndCheckpointing(ScanContract):
    """saved_tensors_hooks, save_on_cpu, non-reentrant checkpointing: reported as hooked,
    no unpack hook runs, no forward is recomputed, the hooks still work afterwards"""

    def test_no_unpack_hook_ran(self):
        r = job("hooks_checkpoint.py")
        self.assertEqual(r["calls_before"], {"pack": 4, "unpack": 0, "forward": 1})
        self.assertEqual(r["calls_after"], r["calls_before"])
        self.assertEqual(r["calls_after_backward"], {"pack": 4, "unpack": 4, "forward": 2})

    def test_hooked_counts(self):
        scan = job("hooks_checkpoint.py")["scan"]
        self.check_scan(scan)
        roots = by_root(scan)
        self.assertEqual(sorted(roots), ["__main__.ckpt_out", "__main__.cpu_out", "__main__.hooked_out",
                                         "__main__.plain_out", "__main__.registered_out"])
        reg = roots["__main__.registered_out"]   # register_hooks on CosBackward0's self only
        self.assertEqual((reg["saved_tensors"], reg["hooked_saved_tensors"], reg["saved_tensors_alive"]),
                         (3, 1, 2))
        states = {(n["name"], s["name"]): s["state"] for n in reg["nodes_list"] for s in n["saved"]}
        self.assertEqual(states[("CosBackward0", "self")], "hooked")
        hooked, plain = roots["__main__.hooked_out"], roots["__main__.plain_out"]
        self.assertEqual((hooked["saved_tensors"], hooked["hooked_saved_tensors"], hooked["saved_tensors_alive"]),
                         (3, 3, 0))
        self.assertEqual((plain["saved_tensors"], plain["hooked_saved_tensors"], plain["saved_tensors_alive"]),
                         (3, 0, 3))
        for n in hooked["nodes_list"]:
            for s in n["saved"]:
                self.assertEqual(s["state"], "hooked")
                self.assertNotIn("shape", s)
        # hooked: the root and the two leaves x, w; plain: also the saved x*w
        self.assertEqual(hooked["retained_bytes"], 3 * nbytes(8, 16))
        self.assertEqual(plain["retained_bytes"], 4 * nbytes(8, 16))
        ck = roots["__main__.ckpt_out"]
        self.assertEqual(ck["saved_tensors_alive"], 0)
        self.assertEqual(ck["hooked_saved_tensors"], ck["saved_tensors"])
        self.assertGreaterEqual(ck["hooked_saved_tensors"], 3)
        self.assertEqual(ck["retained_bytes"], nbytes(8, 4) + nbytes(8, 16))   # output + checkpoint input
        cpu = roots["__main__.cpu_out"]
        self.assertEqual(cpu["saved_tensors_alive"], 0)
        self.assertGreaterEqual(cpu["hooked_saved_tensors"], 1)


class Holders(ScanContract):
    """a graph kept in an object attribute, a dict, a closure, a frame, reference cycles"""

    def test_paths(self):
        r = job("holders.py")
        scan = r["scan"]
        self.check_scan(scan)
        roots = by_root(scan)
        self.assertEqual(sorted(roots), sorted([
            "__main__.alias", "__main__.trainer.history['val'][0]", "__main__.on_epoch_end.kept",
            "__main__.ring.out", "<unreachable Node>.out", "inner.local_out", "worker_loop.held_by_thread"]))
        self.assertEqual(roots["__main__.alias"]["referrers"], ["__main__.alias", "__main__.trainer.last"])
        self.assertTrue(roots["<unreachable Node>.out"]["unreachable"])
        self.assertFalse(roots["__main__.ring.out"]["unreachable"])
        # Linear(10, 6) on N rows: the input (saved by addmm) and the output
        rows = {"__main__.trainer.history['val'][0]": 4, "__main__.alias": 2, "__main__.on_epoch_end.kept": 3,
                "__main__.ring.out": 5, "<unreachable Node>.out": 7, "inner.local_out": 1,
                "worker_loop.held_by_thread": 6}
        for root, n in rows.items():
            g = roots[root]
            self.assertEqual(g["retained_bytes"], nbytes(n, 10) + nbytes(n, 6), root)
            self.assertEqual((g["saved_tensors"], g["saved_tensors_alive"]), (1, 1), root)
            self.assertEqual(g["root_shape"], [n, 6])

    def test_excluded_and_nothing_kept(self):
        r = job("holders.py")
        self.assertNotIn("__main__.excluded[0]", by_root(r["scan"]))
        self.assertTrue(r["local_freed"], "the scan kept a frame local alive")
        after = by_root(r["after_collect"])
        self.assertIn("__main__.excluded[0]", after)
        self.assertNotIn("<unreachable Node>.out", after)        # gc.collect() freed the cycle
        self.assertNotIn("inner.local_out", after)
        self.assertNotIn("worker_loop.held_by_thread", after)


class UnderTracer(unittest.TestCase):
    def test_traced_frame_keeps_its_variables(self):
        r = job("under_tracer.py")
        self.assertTrue(r["variables_kept"], r.get("error"))
        self.assertEqual([g["root"] for g in r["scan"]["graphs"]], ["work.out"])


class HookDetectionUnavailable(ScanContract):
    def test_nothing_unpacked(self):
        r = job("unavailable.py")
        self.assertEqual(r["forward_calls"], 1)                  # checkpoint's unpack never ran
        scan = r["scan"]
        self.assertEqual(scan["hook_detection"], "unavailable")
        self.assertEqual(scan["hook_detection_note"], "forced by the test")
        roots = by_root(scan)
        self.assertEqual(sorted(roots), ["__main__.ckpt_out", "__main__.plain_out"])
        for g in roots.values():
            self.assertEqual(g["saved_tensors_alive"], 0)
            self.assertEqual(g["hooked_saved_tensors"], g["saved_tensors"])
            self.assertGreaterEqual(g["saved_tensors"], 2)
            self.assertEqual(g["root_shape"], [4, 8])
        # the plain graph: TanhBackward0 -> AddmmBackward0 -> bias, TBackward0 -> weight
        self.assertEqual(roots["__main__.plain_out"]["nodes"], 5)


class CustomFunction(ScanContract):
    def test_saved_and_ctx_attributes(self):
        scan = job("custom_function.py")["scan"]
        self.check_scan(scan)
        roots = by_root(scan)
        self.assertEqual(sorted(roots), ["__main__.done", "__main__.outputs['scaled']"])
        kept = roots["__main__.outputs['scaled']"]
        node = kept["nodes_list"][0]
        self.assertEqual(node["name"], "ScaleBackward")
        states = {s["name"]: s["state"] for s in node["saved"]}
        self.assertEqual(states, {"saved_tensors[0]": "alive", "saved_tensors[1]": "alive", "ctx.extra": "alive"})
        done = roots["__main__.done"]
        states = {s["name"]: s["state"] for s in done["nodes_list"][0]["saved"]}
        self.assertEqual(states["ctx.extra"], "alive")           # backward does not free ctx attributes
        self.assertIn("released", states.values())
        self.assertTrue(done["backward_ran"])
        # done: its output, the leaves x and w, ctx.extra (5x5); x*2 was released by backward
        self.assertEqual(done["retained_bytes"], 3 * nbytes(6, 4) + nbytes(5, 5))
        # kept: also x*2 and the scalar 2 that x*2 saved (an int64 wrapped number)
        self.assertEqual(kept["retained_bytes"], 4 * nbytes(6, 4) + nbytes(5, 5) + nbytes(size=8))


def record(job_name, tmpdir):
    """Runs a job under `memlens-cli record`; returns (graphs --json scans, graphs text)."""
    session = os.path.join(tmpdir, job_name + ".mlsession")
    p = subprocess.run([CLI, "record", "--quiet", "-o", session, "--", sys.executable, os.path.join(JOBS, job_name)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError("record failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
    p = subprocess.run([CLI, "graphs", session, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("graphs failed (%d):\n%s" % (p.returncode, p.stderr))
    scans = json.loads(p.stdout)["scans"]
    p = subprocess.run([CLI, "graphs", session], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    return scans, p.stdout


class Recorded(unittest.TestCase):
    """end to end: a job under `memlens-cli record`, scans read back with `memlens-cli graphs`"""

    @classmethod
    def setUpClass(cls):
        if not CLI:
            raise unittest.SkipTest("no --cli given (memlens-cli record)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.scans, cls.text = record("recorded_leak.py", cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        if CLI:
            cls.tmp.cleanup()

    def test_schedule(self):
        # every boundary of the first 10 iterations, the job's request at step 12 (iteration 13
        # in progress), the recorder's (SIGUSR1) at the boundary after step 15, the exit;
        # iteration 20 may be left out by graph_scan_max_share
        got = [(s["iteration"], s.get("trigger")) for s in self.scans]
        expected = [(i, "iteration") for i in range(1, 11)] + [(13, "request"), (16, "request")]
        self.assertEqual(got[:12], expected)
        self.assertEqual(got[-1], (25, "exit"))
        self.assertTrue(set(got[12:-1]) <= {(20, "iteration")}, got)

    def test_contract(self):
        for s in self.scans:
            for k in ("iteration", "phase", "time_us", "partial", "graphs"):
                self.assertIn(k, s)
            self.assertFalse(s["partial"])
            for g in s["graphs"]:
                for k in CONTRACT_KEYS:
                    self.assertIn(k, g)
        self.assertEqual(self.scans[0]["phase"], "train")

    def test_exit_scan(self):
        last = self.scans[-1]
        roots = by_root(last)
        kept = ["__main__.kept_outputs[%d]" % i for i in range(5)]
        losses = ["__main__.train_losses[%d]" % i for i in range(25)]
        self.assertEqual(sorted(roots), sorted(kept + losses))
        full = nbytes(16, 64) + nbytes(16, 32) + nbytes(16, 8)
        for r in kept:
            g = roots[r]
            self.assertEqual(g["retained_bytes"], full)
            self.assertEqual((g["saved_tensors"], g["saved_tensors_alive"]), (4, 4))
            self.assertFalse(g["backward_ran"])
        # kept_outputs[i] is appended after the boundary of iteration 5(i+1): the first scan after
        # that sees it: 6, the request at 13, then 20 (when that scan ran) or the exit scan
        self.assertEqual(roots[kept[0]]["first_seen"], 6)
        self.assertEqual(roots[kept[1]]["first_seen"], 13)      # first seen by the requested scan
        for r in losses:
            g = roots[r]
            self.assertTrue(g["backward_ran"])
            self.assertEqual(g["retained_bytes"], nbytes())
        self.assertEqual(roots[losses[0]]["first_seen"], 1)
        self.assertEqual(last["total_retained_bytes"], 5 * full + 25 * nbytes())
        self.assertEqual([g["root"] for g in last["graphs"]][:5], kept)

    def test_growth_in_text(self):
        self.assertIn("5 graphs like __main__.kept_outputs[*]", self.text)
        self.assertIn("growing:", self.text)


class RecordedEvaluation(unittest.TestCase):
    """end to end with DataLoaders: one more full graph per evaluation batch"""

    @classmethod
    def setUpClass(cls):
        if not CLI:
            raise unittest.SkipTest("no --cli given (memlens-cli record)")
        with tempfile.TemporaryDirectory() as tmp:
            cls.scans, cls.text = record("recorded_eval.py", tmp)

    def test_growth_per_evaluation_batch(self):
        got = [(s["iteration"], s["phase"], s.get("trigger")) for s in self.scans]
        self.assertEqual(got, [(1, "train", "iteration"), (2, "train", "iteration"), (3, "train", "iteration"),
                               (4, "eval", "iteration"), (5, "eval", "iteration"), (6, "eval", "iteration"),
                               (7, "eval", "iteration"), (7, "exit", "exit")])
        for s in self.scans[:3]:
            self.assertEqual([g["root"] for g in s["graphs"]], ["train_epoch.loss"])
            self.assertTrue(s["graphs"][0]["backward_ran"])
        full = nbytes(16, 64) + nbytes(16, 32) + nbytes(16, 8)
        for k, s in enumerate(self.scans[3:7]):
            roots = by_root(s)
            self.assertEqual(sorted(roots), ["validate.kept_outputs[%d]" % i for i in range(k + 1)])
            for i in range(k + 1):
                g = roots["validate.kept_outputs[%d]" % i]
                self.assertEqual(g["first_seen"], 4 + i)
                self.assertEqual(g["retained_bytes"], full)
                self.assertFalse(g["backward_ran"])
            self.assertEqual(s["total_retained_bytes"], (k + 1) * full)
        self.assertIn("validate.kept_outputs[*]: 1 at iteration 4, 4 at iteration 7", self.text)

    def test_exit_scan(self):
        roots = by_root(self.scans[-1])
        self.assertEqual(sorted(roots), ["__main__.late"] + ["__main__.results[%d]" % i for i in range(4)])
        # the same tensors under another name: first seen when they were validate's
        self.assertEqual([roots["__main__.results[%d]" % i]["first_seen"] for i in range(4)], [4, 5, 6, 7])
        self.assertEqual(roots["__main__.late"]["first_seen"], 7)
        self.assertEqual(roots["__main__.late"]["retained_bytes"], nbytes(2, 64) + nbytes(2, 32) + nbytes(2, 8))


class ScanTime(unittest.TestCase):
    """about 100 graphs of about 50 nodes"""

    def test_time(self):
        for extra in (0, 100000):
            r = job("many_graphs.py", extra)
            scan = r["scan"]
            self.assertEqual(len(scan["graphs"]), 100)
            g = scan["graphs"][0]
            self.assertEqual(g["nodes"], 50)
            self.assertEqual(g["retained_bytes"], 11 * nbytes(8, 64))
            # one signature: node detail for the 50 largest only
            self.assertEqual(sum(1 for g in scan["graphs"] if g.get("detail_omitted")), 50)
            self.assertTrue(all(len(g["nodes_list"]) == 50 for g in scan["graphs"][:50]))
            if extra == 0:
                self.assertFalse(scan["partial"], scan["partial_reason"])
            elif scan["partial"]:   # a loaded machine: the time limit may cut the naming walk
                self.assertIn("time limit", scan["partial_reason"])
            sys.stderr.write("\n  scan of 100 graphs x 50 nodes, %d extra objects: %.0f ms (again: %.0f ms), "
                             "%d objects named\n" % (extra, scan["scan_us"] / 1e3, r["second"]["scan_us"] / 1e3,
                                                     scan["objects_visited"]))
            self.assertLess(scan["scan_us"], 3e6)


CLI = None


def main():
    global CLI
    argv = list(sys.argv)
    if "--cli" in argv:
        i = argv.index("--cli")
        CLI = argv[i + 1]
        del argv[i:i + 2]
    try:
        subprocess.run([sys.executable, "-c", "import torch"], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    except subprocess.CalledProcessError:
        print("skipped: %s has no torch" % sys.executable)
        return 77
    prog = unittest.main(argv=argv, exit=False)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
