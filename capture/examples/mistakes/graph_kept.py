"""Mistake `graph-kept`: a logged value kept as a tensor keeps its autograd graph alive.

    metrics.append(err)            # the mistake: err has a grad_fn; backward never runs on it
    metrics.append(err.item())     # the fix (--fixed): a Python float, no graph

A training loop logs the mean absolute error of the model's output next to the loss it trains
on. `err = (out - y).abs().mean()` is never backpropagated, so its graph keeps what it saved:
AbsBackward0 keeps `out - y` (BATCH x OUT float32). Each iteration keeps one more such graph.

Analytic cost per iteration (defaults: batch 64, out 1024): 64 * 1024 * 4 = 262,144 bytes
(256 KiB) for the saved difference, plus 4 bytes for `err` itself: 262,148 bytes per iteration,
kept under `__main__.metrics[*]` (graph scans: one more root per iteration).

    python3 graph_kept.py [--fixed] [--device cuda] [--iterations 20]
"""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--iterations", type=int, default=20)
ap.add_argument("--batch", type=int, default=64)
ap.add_argument("--width", type=int, default=1024)
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device(args.device)
B, D, OUT = args.batch, 128, args.width
model = nn.Sequential(nn.Linear(D, 256), nn.ReLU(), nn.Linear(256, OUT)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
metrics = []

for step in range(args.iterations):
    x = torch.randn(B, D, device=dev)
    y = torch.randn(B, OUT, device=dev)
    out = model(x)
    loss = nn.functional.mse_loss(out, y)
    err = (out - y).abs().mean()          # logged only
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)   # gradients freed before the next forward
    metrics.append(err.item() if args.fixed else err)

print("graph_kept%s: %d iterations, last error %.4f" % (" (fixed)" if args.fixed else "", args.iterations,
                                                       float(metrics[-1])))
