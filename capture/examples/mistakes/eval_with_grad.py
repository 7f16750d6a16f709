"""Mistake `eval-with-grad`: a validation loop without torch.no_grad() records autograd graphs.

    model.eval()
    for x, y in val_loader:
        out = model(x)                 # the mistake: grad mode is on, `out` has a graph
    with torch.no_grad():              # the fix (--fixed), or torch.inference_mode()
        for x, y in val_loader: out = model(x)

model.eval() changes dropout and batch norm, not grad mode: each validation forward still saves
what backward would need, and that memory stays until `out` is dropped (here: until the next
batch's forward has run, so the peak holds two).

Analytic cost per validation batch (defaults: batch 64, in 512, hidden 1024, 10 classes): the
first Linear saves its input x (64 x 512 float32 = 131,072 bytes), ReLU saves its output, which
the second Linear saves too (one storage, 64 x 1024 x 4 = 262,144 bytes); the weights are
parameters and do not count: 393,216 bytes (384 KiB) saved per forward.

Iterations: 12 training batches (DataLoader, SGD), then 12 validation batches.

    python3 eval_with_grad.py [--fixed] [--device cuda]
"""
import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cpu")
ap.add_argument("--batches", type=int, default=12)
ap.add_argument("--batch", type=int, default=64)
args = ap.parse_args()

torch.manual_seed(0)
dev = torch.device(args.device)
B, D, H, C = args.batch, 512, 1024, 10
model = nn.Sequential(nn.Linear(D, H), nn.ReLU(), nn.Linear(H, C)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
train = DataLoader(TensorDataset(torch.randn(args.batches * B, D), torch.randint(0, C, (args.batches * B,))),
                   batch_size=B)
val = DataLoader(TensorDataset(torch.randn(args.batches * B, D), torch.randint(0, C, (args.batches * B,))),
                 batch_size=B)


def train_epoch():
    model.train()
    for x, y in train:
        x, y = x.to(dev), y.to(dev)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)   # gradients freed before the next forward


def validate():
    model.eval()
    correct = 0
    for x, y in val:
        x, y = x.to(dev), y.to(dev)
        out = model(x)
        correct += int((out.argmax(1) == y).sum())
    return correct


train_epoch()
if args.fixed:
    with torch.no_grad():
        correct = validate()
else:
    correct = validate()
print("eval_with_grad%s: accuracy %.3f" % (" (fixed)" if args.fixed else "", correct / (args.batches * B)))
