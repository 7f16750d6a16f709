"""Shared helpers of the command-line tests (not a test itself): running memlens-cli, comparing JSON, reporting."""

import os
import re
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

SKIP = 77


class Result:
    def __init__(self, argv, rc, out, err, timed_out=False):
        self.argv, self.rc, self.out, self.err, self.timed_out = argv, rc, out, err, timed_out

    @property
    def err_text(self):
        return self.err.decode("utf-8", "replace")

    @property
    def out_text(self):
        return self.out.decode("utf-8", "replace")

    def cmd(self):
        """The command line, shortened for messages: memlens-cli ARGS with file names as basenames."""
        return "memlens-cli " + " ".join(os.path.basename(a) if os.sep in a else a for a in self.argv[1:])

    def describe(self):
        if self.timed_out:
            return "timed out"
        if self.rc is None:
            return self.err_text
        if self.rc < 0:
            return f"killed by signal {-self.rc}"
        s = f"exit {self.rc}"
        if self.err:
            s += f", stderr {short(self.err_text)!r}"
        return s


def run(argv, timeout=120, preexec_fn=None):
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
                           preexec_fn=preexec_fn)
        return Result(argv, p.returncode, p.stdout, p.stderr)
    except subprocess.TimeoutExpired as e:
        return Result(argv, None, e.stdout or b"", e.stderr or b"", timed_out=True)
    except OSError as e:  # the program could not be started (e.g. being relinked right now)
        return Result(argv, None, b"", f"could not run {argv[0]}: {e}".encode(), timed_out=False)


def short(s, n=300):
    s = str(s)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def json_diff(exp, got, path="", limit=8):
    """Differences between two parsed JSON values, as 'path: expected X, got Y' strings. Key sets must
    match exactly; bool and int are different types."""
    out = []

    def walk(e, g, p):
        if len(out) >= limit:
            return
        if isinstance(e, dict):
            if not isinstance(g, dict):
                out.append(f"{p or '.'}: expected an object, got {short(json_repr(g), 120)}")
                return
            missing = [k for k in e if k not in g]
            extra = [k for k in g if k not in e]
            if missing:
                out.append(f"{p or '.'}: missing keys {missing}")
            if extra:
                out.append(f"{p or '.'}: unexpected keys {extra}")
            for k in e:
                if k in g:
                    walk(e[k], g[k], f"{p}.{k}" if p else k)
        elif isinstance(e, list):
            if not isinstance(g, list):
                out.append(f"{p or '.'}: expected a list, got {short(json_repr(g), 120)}")
                return
            if len(e) != len(g):
                out.append(f"{p or '.'}: expected {len(e)} items, got {len(g)}")
            for i, (x, y) in enumerate(zip(e, g)):
                walk(x, y, f"{p}[{i}]")
        else:
            if type(e) is not type(g) or e != g:
                out.append(f"{p or '.'}: expected {json_repr(e)}, got {json_repr(g)}")

    walk(exp, got, path)
    return out


def json_repr(v):
    import json
    try:
        return json.dumps(v)
    except Exception:
        return repr(v)


class Report:
    """Collects FAIL / WARN lines from many threads; prints them grouped at the end."""

    def __init__(self):
        self.lock = threading.Lock()
        self.fails = []
        self.warns = []
        self.checks = 0

    def check(self, ok, msg):
        with self.lock:
            self.checks += 1
            if not ok:
                self.fails.append(msg)
        return ok

    def fail(self, msg):
        self.check(False, msg)

    def warn(self, msg):
        with self.lock:
            self.warns.append(msg)

    def finish(self, name):
        for w in self.warns:
            print("WARN: " + w)
        for f in self.fails:
            print("FAIL: " + f)
        print(f"{name}: {self.checks} checks, {len(self.fails)} failed, {len(self.warns)} warnings")
        sys.stdout.flush()
        return 1 if self.fails else 0


def one_line_error(r, path, report, what, expect_rc=1, place=None):
    """Checks the error contract: exit `expect_rc`, exactly one stderr line naming the file, nothing on
    stdout. `place` is an optional (description, predicate on the message) pair."""
    label = f"{os.path.basename(path)}: {r.cmd()} ({what})"
    if r.timed_out:
        report.fail(f"{label}: timed out")
        return False
    if r.rc is not None and r.rc < 0:
        report.fail(f"{label}: crashed, killed by signal {-r.rc}; stderr {short(r.err_text)!r}")
        return False
    ok = True
    if isinstance(expect_rc, int):
        expect_rc = (expect_rc,)
    ok &= report.check(r.rc in expect_rc, f"{label}: expected exit {' or '.join(map(str, expect_rc))}, got {r.describe()}")
    lines = r.err_text.splitlines()
    ok &= report.check(len(lines) == 1,
                       f"{label}: expected exactly one stderr line, got {len(lines)}: {short(r.err_text)!r}")
    msg = r.err_text.strip()
    ok &= report.check(os.path.basename(path) in msg, f"{label}: stderr does not name the file: {short(msg)!r}")
    ok &= report.check(r.out == b"", f"{label}: expected nothing on stdout, got {short(r.out_text)!r}")
    if place is not None and msg:
        desc, pred = place
        bare = msg.replace(path, "").replace(os.path.basename(path), "")
        ok &= report.check(pred(bare), f"{label}: stderr does not give {desc}: {short(msg)!r}")
    return ok


def mentions_number(n):
    rx = re.compile(r"(?<![0-9])" + str(n) + r"(?![0-9])")
    return lambda msg: bool(rx.search(msg))


def write_newer_fixture(source_dir, path, python=None, truncated=False):
    """Writes the torch-2.14-shaped fixture of tests/tools/make_newer_snapshot.py to path."""
    argv = [python or sys.executable, os.path.join(source_dir, "tests", "tools", "make_newer_snapshot.py"), "-o", path]
    subprocess.run(argv + (["--truncated"] if truncated else []), check=True, stdout=subprocess.DEVNULL)
    return path
