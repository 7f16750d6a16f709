"""A data-parallel training job on the CPU (gloo), started the way torch.multiprocessing.spawn
starts one: the script's process only waits, its WORLD workers (fresh interpreters) train STEPS
steps each; every worker prints "rank R pid P". Usage: ddp_spawn.py WORLD STEPS PORT"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, world, steps, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    print("rank %d pid %d" % (rank, os.getpid()), flush=True)
    model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        model(torch.randn(8, 16)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    world, steps, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    print("launcher pid %d" % os.getpid(), flush=True)
    mp.spawn(worker, args=(world, steps, port), nprocs=world)
