"""What the capture test scripts share (not a test itself): a failed check, and running one case
in its own temporary directory with the verdict printed the same way (test_capture.py,
test_mistakes.py)."""

import tempfile
import time


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)
    print("  ok:", what)


def run_case(name, fn, prefix, set_tmp):
    """Runs case NAME (FN) with a fresh temporary directory handed to SET_TMP; returns the exit
    status: 0 passed (or what FN returns, e.g. 77 skipped), 1 failed."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        set_tmp(tmp)
        t0 = time.monotonic()
        try:
            rc = fn()
        except Failure as e:
            print("FAILED:", e)
            return 1
        print("%s: passed in %.1f s" % (name, time.monotonic() - t0))
        return rc or 0
