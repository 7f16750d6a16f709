"""A training loop of STEPS steps that starts a Python helper process (with torch, as a job's
tools may) at step 2 and waits for it: the helper gets the agent too, and must not take the
session. Prints "main pid P" and the helper's "helper pid P". Usage: with_helper_process.py STEPS"""
import os
import subprocess
import sys

import torch

steps = int(sys.argv[1])
print("main pid %d" % os.getpid(), flush=True)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, steps + 1):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
    opt.zero_grad()
    if step == 2:
        subprocess.run([sys.executable, "-c", "import os, torch; print('helper pid %d' % os.getpid(), flush=True)"],
                       check=True)
