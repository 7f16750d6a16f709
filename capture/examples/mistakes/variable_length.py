"""Mistake `variable-length`: inputs of a different shape every iteration. The longest batch
sets the peak, and on CUDA each new maximum asks the caching allocator for bigger blocks, so
reserved memory ratchets up.

    L = random length in [16, 256]         # the mistake: x is BATCH x L x DIM, L changes
    L = round up to a bucket of 64         # the fix (--fixed): at most 4 shapes, all padded
                                           # (here: padded to 256, one shape)

Analytic input bytes per iteration: BATCH * L * DIM * 4 (defaults batch 16, dim 64: 4,096 bytes
per unit of length; 1,048,576 bytes at the longest, L = 256). The fixed twin's input is
16 * 256 * 64 * 4 = 1,048,576 bytes every iteration. The lengths come from a fixed seed
(random.Random(1)), so every run sees the same ones.

    python3 variable_length.py [--fixed] [--device cuda] [--iterations 20]
"""
import argparse
import random

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--iterations", type=int, default=20)
args = ap.parse_args()

torch.manual_seed(0)
rng = random.Random(1)
dev = torch.device(args.device)
B, DIM, LMAX = 16, 64, 256
model = nn.Sequential(nn.Linear(DIM, 256), nn.GELU(), nn.Linear(256, DIM)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(args.iterations):
    length = rng.randint(16, LMAX)
    if args.fixed:
        length = LMAX                      # pad every batch to the longest (or to its bucket)
    x = torch.randn(B, length, DIM, device=dev)
    loss = (model(x) - x).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)   # gradients freed before the next forward

print("variable_length%s: %d iterations" % (" (fixed)" if args.fixed else "", args.iterations))
