"""Mistake `kept-on-device`: predictions gathered on the training device, one tensor per batch.

    preds.append(logits)                          # the mistake: BATCH x CLASSES stays on the device
    preds.append(logits.detach().cpu().numpy())   # the fix (--fixed): off the device (on a CPU
                                                  # job: out of torch, a NumPy array), or reduce
                                                  # first (logits.argmax(1).tolist())

An inference script: no DataLoader, no optimizer, a loop of model(x) under no_grad. Each call of
the model is one iteration. The logits have no graph (no_grad), so graph scans do not see them;
the doctor's `kept` marker does: the list `preds` grows by one tensor per iteration.

Analytic cost per iteration (defaults: batch 256, 1000 classes): 256 * 1000 * 4 = 1,024,000
bytes (1000 KiB) more under `__main__.preds[*]`.

    python3 kept_on_device.py [--fixed] [--device cuda] [--iterations 15]
"""
import argparse

import torch
from torch import nn

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--iterations", type=int, default=15)
ap.add_argument("--batch", type=int, default=256)
ap.add_argument("--classes", type=int, default=1000)
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device(args.device)
B, D, C = args.batch, 64, args.classes
model = nn.Sequential(nn.Linear(D, 128), nn.ReLU(), nn.Linear(128, C)).to(dev).eval()
data = torch.randn(args.iterations, B, D)
preds = []

with torch.no_grad():
    for i in range(args.iterations):
        x = data[i].to(dev)
        logits = model(x)
        preds.append(logits.detach().cpu().numpy() if args.fixed else logits)

print("kept_on_device%s: %d batches predicted" % (" (fixed)" if args.fixed else "", len(preds)))
