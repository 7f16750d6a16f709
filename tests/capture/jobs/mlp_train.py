"""A small MLP trained on CPU: per epoch a DataLoader of 12 training batches (one optimizer step
each) and an evaluation loop of 5 batches under no_grad. Unchanged user code: nothing here knows
about memlens. Usage: mlp_train.py [EPOCHS] [--exit N] [--markers]"""
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

epochs = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 2
torch.manual_seed(0)
x = torch.randn(12 * 16, 32)
y = torch.randint(0, 4, (12 * 16,))
train = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(x[:80], y[:80]), batch_size=16)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()

for epoch in range(epochs):
    model.train()
    for xb, yb in train:
        opt.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in val:
            correct += (model(xb).argmax(1) == yb).sum().item()
    print("epoch", epoch, "loss", round(loss.item(), 4), "val acc", correct / 80, flush=True)

if "--exit" in sys.argv:
    sys.exit(int(sys.argv[sys.argv.index("--exit") + 1]))
