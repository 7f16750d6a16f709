"""A CPU training job started without memlens, for memlens-cli attach (tests/capture/test_attach.py).

Trains STEPS steps over a DataLoader and keeps every loss with its graph (history.append(loss):
the mistake the exit graph scan must name). It waits at gates the test opens by creating files:
after step GATE1 (--gate1 FILE) and after step GATE2 (--gate2 FILE); while it waits it runs
Python code (short sleeps), so an injected pending call runs. It prints "waiting N" at a gate,
"step N loss L" per step (deterministic: seeded), and a final line. With --residue it prints
what memlens could have left behind: patched torch functions, threads, sys.path entries, modules.
--device cuda trains on the GPU (tests/capture/test_attach.py --case cuda, the GPU script).
Usage: attach_target.py STEPS [--gate1 N FILE] [--gate2 N FILE] [--residue] [--device D]"""
import argparse
import os
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def watched():
    import torch.optim.optimizer as oo
    import torch.utils.data.dataloader as dl

    return {
        "Optimizer.__init__": oo.Optimizer.__init__,
        "SGD.step": torch.optim.SGD.step,
        "_BaseDataLoaderIter.__next__": dl._BaseDataLoaderIter.__next__,
        "autograd.backward": torch.autograd.backward,
        "Module.train": nn.Module.train,
        "Module.__call__": nn.Module.__call__,
        "no_grad.__enter__": torch.no_grad.__enter__,
        "inference_mode.__enter__": torch.inference_mode.__enter__,
    }


def gate(step, at, path):
    if at is not None and step == at:
        print("waiting %d" % step, flush=True)
        while not os.path.exists(path):
            time.sleep(0.005)


history = []  # the mistake: each loss keeps its graph alive (until the interpreter exits)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps", type=int)
    ap.add_argument("--gate1", nargs=2)
    ap.add_argument("--gate2", nargs=2)
    ap.add_argument("--residue", action="store_true")
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    path_before = list(sys.path)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(a.steps * 8, 32), torch.randn(a.steps * 8, 1))
    loader = DataLoader(data, batch_size=8, shuffle=False)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1)).to(a.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    before = watched()  # after the optimizer: torch 1.13 wraps its class's step() at the first one
    g1 = (int(a.gate1[0]), a.gate1[1]) if a.gate1 else (None, None)
    g2 = (int(a.gate2[0]), a.gate2[1]) if a.gate2 else (None, None)
    for step, (x, y) in enumerate(loader, 1):
        x, y = x.to(a.device), y.to(a.device)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        history.append(loss)
        print("step %d loss %.6f" % (step, loss.item()), flush=True)
        gate(step, *g1)
        gate(step, *g2)
    print("done: %d losses kept, mean %.6f" % (len(history), sum(float(l) for l in history) / len(history)), flush=True)
    if a.residue:
        after = watched()
        changed = sorted(k for k in before if after[k] is not before[k])
        print("patched: %s" % (", ".join(changed) or "none"))
        names = sorted(t.name for t in threading.enumerate() if t.name.startswith("memlens"))
        print("memlens threads: %s" % (", ".join(names) or "none"))
        print("sys.path changed: %s" % ("yes" if sys.path != path_before else "no"))
        print("sys.path mentions memlens: %s" % ("yes" if any("memlens" in p for p in sys.path) else "no"))
        print("torch history on: %s" % ("yes" if getattr(torch._C, "_cuda_isHistoryEnabled", lambda: False)() else "no"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
