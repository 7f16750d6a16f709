"""Capture tests: real CPU jobs (Debian's torch 1.13, no GPU) under `memlens-cli record`, and the
recorder under load from a FAKE AGENT (fake_agent.py, standing in for a CUDA job's agent).

    test_capture.py --cli memlens-cli --python /usr/bin/python3 --case NAME [--example EXE]
                    [--fake-nvml LIB] [--pickle resources/example.pickle]

Each case is one ctest test (tests/capture/CMakeLists.txt). Exit 0: passed, 1: failed, 77: skipped.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
JOBS = os.path.join(HERE, "jobs")
SKIP = 77

A = None  # the parsed arguments
TMP = None


from capture_cases import Failure, check, run_case  # noqa: F401 (Failure: raised by cases)


def env_clean(extra=None):
    env = dict(os.environ)
    for k in ("PYTHONPATH", "MEMLENS_SOCKET", "MEMLENS_AGENT_CONFIG", "MEMLENS_NVML_LIBRARY", "MEMLENS_AGENT_DIR"):
        env.pop(k, None)
    env.update(extra or {})
    return env


def record(out, job, options=(), env=None, timeout=120):
    """Runs `memlens-cli record -o OUT OPTIONS -- JOB...`; returns (rc, stdout, stderr)."""
    argv = [A.cli, "record", "-o", out] + list(options) + ["--"] + list(job)
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, env=env or env_clean(),
                       cwd=TMP)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def py(script, *args):
    return [A.python, os.path.join(JOBS, script)] + [str(a) for a in args]


def session(path, *extra):
    p = subprocess.run([A.cli, "session", path, "--json"] + list(extra), capture_output=True, timeout=60)
    if p.returncode != 0:
        raise Failure("memlens-cli session %s: exit %d: %s" % (path, p.returncode, p.stderr.decode(errors="replace")))
    return json.loads(p.stdout)


def cli(*args, timeout=60):
    p = subprocess.run([A.cli] + list(args), capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def phases(s):
    return [it["phase"] for it in s["iterations"]]


def iterations_in(path):
    """Iterations of a (live) session file; 0 while it cannot be read yet."""
    try:
        return len(session(path)["iterations"])
    except (Failure, ValueError, subprocess.TimeoutExpired):
        return 0


def children(pid):
    """The process ids of pid's children (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return f.read().split()
    except OSError:
        return []


def wait_for(cond, timeout, step=0.05):
    """Polls cond until it holds (True) or timeout seconds pass (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return False


# ----- cases -----------------------------------------------------------------------------------------

def case_iterations():
    """A DataLoader of 12 training batches and an eval loop of 5 under no_grad, two epochs."""
    out = os.path.join(TMP, "mlp.memlens")
    rc, so, se = record(out, py("mlp_train.py", 2))
    check(rc == 0, "the job exits 0 (stderr: %s)" % se.strip()[-300:])
    s = session(out)
    check(phases(s) == (["train"] * 12 + ["eval"] * 5) * 2, "12 train then 5 eval iterations, per epoch: %s" % phases(s))
    check([it["index"] for it in s["iterations"]] == list(range(1, 35)), "indices 1..34")
    check(all(it["start_us"] <= it["end_us"] for it in s["iterations"]), "start <= end")
    check(all(a["end_us"] <= b["start_us"] + 1000 for a, b in zip(s["iterations"], s["iterations"][1:])),
          "iterations do not overlap")
    p = s["process"]
    check(p["command"][1].endswith("mlp_train.py"), "the command line is recorded")
    check(p["python"] and p["torch"].startswith("1.13"), "Python and torch versions (%s, %s)" % (p["python"], p["torch"]))
    check(p["allocator_snapshots"] is False and "CPU-only" in p["snapshots_note"],
          "no CUDA: the session says allocator snapshots are absent (%r)" % p["snapshots_note"])
    check(p["exit_code"] == 0 and p["exit_signal"] is None and p["ended_us"], "exit status 0 recorded")
    check(s["snapshots"] == [] and s["live"] is False and s["finished"] is True, "no snapshots, finished, not live")
    check(not os.path.exists(out + "-wal"), "the finished session is one file")


def case_loops():
    """The iteration rules on loops of other shapes."""
    expect = {
        "accumulate": ["train"] * 3,
        "gan": ["train"] * 6,
        "stepdriven": ["train"] * 5,
        "zip": ["train"] * 6,
        "nograd_inside": ["eval"] * 5,
        "workers": ["train"] * 8 + ["eval"] * 4,
        "break": ["train"] * 5 + ["eval"] * 3,
        "manual": ["train"] * 4 + ["eval"] * 2,
        "manual_flag": ["train"] * 3,
    }
    for mode, want in expect.items():
        out = os.path.join(TMP, "loops-%s.memlens" % mode)
        t0 = time.monotonic()
        options = ["--quiet"] + (["--manual-steps"] if mode == "manual_flag" else [])
        rc, so, se = record(out, py("loops.py", mode), options=options)
        check(rc == 0, "%s: the job exits 0 (%s)" % (mode, se.strip()[-300:]))
        got = phases(session(out))
        check(got == want, "%s: %s (%.1f s)" % (mode, got, time.monotonic() - t0))


def case_exit_status():
    """The job's exit status passes through; a crash and a missing command."""
    out = os.path.join(TMP, "exit3.memlens")
    rc, _, _ = record(out, py("mlp_train.py", 1, "--exit", 3), options=["--quiet"])
    check(rc == 3, "exit 3 -> 3 (got %d)" % rc)
    s = session(out)
    check(s["process"]["exit_code"] == 3 and len(s["iterations"]) == 17, "exit code and iterations recorded")

    out = os.path.join(TMP, "segv.memlens")
    rc, so, _ = record(out, py("crash.py", "segv"), options=["--quiet", "--agent-config", '{"graph_scans": false}'])
    check(rc == 139, "killed by SIGSEGV -> 139 (got %d)" % rc)
    s = session(out)
    check(s["process"]["exit_code"] == 139 and s["process"]["exit_signal"] == 11, "exit 139, signal 11 recorded")
    check(len(s["iterations"]) == 3, "the 3 iterations before the crash are kept (%d)" % len(s["iterations"]))

    out = os.path.join(TMP, "sh.memlens")
    rc, _, _ = record(out, ["/bin/sh", "-c", "exit 4"], options=["--quiet"])
    check(rc == 4, "a non-Python job: exit 4 -> 4")
    s = session(out)
    check(s["process"]["allocator_snapshots"] is False and "no memlens agent" in s["process"]["snapshots_note"],
          "a job without the agent says so (%r)" % s["process"]["snapshots_note"])

    out = os.path.join(TMP, "notorch.memlens")
    rc, _, _ = record(out, py("notorch.py", 5), options=["--quiet"])
    s = session(out)
    check(rc == 5 and s["process"]["snapshots_note"] == "the job did not import torch",
          "a Python job without torch: exit 5, note %r" % s["process"]["snapshots_note"])

    out = os.path.join(TMP, "missing.memlens")
    rc, so, se = record(out, ["/nonexistent/command"])
    check(rc == 127, "a command that cannot run -> 127 (got %d)" % rc)
    check(se.strip().count("\n") == 0 and "cannot run '/nonexistent/command'" in se,
          "one-line message: %r" % se.strip())
    check(not os.path.exists(out), "no session file is left behind")

    rc, _, se = cli("record", "-o", out)
    check(rc == 2 and "needs a command" in se, "no command: usage error (exit 2)")


def case_sigkill():
    """A job killed with SIGKILL keeps its iterations; so does a recorder killed with SIGKILL."""
    out = os.path.join(TMP, "killed-job.memlens")
    # Graph scans off: they would slow the steps down and hide a record held back.
    rc, so, _ = record(out, py("crash.py", "kill", 7), options=["--quiet", "--agent-config", '{"graph_scans": false}'])
    check(rc == 137, "job killed by SIGKILL -> 137 (got %d)" % rc)
    s = session(out)
    check(len(s["iterations"]) == 7, "the 7 iterations before the kill are in the session (%d)" % len(s["iterations"]))
    check(s["process"]["exit_signal"] == 9, "signal 9 recorded")

    out = os.path.join(TMP, "killed-recorder.memlens")
    # its socket directory in a folder of this test's own: a recorder killed with SIGKILL cannot
    # remove it, the test's temporary folder goes with it
    sockets = os.path.join(TMP, "killed-recorder-sockets")
    os.mkdir(sockets)
    env = env_clean({"TMPDIR": sockets})
    env.pop("XDG_RUNTIME_DIR", None)
    p = subprocess.Popen([A.cli, "record", "-o", out, "--quiet", "--"] + py("slow.py", 200, 0.05),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=TMP,
                         start_new_session=True)
    try:
        seen = 0
        while seen < 6:
            line = p.stdout.readline()
            if not line:
                break
            if line.startswith(b"step"):
                seen += 1
        # the recorder has written what it received: 5 iterations in the file (it is read while live)
        check(wait_for(lambda: iterations_in(out) >= 5, 20), "the live session has 5 iterations before the kill")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the orphaned job
        except ProcessLookupError:
            pass
    s = session(out)
    n = len(s["iterations"])
    check(n >= 5, "recorder killed: the session opens and has the iterations written before (%d)" % n)
    check(s["live"] is False and s["finished"] is False, "not live, not finished")
    left = [d for d in os.listdir(sockets) if d.startswith("memlens-")]
    check(len(left) == 1, "the killed recorder's socket directory is in the test's own folder (%s)" % left)


def case_damaged():
    """Damaged session files are refused with one line naming what is damaged."""
    good = os.path.join(TMP, "good.memlens")
    rc, _, _ = record(good, py("agent_api.py"), options=["--quiet"])
    check(rc == 0, "a session to damage")
    data = open(good, "rb").read()

    def refused(name, content, expect):
        path = os.path.join(TMP, name)
        with open(path, "wb") as f:
            f.write(content)
        rc, so, se = cli("session", path, "--json")
        line = se.strip()
        check(rc == 1 and so == "" and "\n" not in line and expect in line and line.startswith(path + ": "),
              "%s: %r" % (name, line))

    refused("truncated.memlens", data[:len(data) // 2], "damaged session: the file is truncated")
    refused("header.memlens", b"\0" * 100 + data[100:], "its header is damaged")
    refused("empty.memlens", b"", "the file is empty")
    refused("text.memlens", b"not a session at all\n" * 20, "not a memlens session")
    rc, _, se = cli("session", os.path.join(TMP, "absent.memlens"))
    check(rc == 1 and "cannot open: No such file or directory" in se, "missing file: %r" % se.strip())
    rc, _, se = cli("export", good, "--snapshot", "7", "-o", os.path.join(TMP, "x.pickle"))
    check(rc == 1 and "no snapshot 7" in se, "export of a snapshot that is not there: %r" % se.strip())


def case_flood():
    """FAKE AGENT: floods of markers and samples and 50-150 MB snapshots; nothing lost, bytes exact."""
    out = os.path.join(TMP, "flood.memlens")
    agent = [A.python, "-S", os.path.join(HERE, "fake_agent.py"), "flood", "--iterations", "200",
             "--markers", "20000", "--samples", "20000", "--snapshots", "50,100,150"]
    if A.pickle:
        agent += ["--pickle", A.pickle]
    t0 = time.monotonic()
    rc, so, se = record(out, agent, options=["--quiet"], timeout=300)
    total = time.monotonic() - t0
    check(rc == 0, "the fake agent exits 0 (%s)" % se.strip()[-300:])
    sent = json.loads(so.strip().splitlines()[-1])
    s = session(out)
    check(len(s["iterations"]) == 200, "200 iterations")
    check(s["markers"] == 20000 and s["samples"] == 20000, "20000 markers and 20000 samples (%d, %d)" %
          (s["markers"], s["samples"]))
    sizes = [x["bytes"] for x in s["snapshots"]]
    check(sizes == sent["snapshot_bytes"], "every snapshot stored, in order: %s" % sizes)
    for snap, crc in zip(s["snapshots"], sent["crc32"]):
        path = os.path.join(TMP, "flood-%d.pickle" % snap["id"])
        rc, _, se = cli("export", out, "--snapshot", str(snap["id"]), "-o", path, timeout=120)
        with open(path, "rb") as f:
            got = zlib.crc32(f.read()) & 0xFFFFFFFF
        check(rc == 0 and got == crc, "snapshot %d exported byte for byte (%d bytes)" % (snap["id"], snap["bytes"]))
        os.remove(path)
    mb = sum(sizes) / 1e6
    print("  flood: %.0f MB of snapshots + 40000 small records; fake agent sent in %.2f s; "
          "recorded and finished in %.2f s (%.0f MB/s end to end)" % (mb, sent["send_seconds"], total, mb / total))
    check(total < 90, "the recorder keeps up (%.1f s in all)" % total)
    if A.pickle:
        # The real snapshot (the last one) opens in memlens-cli after the round trip.
        path = os.path.join(TMP, "roundtrip.pickle")
        cli("export", out, "--snapshot", str(s["snapshots"][-1]["id"]), "-o", path)
        rc, so, se = cli("stats", path, "--json")
        check(rc == 0 and open(path, "rb").read() == open(A.pickle, "rb").read(),
              "a real snapshot comes back verbatim and memlens-cli stats reads it")


def case_live():
    """A session is readable while being written: live, growing, then finished."""
    out = os.path.join(TMP, "live.memlens")
    p = subprocess.Popen([A.cli, "record", "-o", out, "--quiet", "--"] + py("slow.py", 16, 0.25),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env_clean(), cwd=TMP)
    try:
        check(wait_for(lambda: os.path.exists(out), 20), "the session file appears")
        follow = subprocess.Popen([A.cli, "session", out, "--follow"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        counts = []

        def progressed():
            s = session(out)
            counts.append((len(s["iterations"]), s["live"]))
            return len(s["iterations"]) >= 3

        check(wait_for(progressed, 30, 0.2), "iterations appear while the job runs")
        s = session(out)
        check(s["live"] is True and s["finished"] is False, "live while recording")
        n1 = len(s["iterations"])
        check(wait_for(lambda: len(session(out)["iterations"]) > n1, 10, 0.2), "and keep coming")
        check(p.wait(60) == 0, "the job ends")
        fo, fe = follow.communicate(timeout=30)
        lines = [l for l in fo.decode().splitlines() if l.startswith("iteration ")]
        check(follow.returncode == 0 and len(lines) == 16,
              "session --follow printed all 16 iterations and stopped when the recording ended (%d)" % len(lines))
    finally:
        if p.poll() is None:
            p.kill()
    s = session(out)
    check(s["live"] is False and s["finished"] is True and len(s["iterations"]) == 16, "finished: 16 iterations")


def case_signals():
    """SIGTERM to the recorder reaches the job; SIGUSR1 asks the agent for a snapshot."""
    out = os.path.join(TMP, "term.memlens")
    p = subprocess.Popen([A.cli, "record", "-o", out, "--quiet", "--"] + py("slow.py", 400, 0.05),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_clean(), cwd=TMP)
    while not p.stdout.readline().startswith(b"step 3"):
        pass
    p.send_signal(signal.SIGTERM)
    rc = p.wait(30)
    check(rc == 42, "SIGTERM forwarded: the job's handler exits 42 and so does the recorder (got %d)" % rc)
    s = session(out)
    check(s["process"]["exit_code"] == 42 and len(s["iterations"]) >= 3, "recorded")

    out = os.path.join(TMP, "request.memlens")
    agent = [A.python, "-S", os.path.join(HERE, "fake_agent.py"), "request"]
    p = subprocess.Popen([A.cli, "record", "-o", out, "--quiet", "--"] + agent, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env_clean(), cwd=TMP)
    check(p.stdout.readline().strip() == b"waiting", "FAKE AGENT connected")
    p.send_signal(signal.SIGUSR1)
    rc = p.wait(30)
    s = session(out)
    check(rc == 0 and [x["trigger"] for x in s["snapshots"]] == ["request"],
          "SIGUSR1: the agent was asked and its snapshot stored with trigger 'request'")

    # a request before the agent connected is kept for it
    out = os.path.join(TMP, "early-request.memlens")
    p = subprocess.Popen([A.cli, "record", "-o", out, "--quiet", "--"] + agent + ["--connect-delay", "1.5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_clean(), cwd=TMP)
    check(wait_for(lambda: os.path.exists(out), 20), "the session file appears")
    # the recorder blocks its signals before it starts the job: once the job runs, SIGUSR1 is its
    check(wait_for(lambda: children(p.pid), 20), "the recorder started the job")
    p.send_signal(signal.SIGUSR1)
    check(p.stdout.readline().strip() == b"waiting", "FAKE AGENT connected after the request")
    rc = p.wait(30)
    s = session(out)
    check(rc == 0 and [x["trigger"] for x in s["snapshots"]] == ["request"],
          "SIGUSR1 before the agent connected: still answered (exit %d)" % rc)


def case_agent_api():
    """memlens_agent: markers, graph scans, snapshot() without CUDA; a job's own sitecustomize."""
    out = os.path.join(TMP, "api.memlens")
    # Without the automatic retained-graph scans (README-graphs.md): only the job's own scan.
    rc, so, se = record(out, py("agent_api.py"), options=["--quiet", "--agent-config", '{"graph_scans": false}'])
    check(rc == 0, "the job's own checks pass (%s %s)" % (so.strip(), se.strip()[-300:]))
    s = session(out)
    import sqlite3  # the job's own markers; the agent adds a `forward` marker per iteration (doctor.py)
    with sqlite3.connect("file:%s?mode=ro" % out, uri=True) as db:
        names = [r[0] for r in db.execute("SELECT name FROM markers ORDER BY id")]
    own = [n for n in names if n != "forward"]
    check(own == ["lr_drop"] and s["markers"] == len(names) and s["graph_scans"] == 1 and len(s["iterations"]) == 3,
          "1 marker of the job's (%s), 1 graph scan, 3 iterations" % own)

    out = os.path.join(TMP, "usersite.memlens")
    rc, so, se = record(out, py("check_usersite.py"), options=["--quiet"],
                        env=env_clean({"PYTHONPATH": os.path.join(JOBS, "usersite")}))
    check(rc == 0, "the job's own sitecustomize still runs (exit %d)" % rc)
    check(session(out)["process"]["torch"].startswith("1.13"), "and the agent ran too")


def case_nvml():
    """FAKE NVML (fake_nvml.cpp) in place of libnvidia-ml.so.1: samples of the job's process."""
    if not A.fake_nvml:
        print("no fake NVML library")
        return SKIP
    out = os.path.join(TMP, "nvml.memlens")
    rc, _, se = record(out, py("slow.py", 6, 0.1), options=["--quiet", "--sample-interval", "20"],
                       env=env_clean({"MEMLENS_NVML_LIBRARY": A.fake_nvml}))
    check(rc == 0, "the job exits 0 (%s)" % se.strip()[-200:])
    s = session(out)
    p = s["process"]
    check(p["devices"] and p["devices"][0]["name"] == "FAKE NVML GPU", "devices from NVML")
    check(p["info"]["nvml"]["driver"] == "999.99-fake", "driver version")
    check(s["samples"] >= 5, "NVML samples recorded (%d)" % s["samples"])
    import sqlite3  # reading the rows themselves: the process's own usage was found by pid

    db = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    used = [r[0] for r in db.execute("SELECT process_used FROM samples WHERE source = 'nvml'")]
    db.close()
    check(123 << 20 in used, "the job's pid matched: process_used = 123 MiB")


def case_cxx():
    """The C++ capture library (CPU parts): marking steps, a session written without a recorder,
    sending to a recorder."""
    if not A.example:
        print("the C++ capture library was not built (no LibTorch)")
        return SKIP
    out = os.path.join(TMP, "cxx-local.memlens")
    p = subprocess.run([A.example, "--out", out, "--epochs", "2", "--markers", "--scan"], capture_output=True,
                       timeout=120, env=env_clean(), cwd=TMP)
    check(p.returncode == 0, "runs alone (%s)" % p.stderr.decode()[-300:])
    s = session(out)
    check(phases(s) == (["train"] * 12 + ["eval"] * 5) * 2, "writes its own session: 24 train, 10 eval")
    check(s["markers"] == 2 and s["graph_scans"] == 1 and s["finished"] and not s["live"], "markers, scan, finished")
    check(s["process"]["allocator_snapshots"] is False and s["process"]["snapshots_note"], "no CUDA: said so")

    out = os.path.join(TMP, "cxx-recorded.memlens")
    rc, so, se = record(out, [A.example, "--exit", "5", "--markers"], options=["--quiet"])
    check(rc == 5, "under the recorder: exit 5 -> 5")
    check("recorder" in so, "it found the recorder")
    s = session(out)
    check(phases(s) == ["train"] * 12 + ["eval"] * 5 and s["markers"] == 1, "sent 17 iterations and a marker")
    check(s["process"]["info"]["agent"].startswith("c++"), "the process record names the C++ library")


def case_stack_depth():
    """--stack-depth N: passed to the agent, which keeps the innermost N frames of every stack
    (a real snapshot stands in for the CPU build's missing allocator: jobs/stack_depth.py); bad
    values are usage errors; the C++ library says it does not apply it."""
    import pickle

    out = os.path.join(TMP, "depth-config.memlens")
    rc, so, se = record(out, py("stack_depth.py"), options=["--quiet", "--stack-depth", "3"])
    check(rc == 0, "the job exits 0 (%s)" % se.strip()[-300:])
    got = json.loads(so.strip().splitlines()[-1])
    check(got["config"].get("stack_depth") == 3 and got["stack_depth"] == 3,
          "the agent received stack_depth 3 (%r)" % got)
    s = session(out)
    check(s["process"]["info"]["recorder"]["capture"]["stack_depth"] == 3, "the process record keeps the option")

    rc, so, se = record(os.path.join(TMP, "depth-none.memlens"), py("stack_depth.py"), options=["--quiet"])
    got = json.loads(so.strip().splitlines()[-1])
    check(rc == 0 and got["config"].get("stack_depth") is None and got["stack_depth"] == 0,
          "without the option: stack_depth null, every frame kept (%r)" % got)

    for bad in ("0", "-1", "x", "2.5", ""):
        path = os.path.join(TMP, "depth-bad.memlens")
        rc, so, se = record(path, py("stack_depth.py"), options=["--stack-depth", bad])
        first = se.splitlines()[0] if se else ""
        errors = [l for l in se.splitlines() if l.startswith("memlens-cli:")]
        check(rc == 2 and len(errors) == 1 and first.startswith("memlens-cli: --stack-depth") and
              repr(bad)[1:-1] in first and not os.path.exists(path),
              "--stack-depth %r: usage error, exit 2, one line: %r" % (bad, first))
    rc, so, se = record(os.path.join(TMP, "depth-eq.memlens"), py("stack_depth.py"), options=["--stack-depth=0"])
    check(rc == 2 and se.startswith("memlens-cli: --stack-depth"), "--stack-depth=0: usage error")

    if not A.pickle:
        print("no real snapshot (--pickle): the trimming through the agent is not tested here")
    else:
        with open(A.pickle, "rb") as f:
            original = pickle.load(f)
        for depth, opts in ((3, ["--stack-depth", "3"]), (None, [])):
            out = os.path.join(TMP, "depth-snap-%s.memlens" % depth)
            rc, so, se = record(out, py("stack_depth.py", A.pickle), options=["--quiet"] + opts)
            check(rc == 0, "depth %s: the job's snapshot was taken (exit %d, %s)" % (depth, rc, se.strip()[-300:]))
            s = session(out)
            check([x["trigger"] for x in s["snapshots"]] == ["request", "exit"], "a requested and an exit snapshot")
            for x in s["snapshots"]:
                path = os.path.join(TMP, "depth-%s-%d.pickle" % (depth, x["id"]))
                rc, _, se = cli("export", out, "--snapshot", str(x["id"]), "-o", path)
                check(rc == 0, "exported (%s)" % se.strip())
                with open(path, "rb") as f:
                    snap = pickle.load(f)
                pairs = []  # (trimmed stack, original stack), walked in step

                def walk(a, b):
                    if isinstance(a, dict):
                        assert isinstance(b, dict) and list(a) == list(b)
                        for k in a:
                            if k == "frames":
                                pairs.append((a[k], b[k]))
                            else:
                                walk(a[k], b[k])
                    elif isinstance(a, (list, tuple)):
                        assert len(a) == len(b)
                        for u, v in zip(a, b):
                            walk(u, v)
                    else:
                        assert a == b, (a, b)

                try:
                    walk(snap, original)
                except AssertionError as e:
                    raise Failure("depth %s: the snapshot differs outside its stacks: %r" % (depth, e))
                longest = max(len(a) for a, _ in pairs)
                want = 3 if depth else max(len(b) for _, b in pairs)
                check(len(pairs) > 1000 and all(a == b[:want] for a, b in pairs) and longest == want,
                      "depth %s: %d stacks, each the innermost %d frames of the original (longest %d)" %
                      (depth, len(pairs), want, longest))
                info = x.get("info", {})
                check(info.get("stack_depth") == depth and (info.get("stacks_trimmed", 0) > 0) == bool(depth),
                      "depth %s: the snapshot's info says so (%r)" % (depth, info))
                os.remove(path)

    if not A.example:
        print("the C++ capture library was not built (no LibTorch): its note is not tested")
        return None
    out = os.path.join(TMP, "depth-cxx.memlens")
    rc, so, se = record(out, [A.example, "--epochs", "1"], options=["--quiet", "--stack-depth", "3"])
    check(rc == 0, "C++ program under the recorder with --stack-depth 3: exit 0")
    lines = [l for l in se.splitlines() if "stack depth" in l]
    check(len(lines) == 1 and "not applied" in lines[0], "the C++ library says once that it does not apply it: %r" % lines)
    note = s_note = session(out)["process"]["info"].get("stack_depth")
    check(isinstance(note, dict) and note.get("requested") == 3 and note.get("applied") is False and note.get("note"),
          "and its process record says so: %r" % s_note)


def printed_pids(out):
    """The "NAME pid P" lines the jobs print. Several processes write to the same pipe, so two
    lines can arrive run together ("rank 1 pid 7rank 0 pid 8"): read the pairs, not the lines."""
    return {name: pid for name, pid in re.findall(r"(rank \d+|launcher|main|helper) pid (\d+)", out)}


def case_processes():
    """Several processes with the agent: the session keeps rank 0's records of a job started like
    torch.multiprocessing.spawn (a waiting launcher, two workers), and a training process's over
    a helper process's."""
    out = os.path.join(TMP, "ddp.memlens")
    port = 29500 + os.getpid() % 400
    rc, so, se = record(out, py("ddp_spawn.py", 2, 7, port), options=["--quiet"], timeout=240)
    check(rc == 0, "the job exits 0 (stderr: %s)" % se.strip()[-400:])
    pids = printed_pids(so)
    s = session(out)
    p = s["process"]
    check(len(s["iterations"]) == 7 and phases(s) == ["train"] * 7,
          "7 train iterations: rank 0's, not both workers' (%d)" % len(s["iterations"]))
    check("rank 0" in pids and "launcher" in pids, "the job printed its pids (%r)" % so[-400:])
    check(p["pid"] == int(pids["rank 0"]), "the process is rank 0's worker (pid %s; printed %s)" % (p["pid"], pids))
    check(p["info"].get("rank") == 0 and p["info"].get("world_size") == 2, "rank 0 of 2 (%s)" % p["info"])
    check(p["info"].get("launcher_pid") == int(pids["launcher"]), "the launcher's pid is kept (%s)" % p["info"])
    check(p["command"][1].endswith("ddp_spawn.py") and p["exit_code"] == 0, "the command and exit status are the job's")

    out = os.path.join(TMP, "helper.memlens")
    rc, so, se = record(out, py("with_helper_process.py", 5), options=["--quiet"])
    check(rc == 0, "the job exits 0 (stderr: %s)" % se.strip()[-400:])
    pids = printed_pids(so)
    s = session(out)
    check("helper" in pids and len(s["iterations"]) == 5, "5 iterations, the helper ran (%s)" % pids)
    check(s["process"]["pid"] == int(pids["main"]) and "launcher_pid" not in s["process"]["info"],
          "the process is the training one, not the helper (%s)" % s["process"]["pid"])


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global A, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--example")
    ap.add_argument("--fake-nvml")
    ap.add_argument("--pickle")
    A = ap.parse_args()
    # Every case but the fake agent's runs real torch jobs (Debian: python3-torch; the
    # --minimal dependencies of packaging/install-deps.sh leave it out).
    if A.case != "flood" and subprocess.run([A.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print("%s has no torch: skipped" % A.python)
        return SKIP

    def set_tmp(tmp):
        global TMP
        TMP = tmp
    return run_case(A.case, CASES[A.case], "memlens-capture-", set_tmp)


if __name__ == "__main__":
    sys.exit(main())
