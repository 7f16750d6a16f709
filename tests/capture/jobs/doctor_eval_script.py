"""An evaluation script for the doctor's forward watch: no DataLoader, no optimizer, no
mark_step. Each call of `model` is one iteration; the loss module called after it (another
top-level module) is not; the call that raises inside a submodule (call 3) is one too and later
calls are still seen. Usage: doctor_eval_script.py CALLS"""
import sys

import torch
from torch import nn

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 8
torch.manual_seed(0)


class MaybeRaise(nn.Module):
    armed = False

    def forward(self, x):
        if MaybeRaise.armed:
            raise RuntimeError("planted failure inside forward")
        return x


model = nn.Sequential(nn.Linear(32, 16), MaybeRaise(), nn.Linear(16, 4)).eval()
loss_fn = nn.MSELoss()
done = 0
for i in range(calls):
    x = torch.randn(8, 32)
    MaybeRaise.armed = i == 2
    with torch.no_grad():
        try:
            out = model(x)
        except RuntimeError:
            continue
        loss_fn(out, torch.zeros_like(out))
    done += 1
print("calls", calls, "completed", done, flush=True)
