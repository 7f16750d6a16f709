"""Shared by the graph-scan test jobs: finds the agent package, writes results for the test."""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "..", "capture", "python"))

from memlens_agent import graphs  # noqa: E402

_results = {}


def scan(name="scan", **kwargs):
    """Runs a scan, keeps it under name and returns it (the caller must drop it before the next
    scan, or the next scan walks it)."""
    s = graphs.scan(**kwargs)
    _results[name] = json.dumps(s)   # as text: the next scan does not walk the results
    return s


def note(name, value):
    _results[name] = json.dumps(value)


def write():
    out = sys.argv[1] if len(sys.argv) > 1 else None
    text = "{%s}" % ", ".join("%s: %s" % (json.dumps(k), v) for k, v in _results.items())
    if out:
        with open(out, "w") as f:
            f.write(text)
    else:
        print(text)
