"""Real retained-graph scans for the graph view tests (tests/views/tst_graph*.cpp), made at test
time with Debian's torch (CPU) and the agent's scanner: a small residual network trained for
three iterations, then evaluated for two WITHOUT no_grad, its outputs kept in a global list (the
leak: one more full graph per eval iteration), twice. A scan after every iteration.

    graph_fixture.py OUT.json    writes {"iterations": [phase, ...], "scans": [scan, ...]}
Exit code 77: no torch here.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "capture", "python"))

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("no torch in %s" % sys.executable)
    sys.exit(77)

from memlens_agent import graphs  # noqa: E402

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))


class Net(nn.Module):
    def __init__(self, d=32, blocks=6):
        super().__init__()
        self.embed = nn.Linear(16, d)
        self.blocks = nn.Sequential(*[Block(d) for _ in range(blocks)])
        self.head = nn.Linear(d, 4)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
history = graphs.GraphHistory()
scans = []        # as text: a scan must not walk the previous ones
phases = []
kept = []         # the bug: eval outputs kept with their graphs


def scan(phase):
    s = graphs.scan(iteration=len(phases), phase=phase, time_us=len(phases) * 1000, max_seconds=20)
    history.annotate(s, len(phases))
    scans.append(json.dumps(s))


for epoch in range(2):
    for step in range(3):
        phases.append("train")
        loss = model(torch.randn(8, 16)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        scan("train")
    for step in range(2):
        phases.append("eval")
        kept.append(model(torch.randn(8, 16)))
        scan("eval")

text = '{"iterations": %s, "scans": [%s]}' % (json.dumps(phases), ", ".join(scans))
with open(sys.argv[1], "w") as f:
    f.write(text)
