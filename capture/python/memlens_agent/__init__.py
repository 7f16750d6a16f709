"""memlens_agent: what a job recorded by `memlens-cli record` can call, all optional.

    import memlens_agent
    for batch in my_own_loop():          # a loop memlens cannot see (no optimizer, no DataLoader)
        ...
        memlens_agent.mark_step()         # ends the iteration (phase inferred, or phase="eval")
    memlens_agent.marker("lr_drop", lr=1e-4)
    memlens_agent.snapshot()              # an allocator snapshot now (trigger "request")

Outside a recording every function does nothing. None of them raises.
"""

from . import _agent as _a

__all__ = ["enabled", "iteration", "mark_step", "marker", "snapshot", "graph_scan", "scan_graphs"]


def enabled():
    """True when this process is being recorded."""
    a = _a._agent
    return a is not None and a.alive() and not a.ch.dead


def iteration():
    """The 1-based index of the iteration in progress (0 when not recorded)."""
    a = _a._agent
    return a.index + 1 if a is not None else 0


def mark_step(phase=None):
    """Ends the current iteration. From the first call on, only mark_step() marks iterations;
    those an optimizer step or a DataLoader batch ended before it stay (record with
    `memlens-cli record --manual-steps` to have only marked ones from the start).
    phase: "train", "eval", ...; by default inferred (backward/step: train; no_grad or
    model.eval(): eval; else other)."""
    a = _a._agent
    if a is None:
        return
    try:
        a.mark_step(phase)
    except Exception as e:
        a.error("mark_step", e)


def marker(name, **data):
    """A named point in time with optional JSON-able data, in the current iteration."""
    a = _a._agent
    if a is None or not a.alive():
        return
    try:
        a.ch.send({"t": "marker", "time_us": _a._now_us(), "iteration": a.index + 1, "name": str(name),
                   "data": data})
    except Exception as e:
        a.error("marker", e)


def snapshot(trigger="request"):
    """Takes an allocator snapshot now; False without CUDA history or when dropped."""
    a = _a._agent
    if a is None or not a.alive():
        return False
    try:
        return a.take_snapshot(trigger, a.index + 1 if a.open is not None else a.index)
    except Exception as e:
        a.error("snapshot", e)
        return False


def graph_scan(scan, partial=False, phase=None, iteration=None):
    """Stores the result of a retained-graph scan (any JSON-able value)."""
    a = _a._agent
    if a is None or not a.alive():
        return
    try:
        a.ch.send({"t": "graph_scan", "iteration": a.index if iteration is None else int(iteration),
                   "phase": phase or "", "time_us": _a._now_us(), "partial": bool(partial), "scan": scan})
    except Exception as e:
        a.error("graph_scan", e)


def scan_graphs():
    """Scans for retained autograd graphs now and records the scan (trigger "request"); returns
    the scan (a JSON-able dict, see README-graphs.md), or None outside a recording."""
    a = _a._agent
    if a is None or not a.alive():
        return None
    try:
        return a.graphs.scan(a.index + 1, "", "request")
    except Exception as e:
        a.error("scan_graphs", e)
        return None
