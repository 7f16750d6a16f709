"""Hook detection unavailable (as on an unknown layout): nothing may be unpacked, not even the
slots that have no hooks; roots, paths and node counts stay right."""
import torch
import torch.utils.checkpoint as cp

import _job
from memlens_agent import graphs

graphs._probe.mode = "unavailable"      # what a failed calibration leaves
graphs._probe.reason = "forced by the test"
calls = {"forward": 0}
lin = torch.nn.Linear(8, 8)


def block(inp):
    calls["forward"] += 1
    return torch.tanh(lin(inp))


ckpt_out = cp.checkpoint(block, torch.randn(4, 8, requires_grad=True), use_reentrant=False)
plain_out = torch.tanh(lin(torch.randn(4, 8)))
_job.scan()
_job.note("forward_calls", calls["forward"])
_job.write()
