"""A job for `memlens-cli record` driven by DataLoaders: 3 training batches, then a validation
loop without no_grad that keeps every output (one more full graph per evaluation batch), then
a job without any iteration boundary after it (only the exit scan sees `late`)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train = DataLoader(TensorDataset(torch.randn(48, 64)), batch_size=16)
val = DataLoader(TensorDataset(torch.randn(64, 64)), batch_size=16)


def train_epoch():
    model.train()
    for (x,) in train:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def validate():
    model.eval()
    kept_outputs = []
    for (x,) in val:
        kept_outputs.append(model(x))       # the bug: no torch.no_grad()
    return kept_outputs


train_epoch()
results = validate()
late = model(torch.randn(2, 64))
