"""What the Python agent costs a training loop when it only marks iterations.

Runs the same CPU training job (a DataLoader, an MLP, Adam; CUDA is not needed) plainly and
under `memlens-cli record` (graph scans off, so that only iteration marking remains), alternating,
and compares the mean step time measured inside the job.

    /usr/bin/python3 capture/bench/overhead.py --cli build/app/memlens-cli [--steps 600]
        [--repeats 5] [--width 512] [--batch 64] [--layers 2] [--agent-config JSON]

Step time: the fastest block of 20 steps in a run, the best of the runs (other load on the
machine only slows blocks down). --tiny uses a model so small that the step is nearly all
framework overhead, which shows the agent's own cost per iteration in microseconds.
Prints one line per run and a summary: step time plain and recorded, the difference in
microseconds per step and in percent.

--layers N: N hidden Linear+ReLU blocks (2 by default; more modules per step show the cost of
the doctor's Module.__call__ wrapper, doctor.py). --agent-config: the recorded runs' agent
settings (default {"graph_scans": false}; add "doctor": false to leave the doctor out).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def job(args):
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    torch.set_num_threads(1)
    n = args.steps + args.warmup
    x = torch.randn(n * args.batch, args.width)
    y = torch.randint(0, 10, (n * args.batch,))
    loader = DataLoader(TensorDataset(x, y), batch_size=args.batch)
    blocks = [nn.Linear(args.width, args.width)]
    for _ in range(args.layers - 1):
        blocks += [nn.ReLU(), nn.Linear(args.width, args.width)]
    model = nn.Sequential(*blocks, nn.ReLU(), nn.Linear(args.width, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    # Times blocks of 20 steps and keeps the fastest: other processes on the machine only ever
    # make a block slower, so the fastest block is the cost of the loop itself. Both wall time
    # and the training thread's CPU time (which other load does not inflate).
    wall, cpu, t0 = [], [], None
    for i, (xb, yb) in enumerate(loader):
        if i >= args.warmup and (i - args.warmup) % 20 == 0:
            t = (time.perf_counter(), time.thread_time())
            if t0 is not None:
                wall.append((t[0] - t0[0]) / 20)
                cpu.append((t[1] - t0[1]) / 20)
            t0 = t
        opt.zero_grad()
        loss_fn(model(xb), yb).backward()
        opt.step()
    print(json.dumps({"step_us": min(wall) * 1e6, "cpu_us": min(cpu) * 1e6}), flush=True)


def run(args, recorded, out):
    cmd = [sys.executable, os.path.abspath(__file__), "job", "--steps", str(args.steps), "--warmup",
           str(args.warmup), "--width", str(args.width), "--batch", str(args.batch), "--layers", str(args.layers)]
    if recorded:
        cmd = [args.cli, "record", "-o", out, "--quiet", "--agent-config", args.agent_config, "--"] + cmd
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("run failed: %s" % p.stderr[-500:])
    return json.loads(p.stdout.strip().splitlines()[-1])  # the fastest blocks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", nargs="?", default="bench", choices=["bench", "job"])
    ap.add_argument("--cli")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2, help="hidden Linear layers")
    ap.add_argument("--agent-config", default='{"graph_scans": false}')
    ap.add_argument("--tiny", action="store_true", help="width 8, batch 8")
    args = ap.parse_args()
    if args.tiny:
        args.width, args.batch = 8, 8
    if args.mode == "job":
        return job(args)
    if not args.cli:
        sys.exit("--cli memlens-cli is needed")
    import tempfile

    plain, recorded = [], []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.memlens")
        for r in range(args.repeats):
            for rec in ((False, True) if r % 2 == 0 else (True, False)):
                t = run(args, rec, out)
                (recorded if rec else plain).append(t)
                print("run %d %-8s %8.1f us/step wall, %8.1f us/step CPU" %
                      (r + 1, "recorded" if rec else "plain", t["step_us"], t["cpu_us"]), flush=True)
        s = json.loads(subprocess.run([args.cli, "session", out, "--json"], capture_output=True, text=True).stdout)
        n_it = len(s["iterations"])
    print("width %d, batch %d, %d layers, %d steps per run, agent config %s (recorded session: %d iterations)" %
          (args.width, args.batch, args.layers, args.steps, args.agent_config, n_it))
    for key, name in (("step_us", "wall"), ("cpu_us", "training thread CPU")):
        p, q = min(x[key] for x in plain), min(x[key] for x in recorded)
        print("%s: plain %.1f us, recorded %.1f us per step: %+.1f us (%+.2f %%)" % (name, p, q, q - p, (q - p) / p * 100))


if __name__ == "__main__":
    main()
