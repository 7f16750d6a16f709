"""Losses kept after backward (skeleton graphs) and one kept with retain_graph=True (full)."""
import torch
import torch.nn as nn

import _job

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
train_losses = []
for it in range(3):
    x = torch.randn(16, 64)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    train_losses.append(loss)           # the FAQ mistake: keeps the graph skeleton
del loss, x

x = torch.randn(16, 64)
retained = model(x).pow(2).mean()
retained.backward(retain_graph=True)    # backward ran, but the saved tensors stay
opt.zero_grad()
_job.scan()
_job.write()
