"""Training and evaluation loops of several shapes, for the iteration rules of the agent.
Nothing here knows about memlens except mode "manual". Usage: loops.py MODE"""
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

mode = sys.argv[1]
torch.manual_seed(0)


def loader(batches, workers=0):
    x = torch.randn(batches * 8, 16)
    y = torch.randint(0, 3, (batches * 8,))
    return DataLoader(TensorDataset(x, y), batch_size=8, num_workers=workers)


model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()


def train_step(xb, yb, step=True):
    loss = loss_fn(model(xb), yb)
    loss.backward()
    if step:
        opt.step()
        opt.zero_grad()
    return loss


if mode == "accumulate":  # 12 micro-batches, a step every 4: 3 iterations
    for i, (xb, yb) in enumerate(loader(12)):
        train_step(xb, yb, step=(i + 1) % 4 == 0)
elif mode == "gan":  # two optimizers step on every batch: 6 iterations
    opt2 = torch.optim.SGD(model.parameters(), lr=1e-3)
    for xb, yb in loader(6):
        train_step(xb, yb)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt2.step()
        opt2.zero_grad()
elif mode == "stepdriven":  # no DataLoader: 5 iterations
    x, y = torch.randn(8, 16), torch.randint(0, 3, (8,))
    for _ in range(5):
        train_step(x, y)
elif mode == "zip":  # a second loader read inside each iteration: 6 iterations
    for (xb, yb), (xb2, _) in zip(loader(6), loader(6)):
        train_step(xb + xb2, yb)
elif mode == "nograd_inside":  # model.eval() and no_grad inside the loop: 5 eval iterations
    model.eval()
    for xb, yb in loader(5):
        with torch.no_grad():
            model(xb)
elif mode == "workers":  # worker processes (fork): 8 train, 4 eval
    model.train()
    for xb, yb in loader(8, workers=2):
        train_step(xb, yb)
    model.eval()
    with torch.no_grad():
        for xb, yb in loader(4, workers=2):
            model(xb)
elif mode == "break":  # leaves the training loop after 5 of 12 batches, then 3 eval batches
    for i, (xb, yb) in enumerate(loader(12)):
        train_step(xb, yb)
        if i == 4:
            break
    model.eval()
    with torch.no_grad():
        for xb, yb in loader(3):
            model(xb)
elif mode == "manual":  # a custom loop (no optimizer, no DataLoader) with mark_step: 4 train, 2 eval
    import memlens_agent

    x, y = torch.randn(8, 16), torch.randint(0, 3, (8,))
    for _ in range(4):
        loss_fn(model(x), y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 1e-3 * p.grad
                p.grad = None
        memlens_agent.mark_step()
    for _ in range(2):
        with torch.no_grad():
            model(x)
        memlens_agent.mark_step("eval")
elif mode == "manual_flag":  # recorded with --manual-steps: the optimizer's steps do not count
    import memlens_agent

    for i, (xb, yb) in enumerate(loader(6)):
        train_step(xb, yb)
        if i % 2 == 1:
            memlens_agent.mark_step()  # one iteration per two batches: 3
else:
    sys.exit("unknown mode " + mode)
