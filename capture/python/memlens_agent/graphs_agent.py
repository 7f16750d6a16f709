"""When the agent scans for retained graphs, and how a scan reaches the recorder.

The agent (_agent.py) calls ``at_boundary`` after each iteration it emits and ``at_exit`` before
it says goodbye; the recorder stores each scan as a ``graph_scan`` message (Protocol.h) in the
session's graph_scans table, where ``memlens-cli graphs FILE --json`` reads them back.

Configuration (MEMLENS_AGENT_CONFIG, all optional):
  graph_scans            true (default) / false
  graph_scan_first       scan at every boundary of the first N iterations (default 10)
  graph_scan_every       then at every K-th iteration (default 10; 0: no more)
  graph_scan_max_seconds time limit of one scan (default 2.0)
  graph_scan_max_share   the every-K-th scans are skipped while scans have taken more than this
                         share of the job's time (default 0.1); the first N, requested and exit
                         scans never are
Requests: a ``snapshot_request`` or ``graph_scan_request`` from the recorder (SIGUSR1 to
``memlens-cli record``), or memlens_agent.scan_graphs() in the job.
"""

import time

from . import graphs


class GraphScans(object):
    def __init__(self, agent, config):
        self.agent = agent
        self.enabled = bool(config.get("graph_scans", True))
        self.first = int(config.get("graph_scan_first", 10))
        self.every = int(config.get("graph_scan_every", 10))
        self.max_seconds = float(config.get("graph_scan_max_seconds", 2.0))
        self.max_share = float(config.get("graph_scan_max_share", 0.1))
        self.history = graphs.GraphHistory()
        self.started = time.monotonic()
        self.spent = 0.0
        self.scans = 0
        self.skipped = 0
        self.requested = False
        self.busy = False

    def wanted(self, index):
        if index <= self.first:
            return True
        return self.every > 0 and index % self.every == 0

    def within_share(self):
        elapsed = time.monotonic() - self.started
        return self.spent <= self.max_share * max(elapsed, 1e-3)

    def at_boundary(self, index, phase):
        """After iteration `index` ended (its phase: train, eval, other)."""
        if not self.enabled or self.busy:
            return
        channel = getattr(self.agent.ch, "graph_scan_requested", False)
        if self.requested or channel:
            self.requested = False
            try:
                self.agent.ch.graph_scan_requested = False
            except Exception:
                pass
            self.scan(index, phase, "request")
        elif self.wanted(index):
            if index <= self.first or self.within_share():
                self.scan(index, phase, "iteration")
            else:
                self.skipped += 1

    def at_exit(self, index, phase):
        if self.enabled and not self.busy:
            self.scan(index, phase, "exit")

    def scan(self, index, phase, trigger):
        """Runs one scan and sends it; returns the scan (or None when it could not be sent)."""
        if self.busy:
            return None
        self.busy = True
        t0 = time.monotonic()
        try:
            from . import _agent

            time_us = _agent._now_us()
            doctor = getattr(self.agent, "doctor", None)
            kept = doctor is not None and doctor.enabled
            device = doctor.training_device() if kept else None
            s = graphs.scan(max_seconds=self.max_seconds, iteration=index, phase=phase or "",
                            time_us=time_us, exclude_ids=(id(self), id(self.agent), id(doctor)),
                            kept=kept, kept_device=device)
            s["trigger"] = trigger
            groups = s.pop("kept", None)
            if groups is not None:
                # the doctor's evidence for tensors gathered on the training device (doctor.py)
                self.agent.ch.send_deferred({"t": "marker", "time_us": time_us, "iteration": index, "name": "kept",
                                    "data": {"groups": groups, "device": device or "", "trigger": trigger,
                                             "phase": phase or "", "partial": bool(s.get("partial"))}})
            if self.skipped:
                s["skipped_before"] = self.skipped   # boundary scans left out by graph_scan_max_share
                self.skipped = 0
            self.history.annotate(s, index)
            self.agent.ch.send({"t": "graph_scan", "iteration": index, "phase": phase or "",
                                "time_us": time_us, "partial": bool(s.get("partial")), "scan": s})
            self.scans += 1
            return s
        finally:
            self.spent += time.monotonic() - t0
            self.busy = False
