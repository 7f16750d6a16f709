"""A CPU training job for the window tests, run under `memlens-cli record` with the real agent:
STEPS train steps, SECONDS apart (printing "step N"); every 3rd step also keeps a validation
output computed without no_grad in `kept_outputs`, so that graph scans find retained graphs.
Usage: kept_outputs.py STEPS SECONDS"""
import sys
import time

import torch
import torch.nn as nn

steps, pause = int(sys.argv[1]), float(sys.argv[2])
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
kept_outputs = []
for step in range(1, steps + 1):
    loss = model(torch.randn(16, 64)).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 3 == 0:
        kept_outputs.append(model(torch.randn(16, 64)))
    print("step", step, flush=True)
    time.sleep(pause)  # the job's pace (the stimulus: a job the window follows while it runs)
