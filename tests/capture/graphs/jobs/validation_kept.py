"""Validation without no_grad: each batch's output kept in a list (full graphs)."""
import torch
import torch.nn as nn

import _job

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def train_step():
    x = torch.randn(16, 64)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def validate(batches):
    kept_outputs = []
    for _ in range(batches):
        x = torch.randn(16, 64)
        kept_outputs.append(model(x))   # the bug: no torch.no_grad(), outputs kept
    _job.scan()
    return len(kept_outputs)


train_step()
validate(4)
_job.write()
