"""Training steps (3 by default, of about 3 ms each, like a small real step), then a
segmentation fault or SIGKILL. Usage: crash.py segv|kill [STEPS]"""
import os
import signal
import sys
import time

import torch

model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
for _ in range(steps):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
    time.sleep(0.003)
print("steps done", flush=True)
os.kill(os.getpid(), signal.SIGSEGV if sys.argv[1] == "segv" else signal.SIGKILL)
