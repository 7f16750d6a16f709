"""Loops for the doctor's iteration rule (one iteration per evaluation call of the model while no
DataLoader, optimizer step or mark_step was seen). Usage: doctor_loops.py MODE

  warmup_step    a warm-up call in training mode, then 3 optimizer steps: 3 train iterations
  warmup_nograd  a warm-up call under no_grad, then 3 steps: 3 train iterations
  eval_then_train  4 evaluation calls, then a DataLoader epoch of 5 batches: 4 eval + 5 train
  nested_cache   5 evaluation calls, each output kept as cache[i] = [out]: 5 eval iterations,
                 a `kept` group __main__.cache[*][*] of one 16 x 4 float32 tensor per call
"""
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

mode = sys.argv[1]
torch.manual_seed(0)
model = nn.Linear(8, 4)

if mode in ("warmup_step", "warmup_nograd"):
    if mode == "warmup_step":
        model(torch.randn(1, 8))
    else:
        with torch.no_grad():
            model(torch.randn(1, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
elif mode == "eval_then_train":
    model.eval()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(4, 8))
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for (x,) in DataLoader(TensorDataset(torch.randn(20, 8)), batch_size=4):
        model(x).sum().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
elif mode == "nested_cache":
    model.eval()
    cache = {}
    single = (torch.randn(3),)          # one tensor in one container: never a group
    with torch.no_grad():
        for i in range(5):
            cache[i] = [model(torch.randn(16, 8))]
else:
    sys.exit("unknown mode " + mode)
