"""Mistake `fragmentation` (CUDA only): an out-of-memory error while plenty of memory is free,
because no free block is big enough.

The caching allocator serves requests between 1 MiB and 10 MiB from 20 MiB segments, split in
place. A job that allocates many 4 MiB tensors (five per segment) and then frees every other one
leaves each segment with two 4 MiB holes that cannot merge (their neighbours are alive) and a
segment that is not empty cannot be returned to the driver. A 12 MiB request (over 10 MiB: a
segment of its own) then finds no hole big enough and no room for a new segment.

    keep = blocks[0::2]; del blocks           # the mistake: frees every other block (interleaved)
    keep = blocks[:n // 2]; del blocks        # the fix (--fixed): frees the blocks allocated last,
                                              # whole segments, which the allocator can release

With the allocator capped at --limit-mib (default 1024) through
torch.cuda.set_per_process_memory_fraction: 51 segments of 20 MiB (1,020 MiB reserved), 255
blocks of 4 MiB; after the frees 128 blocks are alive, 127 free (508 MiB free in total, every
hole 4 MiB: each freed block lies between live ones or at a segment's end); the 12 MiB request
fails. Analytic: free 532,676,608 bytes (127 x 4 MiB) in the segments at the out-of-memory
error, largest free block 4,194,304 bytes, requested 12,582,912 bytes. The twin frees blocks
127..254: segments 26..50 become entirely free, and the 12 MiB request is served from one. The error is caught: the script prints it and exits 0 (the
agent takes its snapshot at the error).

On a machine without CUDA it says so and exits 0.

    python3 fragmentation.py [--fixed] [--device cuda] [--limit-mib 1024]
"""
import argparse
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--fixed", action="store_true", help="run the correct twin")
ap.add_argument("--device", default="cuda")
ap.add_argument("--limit-mib", type=int, default=1024)
args = ap.parse_args()

if not args.device.startswith("cuda") or not torch.cuda.is_available():
    print("fragmentation: needs CUDA (the caching allocator's segments); nothing to show on %s" % args.device)
    sys.exit(0)

MiB = 1 << 20
dev = torch.device(args.device)
if dev.index is None:  # "cuda": the current device (set_per_process_memory_fraction wants an index)
    dev = torch.device("cuda", torch.cuda.current_device())
total = torch.cuda.get_device_properties(dev).total_memory
torch.cuda.set_per_process_memory_fraction(args.limit_mib * MiB / total, dev)
segments = args.limit_mib // 20                  # 51 for 1024 MiB: 4 MiB of headroom left
blocks = [torch.empty(4 * MiB // 4, dtype=torch.float32, device=dev) for _ in range(segments * 5)]
n = len(blocks)
keep = blocks[:n // 2] if args.fixed else blocks[0::2]
del blocks
try:
    big = torch.empty(12 * MiB // 4, dtype=torch.float32, device=dev)
    print("fragmentation%s: the 12 MiB request succeeded (%d blocks kept)" % (" (fixed)" if args.fixed else "",
                                                                           len(keep)))
except RuntimeError as e:   # torch.cuda.OutOfMemoryError from 2.0
    print("fragmentation: out of memory with %.0f MiB free in the allocator's segments: %s" %
          ((torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)) / MiB, str(e).splitlines()[0]))
sys.exit(0)
