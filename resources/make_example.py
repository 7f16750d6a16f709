#!/usr/bin/env python3
"""Generate resources/example.pickle: a deterministic, realistic PyTorch CUDA memory snapshot.

The snapshot is not recorded on a GPU. It is the result of SIMULATING a small training job
(train.py / model.py below, made up) against a model of PyTorch's native CUDA caching allocator
(see shared/reference/caching-allocator.md), with memory history recording on
(enabled="all", context="all", stacks="python") and global annotations on.

Layout: the dict written by torch.cuda.memory._dump_snapshot() in torch 2.10/2.11
(`segments`, `device_traces`, `allocator_settings`, `external_annotations`; trace entries carry
`compile_context` and `user_metadata`; frame line numbers of torch/nn/modules/module.py are those
of 2.11), pickled with pickle.dump(..., protocol=4), the protocol every real snapshot uses.

The scenario (the made-up train.py and model.py are quoted further down), on a 2 GiB device of
which 448 MiB is taken by the CUDA context and other non-PyTorch memory:

  * a tiny GPT (1 block, d=512, vocab 8192, T=256, batch 16, fp32, tied embeddings) trained with
    fused AdamW; parameter grads are set to None by zero_grad() and reallocated by backward();
    each thread's first cuBLAS call allocates an 8.1 MiB workspace from the caching allocator;
  * a bug at train.py:81, `losses.append(loss + 0.01 * aux_entropy(h))` after `loss.backward()`:
    the graph of the logged aux term never sees backward, so every iteration keeps its saved
    activations (3 x 8 MiB plus a small scalar) alive through the `losses` list;
  * an evaluation every 10 iterations (torch.no_grad(), batch 32, 256 MiB logits) ending in
    torch.cuda.empty_cache(); the first two need the allocator's OOM retry (free the cached
    segments, cudaMalloc again);
  * the third, after iteration 29, dies: the leak has pinned blocks in most segments, no cached
    block fits the 256 MiB log_softmax, and cudaMalloc fails. The trace ends with that `oom`
    entry; the snapshot is the state right then (dumped in a `finally:` while the traceback
    still holds every local). The backward pass runs on the autograd device thread, so its
    entries have no Python frames, as in real snapshots.

Everything is deterministic: no clock (timestamps count up from a fixed epoch value), timing
jitter from a fixed-seed LCG, addresses from a first-fit model of the address space.

  python3 resources/make_example.py            # (re)write resources/example.pickle
  python3 resources/make_example.py -o FILE    # write elsewhere
  python3 resources/make_example.py --check    # regenerate in memory, compare; exit 1 if different
"""
from __future__ import annotations

import argparse
import io
import pickle
import sys
from pathlib import Path

# --------------------------------------------------------------------------------------------
# Allocator constants (caching-allocator.md section 1.1), default configuration.
K_MIN_BLOCK = 512
K_SMALL_SIZE = 1 << 20            # rounded size <= 1 MiB -> small pool
K_SMALL_BUFFER = 2 << 20          # small-pool segment size
K_LARGE_BUFFER = 20 << 20         # segment size for 1-10 MiB requests
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20

MIB = 1 << 20
GIB = 1 << 30

DEVICE_TOTAL = 2 * GIB            # cudaMemGetInfo total
CUDA_CONTEXT = 448 * MIB          # memory not owned by PyTorch (context, kernels)
VA_BASE = 0x7F3A_5A00_0000        # first address cudaMalloc hands out (2 MiB aligned)
TIME_BASE_US = 1_730_000_000_000_000
STREAM = 0


def round_size(size: int) -> int:
    """round_size() with roundup_power2_divisions unset: 512-byte multiples, minimum 512."""
    if size < K_MIN_BLOCK:
        return K_MIN_BLOCK
    return (size + K_MIN_BLOCK - 1) // K_MIN_BLOCK * K_MIN_BLOCK


def allocation_size(rounded: int) -> int:
    """get_allocation_size(): size of the cudaMalloc for a rounded request."""
    if rounded <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if rounded < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return (rounded + K_ROUND_LARGE - 1) // K_ROUND_LARGE * K_ROUND_LARGE


def S(text: str) -> str:
    """Canonical string object, so that pickle's memo (keyed by identity) sees equal strings
    as one object whatever the interpreter interns; keeps the output byte-stable."""
    return sys.intern(text)


# --------------------------------------------------------------------------------------------
# Recording: trace entries, annotations, clock, Python call stack.

class OutOfMemory(Exception):
    pass


class Recorder:
    def __init__(self) -> None:
        self.now = TIME_BASE_US
        self.trace: list[dict] = []
        self.annotations: list[dict] = []
        self.pystack: list[dict] = []      # outermost first
        self.on_autograd_thread = False   # backward runs on the device thread: no Python frames
        self._frames: dict[tuple, dict] = {}
        self._rng = 0x2545F491            # LCG state for timing jitter only

    # -- time ----------------------------------------------------------------------------
    def jitter(self, n: int) -> int:
        self._rng = (self._rng * 1103515245 + 12345) & 0x7FFFFFFF
        return (self._rng >> 8) % n

    def advance(self, us: int) -> None:
        self.now += us

    # -- frames --------------------------------------------------------------------------
    def frame(self, name: str, filename: str, line: int) -> dict:
        """One dict per distinct frame, shared by every stack that contains it (as torch's
        symbolizer does)."""
        key = (name, filename, line)
        f = self._frames.get(key)
        if f is None:
            f = {S("name"): S(name), S("filename"): S(filename), S("line"): line}
            self._frames[key] = f
        return f

    def capture(self, leaf: tuple = ()) -> list:
        """A new frame list (one CapturedTraceback per call), innermost frame first."""
        if self.on_autograd_thread:
            return []
        return [self.frame(*f) for f in leaf] + list(reversed(self.pystack))

    # -- entries -------------------------------------------------------------------------
    def record(self, action: str, addr: int, size: int, frames: list) -> None:
        self.now += 1 + self.jitter(4)
        self.trace.append({
            S("action"): S(action),
            S("addr"): addr,
            S("size"): size,
            S("stream"): STREAM,
            S("frames"): frames,
            S("time_us"): self.now,
            S("compile_context"): S("N/A"),
            S("user_metadata"): S(""),
        })

    def record_oom(self, device_free: int, size: int, frames: list) -> None:
        self.now += 1
        self.trace.append({
            S("action"): S("oom"),
            S("device_free"): device_free,
            S("size"): size,
            S("stream"): STREAM,
            S("frames"): frames,
            S("time_us"): self.now,
            S("compile_context"): S("N/A"),
            S("user_metadata"): S(""),
        })

    def annotate(self, stage: str, name: str) -> None:
        self.now += 1
        self.annotations.append({
            S("device"): 0,
            S("time_us"): self.now,
            S("name"): S(name),
            S("stage"): S(stage),
        })


class Call:
    """`with Call(rec, name, file, line):` a Python function is running (pushes a frame)."""

    def __init__(self, rec: Recorder, name: str, filename: str, line: int):
        self.rec, self.f = rec, rec.frame(name, filename, line)

    def __enter__(self):
        self.rec.pystack.append(self.f)

    def __exit__(self, *exc):
        self.rec.pystack.pop()
        return False


class At:
    """`with At(rec, line):` the innermost running function is at `line`."""

    def __init__(self, rec: Recorder, line: int):
        self.rec, self.line = rec, line

    def __enter__(self):
        top = self.rec.pystack[-1]
        self.saved = top
        self.rec.pystack[-1] = self.rec.frame(top["name"], top["filename"], self.line)

    def __exit__(self, *exc):
        self.rec.pystack[-1] = self.saved
        return False


class Annotated:
    """torch.profiler.record_function(name) with global_record_annotations: START/END
    external annotations. No END when an exception escapes (the process died of the OOM)."""

    def __init__(self, rec: Recorder, name: str):
        self.rec, self.name = rec, name

    def __enter__(self):
        self.rec.annotate("START", self.name)

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.rec.annotate("END", self.name)
        return False


# --------------------------------------------------------------------------------------------
# The caching allocator model.

class Block:
    __slots__ = ("ptr", "size", "req", "small", "allocated", "prev", "next", "seg", "frames")

    def __init__(self, ptr: int, size: int, small: bool, seg: "Segment"):
        self.ptr, self.size, self.req, self.small = ptr, size, 0, small
        self.allocated = False
        self.prev: Block | None = None
        self.next: Block | None = None
        self.seg = seg
        self.frames: list = []


class Segment:
    __slots__ = ("addr", "size", "small", "frames", "head")

    def __init__(self, addr: int, size: int, small: bool, frames: list):
        self.addr, self.size, self.small, self.frames = addr, size, small, frames
        self.head: Block | None = None


class Device:
    """cudaMalloc/cudaFree: capacity check and a first-fit virtual address space."""

    def __init__(self) -> None:
        self.reserved = 0
        self.free_ranges = [(VA_BASE, 1 << 40)]    # (start, length), sorted

    def device_free(self) -> int:
        return DEVICE_TOTAL - CUDA_CONTEXT - self.reserved

    def malloc(self, size: int) -> int | None:
        if size > self.device_free():
            return None
        for i, (start, length) in enumerate(self.free_ranges):
            if length >= size:
                if length == size:
                    del self.free_ranges[i]
                else:
                    self.free_ranges[i] = (start + size, length - size)
                self.reserved += size
                return start
        return None

    def free(self, addr: int, size: int) -> None:
        self.reserved -= size
        ranges = self.free_ranges + [(addr, size)]
        ranges.sort()
        merged: list[tuple[int, int]] = []
        for start, length in ranges:
            if merged and merged[-1][0] + merged[-1][1] == start:
                merged[-1] = (merged[-1][0], merged[-1][1] + length)
            else:
                merged.append((start, length))
        self.free_ranges = merged


class CachingAllocator:
    """Native backend, one device, one stream, default settings (no max_split_size, no
    expandable segments, no garbage collection threshold, no memory fraction)."""

    def __init__(self, rec: Recorder) -> None:
        self.rec = rec
        self.device = Device()
        self.small_free: list[Block] = []
        self.large_free: list[Block] = []
        self.segments: dict[int, Segment] = {}
        self.allocated_bytes = 0
        self.peak_allocated = 0
        self.peak_reserved = 0

    def _pool(self, small: bool) -> list[Block]:
        return self.small_free if small else self.large_free

    # §3.3: best fit, key (stream, size, ptr)
    def _get_free_block(self, small: bool, size: int) -> Block | None:
        pool = self._pool(small)
        best = None
        for b in pool:
            if b.size >= size and (best is None or (b.size, b.ptr) < (best.size, best.ptr)):
                best = b
        if best is not None:
            pool.remove(best)
        return best

    # §3.6
    def _alloc_block(self, small: bool, alloc_size: int, frames: list) -> Block | None:
        addr = self.device.malloc(alloc_size)
        if addr is None:
            return None
        seg = Segment(addr, alloc_size, small, frames)
        block = Block(addr, alloc_size, small, seg)
        seg.head = block
        self.segments[addr] = seg
        self.peak_reserved = max(self.peak_reserved, self.device.reserved)
        self.rec.record("segment_alloc", addr, alloc_size, frames)
        return block

    # §6.1: release every completely free segment, large pool first, in set order
    def _release_cached_blocks(self, frames: list) -> None:
        for pool in (self.large_free, self.small_free):
            for b in sorted(pool, key=lambda b: (b.size, b.ptr)):
                if b.prev is None and b.next is None:
                    pool.remove(b)
                    del self.segments[b.ptr]
                    self.device.free(b.ptr, b.size)
                    self.rec.record("segment_free", b.ptr, b.size, frames)

    def malloc(self, req: int, frames: list) -> Block:
        size = round_size(req)
        small = size <= K_SMALL_SIZE
        block = self._get_free_block(small, size)
        if block is None:
            alloc_size = allocation_size(size)
            block = self._alloc_block(small, alloc_size, frames)
            # release_available_cached_blocks() is a no-op: max_split_size is unlimited.
            if block is None:
                self._release_cached_blocks(frames)
                block = self._alloc_block(small, alloc_size, frames)
            if block is None:
                self.rec.record_oom(self.device.device_free(), size, frames)
                raise OutOfMemory(size)
        # §3.9 should_split, §3.10 front split: the new object takes the front
        rem = block.size - size
        if (small and rem >= K_MIN_BLOCK) or (not small and rem > K_SMALL_SIZE):
            front = Block(block.ptr, size, small, block.seg)
            front.prev, front.next = block.prev, block
            if block.prev is not None:
                block.prev.next = front
            else:
                block.seg.head = front
            block.prev = front
            block.ptr += size
            block.size -= size
            self._pool(small).append(block)      # remainder keeps its stale req
            block = front
        block.req = req
        block.allocated = True
        block.frames = frames
        self.allocated_bytes += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated_bytes)
        self.rec.record("alloc", block.ptr, req, frames)
        return block

    # §4.1/4.2: no stream uses, so free_completed follows free_requested at once
    def free(self, block: Block, frames: list) -> None:
        assert block.allocated
        block.allocated = False
        self.allocated_bytes -= block.size
        self.rec.record("free_requested", block.ptr, block.req, frames)
        self.rec.record("free_completed", block.ptr, block.req, frames)
        block.frames = []
        pool = self._pool(block.small)
        prev = block.prev
        if prev is not None and not prev.allocated:
            pool.remove(prev)
            block.ptr = prev.ptr
            block.size += prev.size
            block.prev = prev.prev
            if prev.prev is not None:
                prev.prev.next = block
            else:
                block.seg.head = block
        nxt = block.next
        if nxt is not None and not nxt.allocated:
            pool.remove(nxt)
            block.size += nxt.size
            block.next = nxt.next
            if nxt.next is not None:
                nxt.next.prev = block
        pool.append(block)

    def empty_cache(self, frames: list) -> None:
        self._release_cached_blocks(frames)

    # §7.3
    def snapshot_segments(self) -> list[dict]:
        out = []
        for addr in sorted(self.segments):
            seg = self.segments[addr]
            blocks = []
            allocated = requested = 0
            b = seg.head
            while b is not None:
                state = "active_allocated" if b.allocated else "inactive"
                if b.allocated:
                    allocated += b.size
                    requested += b.req
                blocks.append({
                    S("address"): b.ptr,
                    S("size"): b.size,
                    S("requested_size"): b.req,
                    S("state"): S(state),
                    S("frames"): b.frames,
                })
                b = b.next
            out.append({
                S("device"): 0,
                S("address"): seg.addr,
                S("total_size"): seg.size,
                S("allocated_size"): allocated,
                S("active_size"): allocated,
                S("requested_size"): requested,
                S("stream"): STREAM,
                S("segment_type"): S("small" if seg.small else "large"),
                S("segment_pool_id"): (0, 0),
                S("is_expandable"): False,
                S("frames"): seg.frames,
                S("blocks"): blocks,
            })
        return out


# --------------------------------------------------------------------------------------------
# The made-up job. Line numbers in the recorded stacks refer to these two files.
#
# model.py (excerpt)
#   13     def forward(self, x):                                   # Attention
#   14         B, T, C = x.shape
#   15         q, k, v = self.qkv(x).split(C, dim=2)
#   16         q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in (q, k, v))
#   17         y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
#   18         y = y.transpose(1, 2).contiguous().view(B, T, C)
#   19         return self.proj(y)
#   28     def forward(self, x):                                   # MLP
#   29         return self.fc2(F.gelu(self.fc1(x)))
#   40     def forward(self, x):                                   # Block
#   41         x = x + self.attn(self.ln1(x))
#   42         x = x + self.mlp(self.ln2(x))
#   43         return x
#   56     def forward(self, idx):                                 # TinyGPT
#   57         pos = torch.arange(idx.size(1), device=idx.device)
#   58         x = self.tok_emb(idx) + self.pos_emb(pos)
#   59         for block in self.blocks:
#   60             x = block(x)
#   61         h = self.ln_f(x)
#   62         return self.lm_head(h), h          # lm_head.weight is tok_emb.weight (tied)
#
# train.py (excerpt)
#   39 def aux_entropy(h):
#   40     p = h.softmax(-1)
#   41     return (p * p.clamp_min(1e-9).log()).sum(-1).mean()
#   44 @torch.no_grad()
#   45 def evaluate(model, batches):
#   46     model.eval()
#   47     total = 0.0
#   48     for xv, yv in batches:
#   49         logits = model(xv.to(device))[0]
#   50         total += F.cross_entropy(logits.view(-1, logits.size(-1)), yv.to(device).view(-1)).item()
#   51         del logits
#   52     model.train()
#   53     torch.cuda.empty_cache()
#   54     return total / len(batches)
#   66 def main():
#   67     torch.cuda.memory._record_memory_history(stacks="python", global_record_annotations=True)
#   68     model = TinyGPT(vocab=8192, ctx=256, d=512, heads=8, layers=1).to(device)
#   69     opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
#   70     val = [next(val_loader) for _ in range(2)]
#   71     losses = []
#   72     for it in range(100):
#   73         with torch.profiler.record_function(f"iteration {it}"):
#   74             x, y = next(train_loader)
#   75             x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
#   76             logits, h = model(x)
#   77             loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
#   78             loss.backward()
#   79             opt.step()
#   80             opt.zero_grad(set_to_none=True)
#   81             losses.append(loss + 0.01 * aux_entropy(h))   # BUG: this graph never sees backward
#   82         if (it + 1) % 10 == 0:
#   83             with torch.profiler.record_function("evaluate"):
#   84                 print(it, torch.stack(losses[-10:]).mean().item(), evaluate(model, val))
#   87 if __name__ == "__main__":
#   88     try:
#   89         main()
#   90     finally:
#   91         torch.cuda.memory._dump_snapshot("snapshot.pickle")

TRAIN = "/home/dev/tinygpt/train.py"
MODEL = "/home/dev/tinygpt/model.py"
SITE = "/opt/venv/lib/python3.11/site-packages/torch/"
MODULE = SITE + "nn/modules/module.py"
LINEAR = SITE + "nn/modules/linear.py"
NORM = SITE + "nn/modules/normalization.py"
SPARSE = SITE + "nn/modules/sparse.py"
FUNCTIONAL = SITE + "nn/functional.py"
OPTIMIZER = SITE + "optim/optimizer.py"
ADAM = SITE + "optim/adam.py"
AUTOGRAD = SITE + "autograd/__init__.py"
TENSOR = SITE + "_tensor.py"
CONTEXTLIB = SITE + "utils/_contextlib.py"
CUDA_MEMORY = SITE + "cuda/memory.py"

# torch 2.11 line numbers of nn.Module.__call__
MODULE_CALL = (("_wrapped_call_impl", MODULE, 1779), ("_call_impl", MODULE, 1790))
LINEAR_LEAF = (("forward", LINEAR, 134),)
NORM_LEAF = (("layer_norm", FUNCTIONAL, 2910), ("forward", NORM, 229))
EMBED_LEAF = (("embedding", FUNCTIONAL, 2551), ("forward", SPARSE, 190))

F32, I64 = 4, 8
VOCAB, CTX, D, HEADS, LAYERS = 8192, 256, 512, 8, 1
BATCH, EVAL_BATCH, EVAL_BATCHES = 16, 32, 2
MAX_ITERS = 100               # range(100); the run dies of OOM long before
EVAL_EVERY = 10
# default CUBLAS_WORKSPACE_CONFIG ":4096:2:16:8", one per (handle, stream): the main thread's
# and the autograd device thread's. cuBLAS workspaces come from the caching allocator.
CUBLAS_WORKSPACE = 4096 * 1024 * 2 + 16 * 1024 * 8


class Tensor:
    __slots__ = ("block", "refs", "nbytes")

    def __init__(self, block: Block, nbytes: int):
        self.block, self.refs, self.nbytes = block, 1, nbytes


class Node:
    """An autograd node: tensors saved for backward, inputs, and the input grads it makes."""

    __slots__ = ("saved", "inputs", "grads", "temps", "matmul")

    def __init__(self, saved, inputs, grads, temps, matmul):
        self.saved = saved        # list[Tensor]
        self.inputs = inputs      # list[Var | Param]
        self.grads = grads        # per input: bytes of a new grad tensor, "pass" (grad_output), or None
        self.temps = temps        # bytes of scratch tensors allocated during its backward
        self.matmul = matmul      # runs cuBLAS


class Var:
    __slots__ = ("t", "fn")

    def __init__(self, t: Tensor, fn: Node | None = None):
        self.t, self.fn = t, fn


class Param:
    __slots__ = ("name", "t", "grad", "state")

    def __init__(self, name: str, t: Tensor):
        self.name, self.t, self.grad = name, t, None
        self.state: list[Tensor] = []


class Runtime:
    """Tensors with reference counts on top of the allocator, and a small autograd engine."""

    def __init__(self) -> None:
        self.rec = Recorder()
        self.alloc = CachingAllocator(self.rec)
        self.grad_enabled = True
        self.tape: list[Node] = []
        self.workspaces: dict[bool, Tensor] = {}

    def new(self, nbytes: int, leaf: tuple = (), cost: int = 0) -> Tensor:
        self.rec.advance(cost or (10 + nbytes // 50_000))     # launch queue paced by the GPU
        return Tensor(self.alloc.malloc(nbytes, self.rec.capture(leaf)), nbytes)

    def incref(self, t: Tensor) -> Tensor:
        t.refs += 1
        return t

    def decref(self, t: Tensor) -> None:
        t.refs -= 1
        if t.refs == 0:
            self.alloc.free(t.block, self.rec.capture())

    def drop(self, *vs) -> None:
        for v in vs:
            if v is not None:
                self.decref(v.t)

    def cublas(self, leaf: tuple = ()) -> None:
        """First cuBLAS call of a thread allocates that handle's workspace; kept forever."""
        key = self.rec.on_autograd_thread
        if key not in self.workspaces:
            self.workspaces[key] = self.new(CUBLAS_WORKSPACE, leaf)

    def op(self, nbytes: int, inputs=(), grads=(), saved=(), leaf: tuple = (), temps=(),
           save_output=False, matmul=False) -> Var:
        """Allocate the output of an op; in grad mode record its node and saved tensors."""
        out = self.new(nbytes, leaf)
        if matmul:
            self.cublas(leaf)
        fn = None
        if self.grad_enabled:
            fn = Node([self.incref(t) for t in saved], list(inputs), list(grads), tuple(temps),
                      matmul)
            if save_output:
                fn.saved.append(self.incref(out))
            self.tape.append(fn)
        return Var(out, fn)

    def backward(self, root: Var, ones: Tensor) -> None:
        """The autograd engine, on the CUDA device thread (no Python frames)."""
        rec = self.rec
        tape, self.tape = self.tape, []
        rec.on_autograd_thread = True
        buffers: dict[int, Tensor] = {id(root.fn): ones}
        for node in reversed(tape):                # decreasing sequence numbers
            grad_out = buffers.pop(id(node))
            rec.advance(20 + grad_out.nbytes // 60_000)
            scratch = [self.new(n) for n in node.temps]
            for inp, kind in zip(node.inputs, node.grads):
                if kind is None:
                    continue
                g = self.incref(grad_out) if kind == "pass" else self.new(kind)
                if node.matmul:
                    self.cublas()
                if isinstance(inp, Param):
                    if inp.grad is None:
                        inp.grad = g                   # AccumulateGrad steals the buffer
                    else:
                        self.decref(g)                 # accumulated in place
                elif inp.fn is None:
                    self.decref(g)
                elif id(inp.fn) not in buffers:
                    buffers[id(inp.fn)] = g
                else:
                    prev = buffers[id(inp.fn)]
                    if prev.refs == 1:
                        self.decref(g)                 # InputBuffer accumulates in place
                    else:                              # buffer shared: out-of-place add
                        total = self.new(prev.nbytes)
                        self.decref(prev)
                        self.decref(g)
                        buffers[id(inp.fn)] = total
            for t in scratch:
                self.decref(t)
            self.decref(grad_out)
            for t in node.saved:                       # release_variables()
                self.decref(t)
            node.saved = []
        assert not buffers, "gradients left over"
        rec.on_autograd_thread = False


class Module:
    """nn.Module.__call__: pushes _wrapped_call_impl/_call_impl, plus forward() if in Python."""

    def __init__(self, rec: Recorder, forward_line: int = 0, filename: str = MODEL):
        self.calls = [Call(rec, *f) for f in MODULE_CALL]
        if forward_line:
            self.calls.append(Call(rec, "forward", filename, forward_line))

    def __enter__(self):
        for c in self.calls:
            c.__enter__()

    def __exit__(self, *exc):
        for c in reversed(self.calls):
            c.__exit__()
        return False


class TinyGPT:
    def __init__(self, rt: Runtime):
        self.rt, self.rec = rt, rt.rec
        self.params: dict[str, Param] = {}

    def to_device(self) -> None:
        """TinyGPT(...).to(device): Module._apply converts each parameter, module by module."""
        rt, rec = self.rt, self.rec
        shapes = [("tok_emb.weight", VOCAB * D), ("pos_emb.weight", CTX * D)]
        for i in range(LAYERS):
            shapes += [(f"blocks.{i}.ln1.weight", D), (f"blocks.{i}.attn.qkv.weight", 3 * D * D),
                       (f"blocks.{i}.attn.proj.weight", D * D), (f"blocks.{i}.ln2.weight", D),
                       (f"blocks.{i}.mlp.fc1.weight", 4 * D * D),
                       (f"blocks.{i}.mlp.fc2.weight", 4 * D * D)]
        shapes.append(("ln_f.weight", D))
        with Call(rec, "to", MODULE, 1369), Call(rec, "_apply", MODULE, 915):
            for name, numel in shapes:
                leaf = ((("convert", MODULE, 1355), ("_apply", MODULE, 942))
                        + (("_apply", MODULE, 915),) * (name.count(".") - 1))
                self.params[name] = Param(name, rt.new(numel * F32, leaf, cost=60))
                rec.advance(200)

    def layer_norm(self, x: Var, weight: str, batch: int) -> Var:
        rt = self.rt
        act = batch * CTX * D * F32
        with Module(self.rec):
            out = rt.op(act, [x, self.params[weight]], [act, D * F32], saved=[x.t], leaf=NORM_LEAF)
            stats = [rt.new(batch * CTX * F32, NORM_LEAF) for _ in range(2)]   # mean, rstd
        if out.fn is not None:
            out.fn.saved += stats
        else:
            for t in stats:
                rt.decref(t)
        return out

    def linear(self, x: Var, weight: str, in_f: int, out_f: int, batch: int) -> Var:
        with Module(self.rec):
            return self.rt.op(batch * CTX * out_f * F32, [x, self.params[weight]],
                              [batch * CTX * in_f * F32, in_f * out_f * F32],
                              saved=[x.t], leaf=LINEAR_LEAF, matmul=True)

    def attention(self, x: Var, i: int, batch: int) -> Var:
        rt, rec = self.rt, self.rec
        act = batch * CTX * D * F32
        lse_bytes = batch * HEADS * CTX * F32
        with Module(rec, 15):
            qkv = self.linear(x, f"blocks.{i}.attn.qkv.weight", D, 3 * D, batch)
            with At(rec, 17):
                # flash attention: output + logsumexp; saves q, k, v (views of qkv), out, lse
                y = rt.op(act, [qkv], [3 * act], saved=[qkv.t], temps=(lse_bytes,),
                          save_output=True)
                lse = rt.new(lse_bytes)
                if y.fn is not None:
                    y.fn.saved.append(lse)
                else:
                    rt.decref(lse)
                rt.drop(qkv)
            with At(rec, 18):
                yc = rt.op(act, [y], ["pass"])           # transpose(1, 2).contiguous()
                rt.drop(y)
            with At(rec, 19):
                out = self.linear(yc, f"blocks.{i}.attn.proj.weight", D, D, batch)
                rt.drop(yc)
        return out

    def mlp(self, x: Var, i: int, batch: int) -> Var:
        rt = self.rt
        hidden = batch * CTX * 4 * D * F32
        with Module(self.rec, 29):
            h = self.linear(x, f"blocks.{i}.mlp.fc1.weight", D, 4 * D, batch)
            g = rt.op(hidden, [h], [hidden], saved=[h.t])          # F.gelu saves its input
            rt.drop(h)
            out = self.linear(g, f"blocks.{i}.mlp.fc2.weight", 4 * D, D, batch)
            rt.drop(g)
        return out

    def block(self, x: Var, i: int, batch: int) -> Var:
        rt, rec = self.rt, self.rec
        act = batch * CTX * D * F32
        with Module(rec, 41):
            n1 = self.layer_norm(x, f"blocks.{i}.ln1.weight", batch)
            a = self.attention(n1, i, batch)
            rt.drop(n1)
            x1 = rt.op(act, [x, a], ["pass", "pass"])
            rt.drop(a)
            with At(rec, 42):
                n2 = self.layer_norm(x1, f"blocks.{i}.ln2.weight", batch)
                m = self.mlp(n2, i, batch)
                rt.drop(n2)
                x2 = rt.op(act, [x1, m], ["pass", "pass"])
                rt.drop(m, x1)
        return x2

    def __call__(self, idx: Tensor, batch: int) -> tuple[Var, Var]:
        """logits, h = model(idx)"""
        rt, rec = self.rt, self.rec
        act = batch * CTX * D * F32
        with Module(rec, 57):
            pos = rt.new(CTX * I64)                                # torch.arange
            with At(rec, 58):
                with Module(rec):
                    tok = rt.op(act, [Var(idx), self.params["tok_emb.weight"]],
                                [None, VOCAB * D * F32], saved=[idx], leaf=EMBED_LEAF)
                with Module(rec):
                    pe = rt.op(CTX * D * F32, [Var(pos), self.params["pos_emb.weight"]],
                               [None, CTX * D * F32], saved=[pos], leaf=EMBED_LEAF)
                rt.decref(pos)
                x = rt.op(act, [tok, pe], ["pass", CTX * D * F32])  # broadcast add
                rt.drop(tok, pe)
            for i in range(LAYERS):
                with At(rec, 60):
                    nx = self.block(x, i, batch)
                    rt.drop(x)
                    x = nx
            with At(rec, 61):
                h = self.layer_norm(x, "ln_f.weight", batch)
                rt.drop(x)
            with At(rec, 62):
                logits = self.linear(h, "tok_emb.weight", D, VOCAB, batch)
        return logits, h

    def cross_entropy(self, logits: Var, batch: int) -> Var:
        rt, rec = self.rt, self.rec
        n = batch * CTX * VOCAB * F32
        with Call(rec, "cross_entropy", FUNCTIONAL, 3462):
            lsm = rt.op(n, [logits], [n], save_output=True)        # log_softmax
            loss = rt.op(F32, [lsm], [n])                          # nll_loss: loss, total_weight
            total_weight = rt.new(F32)
            if loss.fn is not None:
                loss.fn.saved.append(total_weight)
            else:
                rt.decref(total_weight)
            rt.drop(lsm)
        return loss


def run_job() -> Runtime:
    rt = Runtime()
    rec = rt.rec
    model = TinyGPT(rt)
    act = BATCH * CTX * D * F32
    losses: list[Var] = []

    def aux_entropy(h: Var) -> Var:
        with Call(rec, "aux_entropy", TRAIN, 40):
            p = rt.op(act, [h], [act], save_output=True)           # softmax saves its output
            with At(rec, 41):
                c = rt.op(act, [p], [act], saved=[p.t])            # clamp_min saves its input
                lg = rt.op(act, [c], [act], saved=[c.t])           # log saves its input
                rt.drop(c)
                m = rt.op(act, [p, lg], [act, act], saved=[p.t, lg.t])
                rt.drop(p, lg)
                s = rt.op(BATCH * CTX * F32, [m], [act])           # sum(-1)
                rt.drop(m)
                r = rt.op(F32, [s], [BATCH * CTX * F32])           # mean()
                rt.drop(s)
        return r

    def evaluate(val) -> None:
        with Call(rec, "decorate_context", CONTEXTLIB, 116), Call(rec, "evaluate", TRAIN, 46):
            rt.grad_enabled = False
            for _ in val:
                with At(rec, 49):
                    xv = Var(rt.new(EVAL_BATCH * CTX * I64, cost=40))        # xv.to(device)
                    logits, h = model(xv.t, EVAL_BATCH)
                    rt.drop(h, xv)                                           # [0]; temporaries
                with At(rec, 50):
                    yv = Var(rt.new(EVAL_BATCH * CTX * I64, cost=40))        # yv.to(device)
                    vloss = model.cross_entropy(logits, EVAL_BATCH)
                    rt.drop(yv)
                    rec.advance(5000)                                        # .item() waits
                    rt.drop(vloss)
                with At(rec, 51):
                    rt.drop(logits)                                          # del logits
            rt.grad_enabled = True
            with At(rec, 53), Call(rec, "empty_cache", CUDA_MEMORY, 224):
                rt.alloc.empty_cache(rec.capture())

    x = y = logits = h = loss = None
    with Call(rec, "<module>", TRAIN, 89), Call(rec, "main", TRAIN, 68):
        model.to_device()
        try:
            for it in range(MAX_ITERS):
                with Annotated(rec, f"iteration {it}"):
                    with At(rec, 74):
                        rec.advance(1800 + rec.jitter(900))        # data loading on the CPU
                        rt.drop(x, y)                              # rebound to CPU tensors
                    with At(rec, 75):
                        x = Var(rt.new(BATCH * CTX * I64, cost=40))
                        y = Var(rt.new(BATCH * CTX * I64, cost=40))
                    with At(rec, 76):
                        new_logits, new_h = model(x.t, BATCH)
                        rt.drop(logits, h)
                        logits, h = new_logits, new_h
                    with At(rec, 77):
                        new_loss = model.cross_entropy(logits, BATCH)
                        rt.drop(loss)
                        loss = new_loss
                    with At(rec, 78), Call(rec, "backward", TENSOR, 648), \
                            Call(rec, "backward", AUTOGRAD, 347):
                        with Call(rec, "_make_grads", AUTOGRAD, 220):
                            ones = rt.new(F32)                     # torch.ones_like(loss)
                        with Call(rec, "_engine_run_backward", SITE + "autograd/graph.py", 829):
                            rt.backward(loss, ones)
                    with At(rec, 79), Annotated(rec, "Optimizer.step#AdamW.step"), \
                            Call(rec, "wrapper", OPTIMIZER, 516), Call(rec, "_use_grad", OPTIMIZER, 79), \
                            Call(rec, "step", ADAM, 236):
                        for prm in model.params.values():
                            if not prm.state:                      # lazy state initialisation
                                with Call(rec, "_init_group", ADAM, 190):
                                    prm.state.append(rt.new(F32))  # state["step"] (fused: on device)
                                with Call(rec, "_init_group", ADAM, 197):
                                    prm.state.append(rt.new(prm.t.nbytes))   # exp_avg
                                with Call(rec, "_init_group", ADAM, 201):
                                    prm.state.append(rt.new(prm.t.nbytes))   # exp_avg_sq
                        rec.advance(1400)                          # one _fused_adamw_ launch
                    with At(rec, 80), Annotated(rec, "Optimizer.zero_grad#AdamW.zero_grad"), \
                            Call(rec, "zero_grad", OPTIMIZER, 1015):
                        for prm in model.params.values():
                            if prm.grad is not None:
                                g, prm.grad = prm.grad, None
                                rt.decref(g)
                    with At(rec, 81):
                        aux = aux_entropy(h)
                        scaled = rt.op(F32, [aux], [F32])          # 0.01 * aux
                        rt.drop(aux)
                        total = rt.op(F32, [loss, scaled], ["pass", "pass"])
                        rt.drop(scaled)
                        rt.tape = []         # no backward ever runs on it: `losses` keeps it
                        losses.append(total)
                rec.advance(150)
                if (it + 1) % EVAL_EVERY == 0:
                    with At(rec, 84), Annotated(rec, "evaluate"):
                        st = rt.op(10 * F32, [], [])               # torch.stack(losses[-10:])
                        mean = rt.op(F32, [], [])                  # .mean()
                        rt.drop(st)
                        rec.advance(60)                            # .item()
                        rt.drop(mean)
                        rt.tape = []
                        evaluate(range(EVAL_BATCHES))
        except OutOfMemory:
            return rt
    raise SystemExit("make_example: the scenario was expected to run out of memory")


# --------------------------------------------------------------------------------------------

def default_allocator_settings() -> dict:
    """allocator_settings as torch 2.9-2.11 write them for the default configuration."""
    return {
        S("PYTORCH_CUDA_ALLOC_CONF"): S(""),
        S("max_split_size"): -1,
        S("garbage_collection_threshold"): 0.0,
        S("expandable_segments"): False,
        S("pinned_num_register_threads"): 1,
        S("release_lock_on_cudamalloc"): False,
        S("pinned_use_cuda_host_register"): False,
        S("roundup_power2_divisions"): {S(str(1 << i)): 0 for i in range(16)},
        S("graph_capture_record_stream_reuse"): False,
    }


def build_snapshot() -> tuple[dict, str]:
    rt = run_job()
    settings = default_allocator_settings()
    snapshot = {
        S("segments"): rt.alloc.snapshot_segments(),
        S("device_traces"): [rt.rec.trace, []],
        S("allocator_settings"): settings,
        S("external_annotations"): rt.rec.annotations,
    }
    summary = (f"{len(rt.rec.trace)} trace entries, {len(snapshot['segments'])} segments at the "
               f"end, peak reserved {rt.alloc.peak_reserved / MIB:.0f} MiB, peak allocated "
               f"{rt.alloc.peak_allocated / MIB:.0f} MiB")
    return snapshot, summary


def render() -> tuple[bytes, str]:
    snapshot, summary = build_snapshot()
    buf = io.BytesIO()
    pickle.dump(snapshot, buf, protocol=4)
    return buf.getvalue(), summary


def main() -> int:
    here = Path(__file__).resolve().parent
    ap = argparse.ArgumentParser(description="Generate the bundled example snapshot.")
    ap.add_argument("-o", "--output", type=Path, default=here / "example.pickle")
    ap.add_argument("--check", action="store_true",
                    help="regenerate in memory and compare with OUTPUT; exit 1 if they differ")
    args = ap.parse_args()
    data, summary = render()
    if args.check:
        try:
            old = args.output.read_bytes()
        except OSError as e:
            print(f"make_example: cannot read {args.output}: {e.strerror}", file=sys.stderr)
            return 1
        if old != data:
            print(f"make_example: {args.output} differs from the generator's output "
                  f"({len(old)} vs {len(data)} bytes); run resources/make_example.py",
                  file=sys.stderr)
            return 1
        print(f"make_example: {args.output} is up to date ({len(data)} bytes)")
        return 0
    args.output.write_bytes(data)
    print(f"make_example: wrote {args.output} ({len(data)} bytes; {summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
