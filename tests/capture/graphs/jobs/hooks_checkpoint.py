"""saved_tensors_hooks, save_on_cpu and non-reentrant checkpointing: no unpack hook may run."""
import torch
import torch.nn as nn
import torch.utils.checkpoint as cp

import _job

torch.manual_seed(0)
calls = {"pack": 0, "unpack": 0, "forward": 0}


def pack(t):
    calls["pack"] += 1
    return t


def unpack(t):
    calls["unpack"] += 1
    return t


x = torch.randn(8, 16, requires_grad=True)
w = torch.randn(8, 16, requires_grad=True)
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    hooked_out = (x * w).sin()          # MulBackward0 saves self, other; SinBackward0 saves self

block = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def run_block(inp):
    calls["forward"] += 1
    return block(inp)


ckpt_in = torch.randn(8, 16, requires_grad=True)
ckpt_out = cp.checkpoint(run_block, ckpt_in, use_reentrant=False)

with torch.autograd.graph.save_on_cpu(pin_memory=False):
    cpu_out = (x * 3).exp()

plain_out = (x * w).sin()               # the same ops without hooks

registered_out = (x * w).cos()          # hooks given to one saved slot afterwards
registered_out.grad_fn._raw_saved_self.register_hooks(pack, unpack)   # runs pack once

_job.note("calls_before", dict(calls))
_job.scan()
_job.note("calls_after", dict(calls))
# the hooks still work afterwards: backward unpacks through them
hooked_out.sum().backward()
ckpt_out.sum().backward()
registered_out.sum().backward()
_job.note("calls_after_backward", dict(calls))
_job.write()
