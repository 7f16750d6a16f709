"""GPU job that runs out of memory on purpose: caps the caching allocator at CAP_MB (default
2048) with set_per_process_memory_fraction, trains a few steps, then keeps allocating 64 MB
tensors in a loop until the allocator refuses. The error is not caught: the job dies of it
(exit 1), as a real one would."""
import os

import torch

cap = int(os.environ.get("CAP_MB", "2048")) << 20
total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total), 0)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for _ in range(5):
    opt.zero_grad()
    model(torch.randn(256, 1024, device="cuda")).square().mean().backward()
    opt.step()
hog = []
print("allocating up to the cap of", cap >> 20, "MB", flush=True)
while True:
    hog.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
