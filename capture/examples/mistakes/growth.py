"""Mistake `growth`: a cache that grows by one device tensor per step and is never trimmed (no
autograd graph involved, so graph scans do not see it).

    cache[step] = feats.detach()           # the mistake: one BATCH x HIDDEN tensor per step, forever
    cache[step] = feats.detach()           # the fix (--fixed): a bounded cache, older entries
    cache.pop(step - KEEP, None)           # dropped (KEEP = 2)

Analytic cost per iteration (defaults: batch 64, hidden 2048): 64 * 2048 * 4 = 524,288 bytes
(512 KiB) more under `__main__.cache[*]`; the fixed twin holds at most 2 entries (1 MiB).

    python3 growth.py [--fixed] [--device cuda] [--iterations 15]
"""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--iterations", type=int, default=15)
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device(args.device)
B, D, H, KEEP = 64, 128, 2048, 2
encoder = nn.Sequential(nn.Linear(D, H), nn.ReLU()).to(dev)
head = nn.Linear(H, 1).to(dev)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder, self.head = encoder, head

    def forward(self, x):
        feats = self.encoder(x)
        return self.head(feats), feats


model = Model()
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
cache = {}

for step in range(args.iterations):
    x = torch.randn(B, D, device=dev)
    out, feats = model(x)
    loss = out.pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)   # gradients freed before the next forward
    cache[step] = feats.detach()
    if args.fixed:
        cache.pop(step - KEEP, None)

print("growth%s: %d cached entries" % (" (fixed)" if args.fixed else "", len(cache)))
