"""Mistake `grads-kept`: gradients stay allocated between steps, so they occupy memory through
the next forward (where activations peak).

    opt.zero_grad(set_to_none=False)   # the mistake: fills .grad with zeros, keeps the memory
    opt.zero_grad(set_to_none=True)    # the fix (--fixed): .grad is None until backward
                                       # (the default from torch 2.0; torch 1.13's is False)

Analytic cost (defaults: 1024 -> 1024 -> 1024 -> 10 MLP): every parameter's gradient,
4 * (1024*1024 + 1024 + 1024*1024 + 1024 + 1024*10 + 10) = 8,437,800 bytes (about 8 MiB),
allocated at the start of every forward from iteration 2 on (iteration 1 runs before the first
backward).

    python3 grads_kept.py [--fixed] [--device cuda] [--iterations 12]
"""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--iterations", type=int, default=12)
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device(args.device)
W = 1024
model = nn.Sequential(nn.Linear(W, W), nn.ReLU(), nn.Linear(W, W), nn.ReLU(), nn.Linear(W, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)

for step in range(args.iterations):
    x = torch.randn(32, W, device=dev)
    y = torch.randint(0, 10, (32,), device=dev)
    opt.zero_grad(set_to_none=args.fixed)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()

print("grads_kept%s: last loss %.4f" % (" (fixed)" if args.fixed else "", loss.item()))
