"""A slow training loop: STEPS steps of SECONDS each; prints "step N" after each. On SIGTERM it
exits with status 42. Usage: slow.py STEPS SECONDS"""
import signal
import sys
import time

import torch

signal.signal(signal.SIGTERM, lambda *a: sys.exit(42))
steps, pause = int(sys.argv[1]), float(sys.argv[2])
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(steps):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
    print("step", i + 1, flush=True)
    time.sleep(pause)
