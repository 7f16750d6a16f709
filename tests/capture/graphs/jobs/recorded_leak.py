"""A job for `memlens-cli record`: the agent scans it at iteration boundaries, on request (the
job's memlens_agent.scan_graphs() at step 12, the recorder's SIGUSR1 at step 15) and at exit.

Training steps keep their losses after backward (skeleton graphs); every 5th step also keeps
one validation output computed without no_grad (full graphs)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train_losses = []
kept_outputs = []

for step in range(1, 26):
    x = torch.randn(16, 64)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()                      # an iteration boundary: the agent may scan here
    train_losses.append(loss)
    if step % 5 == 0:
        kept_outputs.append(model(torch.randn(16, 64)))
    if step == 15:
        # SIGUSR1 to the recorder (our parent): it asks for a snapshot, and the agent scans at
        # the next boundary (iteration 16, which the schedule alone would skip)
        import os
        import signal
        import time

        from memlens_agent import _agent

        os.kill(os.getppid(), signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while not _agent._agent.ch.graph_scan_requested and time.monotonic() < deadline:
            time.sleep(0.01)
    if step == 12:
        import memlens_agent

        requested = memlens_agent.scan_graphs()   # a scan now, trigger "request"
        assert requested is not None and requested["trigger"] == "request", requested
        del requested
del x, loss
