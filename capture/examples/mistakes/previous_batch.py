"""Mistake `previous-batch`: the previous iteration's batch is still referenced while the next
iteration runs, so the peak holds two batches.

    for x, y in loader:
        ...
        prev_batch = (x, y)            # the mistake: kept "for debugging" across iterations
    for x, y in loader:
        ...                            # the fix (--fixed): nothing keeps the batch after its
                                       # step (or `del prev_batch` before the next forward)

When the next batch's forward starts, `x` of the previous batch is still alive through
`prev_batch[0]`.

Analytic cost (defaults: batch 128, 1024 features): the model's input of the previous iteration,
128 * 1024 * 4 = 524,288 bytes (512 KiB), alive at the start of every forward from iteration 2.

    python3 previous_batch.py [--fixed] [--device cuda] [--batches 12]
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--batches", type=int, default=12)
ap.add_argument("--batch", type=int, default=128)
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device(args.device)
B, D, C = args.batch, 1024, 10
model = nn.Sequential(nn.Linear(D, 256), nn.ReLU(), nn.Linear(256, C)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
loader = DataLoader(TensorDataset(torch.randn(args.batches * B, D), torch.randint(0, C, (args.batches * B,))),
                    batch_size=B)
prev_batch = None

for x, y in loader:
    x, y = x.to(dev), y.to(dev)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)   # gradients freed before the next forward
    if not args.fixed:
        prev_batch = (x, y)

print("previous_batch%s: last loss %.4f" % (" (fixed)" if args.fixed else "", loss.item()))
