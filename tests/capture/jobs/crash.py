"""Three training steps, then a segmentation fault. Usage: crash.py segv|kill"""
import os
import signal
import sys

import torch

model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
for _ in range(steps):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
print("steps done", flush=True)
os.kill(os.getpid(), signal.SIGSEGV if sys.argv[1] == "segv" else signal.SIGKILL)
