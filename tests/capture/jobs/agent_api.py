"""The optional memlens_agent API: markers, graph scans, snapshot() without CUDA, enabled()."""
import sys

import memlens_agent
import torch

assert memlens_agent.enabled(), "the agent should be running"
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(3):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    if i == 1:
        memlens_agent.marker("lr_drop", lr=0.01, step=i)
memlens_agent.graph_scan({"graphs": [{"root": "losses[0]", "bytes": 123}]}, partial=True, phase="train")
ok = memlens_agent.snapshot()  # no CUDA here: nothing to take
print("iteration", memlens_agent.iteration(), "snapshot", ok, flush=True)
sys.exit(0 if ok is False and memlens_agent.iteration() == 4 else 9)
