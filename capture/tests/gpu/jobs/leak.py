"""GPU job with the classic leak: `losses.append(loss)` after backward keeps every step's loss
and its autograd graph (the skeleton: saved activations were freed by backward) alive, and
`preds.append(model(x))` during evaluation without no_grad keeps full graphs with their
activations. 40 train iterations, an evaluation every 10."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 2048), nn.GELU(), nn.Linear(2048, 10)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-4)
losses, preds = [], []
for step in range(40):
    x = torch.randn(128, 512, device="cuda")
    y = torch.randint(0, 10, (128,), device="cuda")
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    losses.append(loss)  # the leak: keeps the graph
    if step % 10 == 9:
        model.eval()
        preds.append(model(torch.randn(256, 512, device="cuda")))  # no no_grad: a full graph stays
        model.train()
print("mean loss", torch.stack(losses).mean().item(), "reserved", torch.cuda.memory_reserved() >> 20, "MB")
