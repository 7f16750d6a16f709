"""About 100 retained graphs of about 50 nodes each; reports the scan time.

argv: OUT [EXTRA_OBJECTS]: EXTRA_OBJECTS small user objects reachable from a global make the
heap realistic (the referrer walk visits them)."""
import sys
import time

import torch
import torch.nn as nn

import _job

torch.manual_seed(0)
layers = []
for _ in range(10):
    layers += [nn.Linear(64, 64), nn.ReLU()]
model = nn.Sequential(*layers)
extra = int(sys.argv[2]) if len(sys.argv) > 2 else 0
catalog = [{"id": i, "tags": ["a", "b"], "meta": {"n": i}} for i in range(extra)]

kept = []
for i in range(100):
    kept.append(model(torch.randn(8, 64)))

t0 = time.perf_counter()
_job.scan()
_job.note("wall_s", time.perf_counter() - t0)
t0 = time.perf_counter()
_job.scan("second")
_job.note("second_wall_s", time.perf_counter() - t0)
_job.write()
