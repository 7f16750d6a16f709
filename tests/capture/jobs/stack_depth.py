"""--stack-depth: prints the configuration the agent received (one JSON line: {"config": ...,
"stack_depth": ...}). With a PICKLE argument, the CPU build's missing allocator is stood in for
by a real snapshot: torch.cuda.memory._snapshot returns PICKLE's contents, and the agent takes
one snapshot through its usual path (take_snapshot -> sender thread: trim, pickle, send) and one
at exit. Nothing else of the agent is changed."""
import json
import pickle
import sys

import memlens_agent
import torch
from memlens_agent import _agent

agent = _agent._agent
assert agent is not None and memlens_agent.enabled(), "the agent should be running"
print(json.dumps({"config": agent.cfg, "stack_depth": agent.stack_depth}), flush=True)

if len(sys.argv) > 1:
    path = sys.argv[1]

    def _snapshot(*args, **kwargs):  # a fresh object per call, as torch's
        with open(path, "rb") as f:
            return pickle.load(f)

    torch.cuda.memory._snapshot = _snapshot
    agent.cuda_recording = True  # what on_cuda_init() sets once CUDA history recording is on
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(2):
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    sys.exit(0 if memlens_agent.snapshot() else 9)
