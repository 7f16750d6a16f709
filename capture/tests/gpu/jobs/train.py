"""GPU job: a small transformer-ish model trained on CUDA with a DataLoader, plus an evaluation
loop under no_grad: per epoch 30 train and 5 eval iterations, 2 epochs. Plain user code."""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
dev = "cuda"
seq, dim, vocab = 64, 256, 1000
x = torch.randint(0, vocab, (30 * 16, seq))
y = torch.randint(0, vocab, (30 * 16, seq))
train = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(x[:80], y[:80]), batch_size=16)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, 4, 4 * dim, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.out = nn.Linear(dim, vocab)

    def forward(self, t):
        return self.out(self.enc(self.emb(t)))


model = Model().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(2):
    model.train()
    for xb, yb in train:
        xb, yb = xb.to(dev), yb.to(dev)
        opt.zero_grad()
        loss = loss_fn(model(xb).flatten(0, 1), yb.flatten())
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        for xb, yb in val:
            model(xb.to(dev))
    print("epoch", epoch, "loss", loss.item(), flush=True)
