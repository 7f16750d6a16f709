"""memlens-cli attach (issue 12): a CPU training job started without memlens (Debian's python3 and
torch), attached after a few iterations.

The job (jobs/attach_target.py) waits at gates the test opens by creating files, running Python
code while it waits; every wait here is for an event (a line the job or memlens-cli prints, a
process ending), never for a fixed time. Each case runs the same job unattached too: output and
exit status must be equal.

Cases: end (attached until the job exits), detach (Ctrl-C mid-run: the job goes on, nothing
left behind, in the job or in memlens-cli's TMPDIR), duration (--duration detaches on its own), errors (one line, exit 1: attached
twice, no such process, not Python, no torch, no permission, no debugger, a job under record).
Usage: test_attach.py --cli memlens-cli --python /usr/bin/python3 --case NAME"""

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_cases import Failure, check, run_case  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "jobs", "attach_target.py")
SKIP = 77
A = None
TMP = None
STEPS = 12


class Lines(object):
    """A process's output, read on a thread; wait_for() returns when a line containing the text
    arrived (or the process ended: a failure)."""

    def __init__(self, stream):
        self.lines = []
        self.cv = threading.Condition()
        self.closed = False
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in iter(stream.readline, ""):
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.closed = True
            self.cv.notify_all()

    def wait_for(self, text, what, timeout=120):
        with self.cv:
            ok = self.cv.wait_for(lambda: self.closed or any(text in l for l in self.lines), timeout)
            found = any(text in l for l in self.lines)
        if not (ok and found):
            raise Failure("%s: no line with %r (got %r)" % (what, text, self.lines[-5:]))

    def text(self):
        with self.cv:
            self.cv.wait_for(lambda: self.closed, 60)
            return "\n".join(self.lines) + "\n"


class Job(object):
    """attach_target.py with its gates; the output of both streams together."""

    def __init__(self, name, gates, residue=False, env=None, device=None):
        self.gates = {n: os.path.join(TMP, "%s-gate-%d" % (name, n)) for n in gates}
        args = [A.python, JOB, str(STEPS)]
        for i, (n, path) in enumerate(sorted(self.gates.items()), 1):
            args += ["--gate%d" % i, str(n), path]
        if residue:
            args.append("--residue")
        if device:
            args += ["--device", device]
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                                  env=env)
        self.out = Lines(self.p.stdout)

    def at_gate(self, n):
        self.out.wait_for("waiting %d" % n, "the job reaches step %d" % n)

    def open_gate(self, n):
        open(self.gates[n], "w").close()

    def finish(self):
        text = self.out.text()
        return self.p.wait(timeout=120), text


def unattached(gates, residue=False, device=None):
    """The job's output and exit status without memlens (every gate opened when reached)."""
    job = Job("plain", gates, residue, device=device)
    for n in sorted(gates):
        job.at_gate(n)
        job.open_gate(n)
    return job.finish()


def sockets():
    """Where memlens-cli attach makes its socket directory here (its TMPDIR): to see it there while
    attached, and gone afterwards."""
    d = os.path.join(TMP, "sockets")
    os.makedirs(d, exist_ok=True)
    return d


def attach(pid, out, *extra):
    env = dict(os.environ, TMPDIR=sockets())
    env.pop("XDG_RUNTIME_DIR", None)
    p = subprocess.Popen([A.cli, "attach", str(pid), "-o", out] + list(extra), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, env=env)
    return p, Lines(p.stdout)


def socket_dir_made():
    made = os.listdir(sockets())
    check(len(made) == 1 and made[0].startswith("memlens-"),
          "memlens-cli attach makes its socket directory in its TMPDIR (%s)" % made)


def nothing_left():
    left = [os.path.join(d, f) for d, _, files in os.walk(sockets()) for f in files] + os.listdir(sockets())
    check(left == [], "memlens-cli attach leaves nothing in its TMPDIR: socket, directory, injected script (%s)" % left)


def cli_json(*args):
    p = subprocess.run([A.cli] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                       timeout=120)
    if p.returncode != 0:
        raise Failure("memlens-cli %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return json.loads(p.stdout)


def roots(scan):
    return [g["root"] for g in scan["graphs"]]


def case_end():
    """Attached after step 3 until the job exits: the session holds the job's pid, the nine
    iterations after the attach and the exit graph scan naming `history`, which keeps every
    loss's graph; output and exit status are the unattached run's."""
    want_rc, want_out = unattached([3])
    job = Job("end", [3])
    job.at_gate(3)
    out = os.path.join(TMP, "end.memlens")
    cli, lines = attach(job.p.pid, out)
    lines.wait_for("memlens: attached to process %d" % job.p.pid, "memlens-cli reports the attach")
    socket_dir_made()
    job.open_gate(3)
    rc, text = job.finish()
    check(rc == want_rc == 0 and text == want_out,
          "the job's output and exit status equal an unattached run's (exit %d)" % rc)
    crc = cli.wait(timeout=120)
    check(crc == 0, "memlens-cli attach ends with the job, exit 0 (%s)" % lines.text().strip()[-300:])
    nothing_left()
    s = cli_json("session", out, "--json")
    check(s["process"]["pid"] == job.p.pid and s["finished"] and not s["live"],
          "the session is the job's (pid %d), finished" % job.p.pid)
    its = s["iterations"]
    check(len(its) == STEPS - 3 and all(i["phase"] == "train" for i in its) and [i["index"] for i in its] ==
          list(range(1, STEPS - 2)), "%d train iterations: those after the attach (%d)" % (STEPS - 3, len(its)))
    info = s["process"]["info"]
    check(info.get("attached", {}).get("method") == "gdb" and info["attached"].get("ended") == "the job exited"
          and info.get("agent_exit") == "exit", "the session says it was attached by gdb and ended with the job (%s)"
          % info.get("attached"))
    scans = cli_json("graphs", out, "--json")["scans"]
    last = scans[-1]
    kept = [r for r in roots(last) if "history" in r]
    check(last.get("trigger") == "exit" and len(kept) == STEPS,
          "the exit graph scan names the reference that keeps graphs alive: %d roots in history (%s)"
          % (len(kept), roots(last)[:3]))
    check(scans[0]["iteration"] == 1, "graph scans from the first iteration after the attach")


def case_detach():
    """Ctrl-C mid-run detaches: memlens-cli exits 0, the job runs to its normal end with the
    output of an unattached run, and nothing of memlens is left in it (its own report)."""
    want_rc, want_out = unattached([3, 6], residue=True)
    check("patched: none" in want_out, "the unattached job reports no residue (the check can see one)")
    job = Job("detach", [3, 6], residue=True)
    job.at_gate(3)
    out = os.path.join(TMP, "detach.memlens")
    cli, lines = attach(job.p.pid, out)
    lines.wait_for("memlens: attached to process", "memlens-cli reports the attach")
    socket_dir_made()
    job.open_gate(3)
    job.at_gate(6)
    cli.send_signal(signal.SIGINT)
    crc = cli.wait(timeout=120)
    check(crc == 0, "Ctrl-C: memlens-cli detaches and exits 0")
    nothing_left()
    check(job.p.poll() is None, "the job still runs after the detach")
    job.open_gate(6)
    rc, text = job.finish()
    check(rc == want_rc == 0 and text == want_out,
          "the job ends normally with an unattached run's output, residue report included (exit %d)" % rc)
    s = cli_json("session", out, "--json")
    info = s["process"]["info"]
    check(len(s["iterations"]) == 3 and s["finished"] and info.get("agent_exit") == "detach" and
          info["attached"].get("ended") == "detached; the job went on",
          "the session holds the 3 iterations before the detach and says it detached (%s)" % info.get("attached"))
    scans = cli_json("graphs", out, "--json")["scans"]
    last = scans[-1] if scans else {"graphs": []}
    named = [r for r in roots(last) if r.startswith("__main__.history[")]
    # the newest loss is also the loop's variable `loss`, the name a scan gives it
    check(last.get("trigger") == "detach" and len(roots(last)) == 6 and len(named) >= 5,
          "a last graph scan at the detach: the 6 losses kept so far, in history (%s)" % roots(last))


def case_duration():
    """--duration detaches on its own, leaving the job running."""
    job = Job("duration", [3, 6])
    job.at_gate(3)
    out = os.path.join(TMP, "duration.memlens")
    cli, lines = attach(job.p.pid, out, "--duration", "0.5")
    lines.wait_for("memlens: attached to process", "memlens-cli reports the attach")
    lines.wait_for("memlens: detaching", "--duration 0.5 detaches")
    crc = cli.wait(timeout=120)
    check(crc == 0 and job.p.poll() is None, "memlens-cli exits 0; the job waits at its gate, still running")
    nothing_left()
    job.open_gate(3)
    job.at_gate(6)
    job.open_gate(6)
    rc, _ = job.finish()
    check(rc == 0, "the job ends normally")
    s = cli_json("session", out, "--json")
    check(s["process"]["info"].get("agent_exit") == "detach" and s["iterations"] == [],
          "the session: detached before any iteration")


def fails(what, args, expect, env=None, preexec=None):
    p = subprocess.run([A.cli, "attach"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=180, env=env, preexec_fn=preexec)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 1 and len(lines) == 1 and all(e in lines[0] for e in expect),
          "%s: exit 1 and one line (%d: %r)" % (what, p.returncode, p.stderr.strip()))
    return lines[0]


def case_errors():
    out = os.path.join(TMP, "e.memlens")
    # a pid that is not running: one of ours, reaped
    gone = subprocess.Popen(["true"])
    gone.wait()
    fails("no such process", [str(gone.pid), "-o", out], ["no such process: %d" % gone.pid])
    check(not os.path.exists(out), "no session file is left behind")
    sleeper = subprocess.Popen(["sleep", "300"])
    plain = subprocess.Popen([A.python, "-c", "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)"],
                             stdout=subprocess.PIPE, universal_newlines=True)
    plain_out = Lines(plain.stdout)
    job = Job("errors", [3])
    try:
        fails("not Python", [str(sleeper.pid), "-o", out], ["is not a Python process", "sleep"])
        plain_out.wait_for("ready", "the plain python3 process starts")
        fails("no torch", [str(plain.pid), "-o", out], ["has not imported torch"])
        job.at_gate(3)
        # no debugger: gdb not on PATH
        env = dict(os.environ, PATH=os.path.join(TMP, "empty"))
        os.makedirs(env["PATH"], exist_ok=True)
        fails("no debugger", [str(job.p.pid), "-o", out], ["needs the debugger gdb", "apt-get install gdb"], env=env)
        # attached twice
        first = os.path.join(TMP, "first.memlens")
        cli, lines = attach(job.p.pid, first)
        lines.wait_for("memlens: attached to process", "the first attach")
        fails("attached twice", [str(job.p.pid), "-o", out], ["already has a memlens agent", first])
        check(not os.path.exists(out), "the refused attach leaves no session file")
        cli.send_signal(signal.SIGINT)
        check(cli.wait(timeout=120) == 0, "the first attach detaches")
        # no permission: another user's process
        if os.getuid() == 0:
            nobody = pwd.getpwnam("nobody")

            def as_nobody():
                os.setgid(nobody.pw_gid)
                os.setgroups([])
                os.setuid(nobody.pw_uid)
            fails("no permission", [str(job.p.pid), "-o", os.path.join("/tmp", "memlens-nobody-%d.memlens" % os.getpid())],
                  ["no permission to attach to process %d" % job.p.pid, "belongs to root"], preexec=as_nobody)
        else:
            fails("no permission", ["1", "-o", out], ["no permission to attach to process 1"])
        job.open_gate(3)
        rc, _ = job.finish()
        check(rc == 0, "the job, refused and detached from, ends normally")
    finally:
        for p in (sleeper, plain, job.p):
            if p.poll() is None:
                p.kill()
                p.wait()
    if A.example:
        # a LibTorch program: cannot be attached; the message points to the capture library
        prog = subprocess.Popen([A.example, "--steps", "1000000", "--epochs", "1000"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            maps = "/proc/%d/maps" % prog.pid
            deadline = time.monotonic() + 60
            while prog.poll() is None and time.monotonic() < deadline:  # until the loader mapped libtorch
                with open(maps) as f:
                    if "libtorch" in f.read():
                        break
            fails("LibTorch program", [str(prog.pid), "-o", out], ["is a LibTorch program", "memlens::capture"])
        finally:
            prog.kill()
            prog.wait()
    else:
        print("  (no --example: the LibTorch refusal is not tested)")
    # a job under memlens-cli record already has an agent
    rec_out = os.path.join(TMP, "rec.memlens")
    gate = os.path.join(TMP, "rec-gate")
    rec = subprocess.Popen([A.cli, "record", "--quiet", "-o", rec_out, "--", A.python, JOB, "4", "--gate1", "2", gate],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    rec_lines = Lines(rec.stdout)
    try:
        rec_lines.wait_for("waiting 2", "the recorded job reaches its gate")
        pid = int(subprocess.run(["pgrep", "-f", "-P", str(rec.pid), "attach_target"], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout.split()[0])
        fails("under record", [str(pid), "-o", out], ["already has a memlens agent", os.path.abspath(rec_out)])
    finally:
        open(gate, "w").close()
        check(rec.wait(timeout=120) == 0, "the recorded job ends normally")


def case_cuda():
    """On a CUDA job (the GPU script): the allocator history covers the time after the attach,
    snapshots come at the chosen iteration and at the detach, and the detach turns the history
    off again (the job's own report)."""
    if subprocess.run([A.python, "-c", "import torch, sys; sys.exit(not torch.cuda.is_available())"]).returncode:
        print("no CUDA device: skipped")
        return SKIP
    want_rc, want_out = unattached([3, 6], residue=True, device="cuda")
    job = Job("cuda", [3, 6], residue=True, device="cuda")
    job.at_gate(3)
    out = os.path.join(TMP, "cuda.memlens")
    cli, lines = attach(job.p.pid, out, "--snapshot-iterations", "2")
    lines.wait_for("memlens: attached to process", "memlens-cli reports the attach")
    job.open_gate(3)
    job.at_gate(6)
    cli.send_signal(signal.SIGINT)
    check(cli.wait(timeout=300) == 0, "Ctrl-C detaches, exit 0")
    job.open_gate(6)
    rc, text = job.finish()
    # three checks, each saying what it saw (the first GPU run failed the three together, unexplained)
    check(rc == want_rc == 0, "the job exits %d, as unattached (%d)" % (rc, want_rc))
    check("torch history on: no" in text, "its allocator history off again: %s" %
          ([l for l in text.splitlines() if "torch history" in l] or "no 'torch history' line"))
    a_lines, b_lines = text.splitlines(), want_out.splitlines()
    diff = next(((i, x, y) for i, (x, y) in enumerate(zip(a_lines, b_lines)) if x != y), None)
    check(text == want_out, "its output equals an unattached run's (%d and %d lines; first difference %s)" % (
        len(a_lines), len(b_lines), diff if diff else "none: one output is longer"))
    s = cli_json("session", out, "--json")
    attached_us = s["process"]["info"]["attached"]["time_us"]
    snaps = [(x["iteration"], x["trigger"]) for x in s["snapshots"]]
    check(snaps == [(2, "iteration"), (3, "detach")], "snapshots at iteration 2 and at the detach (%s)" % snaps)
    pick = os.path.join(TMP, "detach.pickle")
    subprocess.run([A.cli, "export", out, "--snapshot", "last", "-o", pick], check=True)
    import pickle
    with open(pick, "rb") as f:
        snap = pickle.load(f)
    trace = [e for t in snap.get("device_traces", []) for e in t]
    times = [e["time_us"] for e in trace if "time_us" in e]
    last_end = s["iterations"][-1]["end_us"]
    check(trace and times and min(times) >= attached_us and max(times) >= last_end - 1000000 and
          any(e["action"] == "alloc" for e in trace),
          "the history covers the time after the attach: %d entries from %d us after it" %
          (len(trace), (min(times) - attached_us) if times else -1))


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--example", help="memlens-capture-example (a LibTorch program)")
    A = ap.parse_args()
    if subprocess.run([A.python, "-c", "import torch"], capture_output=True).returncode != 0:
        print("%s has no torch: skipped" % A.python)
        return SKIP
    if not shutil.which("gdb"):
        print("gdb is not installed (packaging/install-deps.sh installs it): skipped")
        return SKIP

    def set_tmp(tmp):
        global TMP
        TMP = tmp
    return run_case(A.case, CASES[A.case], "memlens-attach-", set_tmp)


if __name__ == "__main__":
    sys.exit(main())
