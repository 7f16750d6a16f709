#!/usr/bin/env python3
"""Write a deterministic snapshot pickle shaped as torch 2.12-2.14 builds it, with every newer field.

Not recorded on a GPU: a made-up job (train.py / model.py below) is SIMULATED against the caching
allocator model of resources/make_example.py (imported from the repository, unchanged: its
CachingAllocator, Device, Recorder, frames), one allocator per memory pool, all sharing one device
address space and one clock, plus a small model of the pinned host caching allocator. What the
snapshot holds is what the simulation reached, and its trace is what the simulation recorded, so
replaying the trace (each pool on its own) leads exactly to the final segments and blocks
(`--verify` checks that with the independent replayer of tests/resources/test_example.py).

Layout (pickle.dump of a plain dict, protocol 4), shared/reference/snapshot-format.md:
  segments               device 0; pools (0, 0) default, (1, 0) a CUDA graph's private pool (its
                         capture ran on a side stream), (0, 1) a torch.cuda.MemPool
  device_traces          [trace of device 0]; entries {action, addr, size, stream, frames, time_us,
                         compile_context, user_metadata} (oom: device_free instead of addr);
                         user_metadata from torch.cuda.memory._set_memory_metadata ('' until set,
                         then 'phase=train step=N', 'phase=eval'); compile_context
                         'Torch-Compiled Region: 0/0' (0/1 after a recompile) inside the compiled
                         probe, 'N/A' elsewhere; frames of the generated inductor code carry
                         fx_node_op, fx_node_name, fx_node_target, fx_original_trace
                         (_dump_snapshot(augment_with_fx_traces=True))
  allocator_settings     the nine keys of 2.11 plus trace_alloc_max_entries and
                         trace_alloc_overflowed (PR #179276), lists indexed by device
  external_annotations   ProfilerStep#N, Optimizer.step#AdamW.step, Optimizer.zero_grad#..., evaluate
  host_segments          pinned host memory (PR #182407, record_pinned_host_memory=True): segment
                         dicts with the keys of `segments`, device -1, one block per segment (the
                         host allocator rounds each request up to a power of two, never splits)
  host_traces            [host trace]: segment_alloc, alloc, free_requested, free_completed (after
                         the copy's event completed: at the next host allocation), segment_free

--truncated: the device trace is the ring buffer of a recording with max_entries=400 that
overflowed: only its last 400 entries are kept (frees of blocks allocated before them, live blocks
whose alloc is gone), trace_alloc_overflowed [True]. Without it the whole trace is kept,
trace_alloc_max_entries [100000] and trace_alloc_overflowed [False].

  python3 tests/tools/make_newer_snapshot.py -o FILE [--truncated] [--verify]

The made-up job (line numbers in the recorded stacks refer to these):

model.py
  20 class Net(nn.Module):
  27     def forward(self, x):
  28         x = F.relu(self.fc1(x))
  29         return self.fc2(x)
  40 class Probe(nn.Module):                       # compiled: torch.compile(model.probe)
  41     def forward(self, x):
  42         x = self.fc(x)
  43         return x.softmax(-1), x.amax(-1)

train.py
  50 def main():
  51     torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES, record_pinned_host_memory=True)
  52     model = Net().cuda()
  53     opt = torch.optim.AdamW(model.parameters(), fused=True)
  54     pool = torch.cuda.MemPool()
  55     with torch.cuda.use_mem_pool(pool):
  56         comm = [torch.empty(3 << 20, dtype=torch.uint8, device="cuda") for _ in range(3)]
  57         flags = torch.zeros(1024, dtype=torch.int32, device="cuda")
  58     del comm[1]
  59     static_x = torch.zeros(EVAL_BATCH, 1000, device="cuda")
  60     graph = torch.cuda.CUDAGraph()
  61     with torch.no_grad(), torch.cuda.graph(graph):
  62         static_out = model(static_x)
  63     probe = torch.compile(model.probe)
  64     peaks = []
  65     for step, (xb, yb) in enumerate(loader):        # DataLoader(pin_memory=True)
  66         torch.cuda.memory._set_memory_metadata(f"phase=train step={step}")
  67         with torch.profiler.record_function(f"ProfilerStep#{step}"):
  68             x, y = xb.to("cuda", non_blocking=True), yb.to("cuda", non_blocking=True)
  69             out = model(x)
  70             loss = F.cross_entropy(out, y)
  71             loss.backward()
  72             opt.step()
  73             opt.zero_grad(set_to_none=True)
  74             with torch.no_grad():
  75                 probs, peak = probe(out.detach())
  76             peaks.append(peak)                      # until the end of the epoch
  77         if step == EVAL_AT:
  78             torch.cuda.memory._set_memory_metadata("phase=eval")
  79             evaluate(model, graph, static_x, static_out, pool)
  80     report = torch.empty(len(peaks), pin_memory=True)
  81     ...
  82     torch.cuda.memory._dump_snapshot("snapshot.pickle", augment_with_fx_traces=True)
  85 def evaluate(model, graph, static_x, static_out, pool):
  86     xe = next(eval_iter)                            # pinned by the DataLoader
  87     static_x.copy_(xe, non_blocking=True)
  88     graph.replay()
  89     out_host = torch.empty(static_out.shape, pin_memory=True)
  90     out_host.copy_(static_out, non_blocking=True)
  91     with torch.cuda.use_mem_pool(pool):
  92         kv = torch.empty(2 << 20, dtype=torch.uint8, device="cuda")
  93     try:                                            # how big an eval batch would fit?
  94         big = torch.randn(131072, 1000, device="cuda")
  95         model(big)                                  # out of memory: fc1 needs 2 GiB
  96     except torch.OutOfMemoryError:
  97         del big
  98     torch.cuda.empty_cache()
  99     torch._C._host_emptyCache()
"""
from __future__ import annotations

import argparse
import importlib.util
import io
import pickle
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mx = _load("memlens_make_example", ROOT / "resources" / "make_example.py")
S = mx.S
MIB = mx.MIB

# --------------------------------------------------------------------------------------------
# The job's sizes.
F32, I64 = 4, 8
D_IN, HIDDEN, D_OUT, PROBE = 1000, 4096, 1000, 64
BATCH, LAST_BATCH, EVAL_BATCH = 48, 40, 96
STEPS = 24                          # the last batch of the epoch is smaller: recompile 0/1
EVAL_AT = 11
PROBE_BATCH = 131072                # the eval batch size that does not fit
TRUNCATED_MAX_ENTRIES = 400
FULL_MAX_ENTRIES = 100_000
CAPTURE_STREAM = 0x55D0_C3A1_E2F0  # torch.cuda.graph() captures on a side stream
HOST_BASE = 0x7F3C_1000_0000       # cudaHostAlloc addresses (same unified address space)
HOST_PAGE = 4096

TRAIN = "/home/dev/newer/train.py"
MODEL = "/home/dev/newer/model.py"
SITE = mx.SITE
MODULE, LINEAR, FUNCTIONAL, ADAM, OPTIMIZER = mx.MODULE, mx.LINEAR, mx.FUNCTIONAL, mx.ADAM, mx.OPTIMIZER
GRAPHS = SITE + "cuda/graphs.py"
MEMORY = SITE + "cuda/memory.py"
PIN = SITE + "utils/data/_utils/pin_memory.py"
THREADING = "/usr/lib/python3.11/threading.py"
EVAL_FRAME = SITE + "_dynamo/eval_frame.py"
OUTPUT_CODE = SITE + "_inductor/output_code.py"
RUNTIME_WRAPPERS = SITE + "_functorch/_aot_autograd/runtime_wrappers.py"
AOT_UTILS = SITE + "_functorch/_aot_autograd/utils.py"
# generated inductor code: one file per compiled graph (0/0, then 0/1 after the recompile)
INDUCTOR_CODE = ["/tmp/torchinductor_dev/xy/cxyzq4hv3tw6r7bq3f5qg5z4rjv2l6ghc6nchkqjvl6hqbc7t.py",
                 "/tmp/torchinductor_dev/k2/ck2mfd7sdlrq5wjx3aeq4nhy2uvc2kjqz6rbxw3g5c4hqtsv7ma.py"]

# the pin-memory thread of the DataLoader: its own Python stack
PIN_STACK = (("pin_memory", PIN, 76), ("do_one_step", PIN, 35), ("_pin_memory_loop", PIN, 59),
             ("run", THREADING, 1012), ("_bootstrap_inner", THREADING, 1075),
             ("_bootstrap", THREADING, 1032))
# the frames between the call of the compiled probe and its generated code (innermost first)
COMPILED_STACK = (("forward", MODEL, 41), ("_fn", EVAL_FRAME, 929),
                  ("_call_impl", MODULE, 1790), ("_wrapped_call_impl", MODULE, 1779))
COMPILED_INNER = (("__call__", OUTPUT_CODE, 584), ("call_func_at_runtime_with_args", AOT_UTILS, 126),
                  ("runtime_wrapper", RUNTIME_WRAPPERS, 350), ("inner_fn", RUNTIME_WRAPPERS, 731),
                  ("forward", SITE + "_functorch/aot_autograd.py", 1190))


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


# --------------------------------------------------------------------------------------------
# Recording

class Rec(mx.Recorder):
    """make_example's Recorder, plus each entry's stream, compile_context and user_metadata
    (torch.cuda.memory._set_memory_metadata), and the pool each entry came from (for --verify)."""

    def __init__(self) -> None:
        super().__init__()
        self.compile_context = "N/A"
        self.user_metadata = ""
        self.entry_pools: list[tuple] = []
        self._fx: dict[tuple, dict] = {}

    def _tag(self, pool, stream) -> None:
        e = self.trace[-1]
        e["stream"] = stream
        e["compile_context"] = S(self.compile_context)
        e["user_metadata"] = S(self.user_metadata)
        self.entry_pools.append(pool)

    def record(self, action, addr, size, frames, pool=(0, 0), stream=0) -> None:
        super().record(action, addr, size, frames)
        self._tag(pool, stream)

    def record_oom(self, device_free, size, frames, pool=(0, 0), stream=0) -> None:
        super().record_oom(device_free, size, frames)
        self._tag(pool, stream)

    def fx_frame(self, filename: str, line: int, op: str, node: str, target: str, original: tuple) -> dict:
        """A frame of generated inductor code with the FX keys of augment_with_fx_traces=True;
        `original` is the model code's stack, outermost first: ((file, line, function, code), ...)."""
        key = (filename, line, node)
        f = self._fx.get(key)
        if f is None:
            trace = "".join(f'  File "{fn}", line {ln}, in {func}\n    {code}\n' for fn, ln, func, code in original)
            f = {S("name"): S("call"), S("filename"): S(filename), S("line"): line,
                 S("fx_node_op"): S(op), S("fx_node_name"): S(node), S("fx_node_target"): S(target),
                 S("fx_original_trace"): S(trace)}
            self._fx[key] = f
        return f


class PoolRecorder:
    """What one pool's CachingAllocator records into: the shared Recorder, tagged with the pool
    and the stream its blocks belong to."""

    def __init__(self, rec: Rec, pool: tuple, stream: int) -> None:
        self.rec, self.pool, self.stream = rec, pool, stream

    def record(self, action, addr, size, frames) -> None:
        self.rec.record(action, addr, size, frames, self.pool, self.stream)

    def record_oom(self, device_free, size, frames) -> None:
        self.rec.record_oom(device_free, size, frames, self.pool, self.stream)


# --------------------------------------------------------------------------------------------
# The pinned host caching allocator (CachingHostAllocator): each request rounded up to a power of
# two, one cudaHostAlloc per block (never split), freed blocks cached per size; a block used by a
# non_blocking copy is freed only once the copy's event completed (checked at the next allocation).

class HostBlock:
    __slots__ = ("addr", "size", "req", "allocated", "pending", "frames", "seg_frames")

    def __init__(self, addr: int, size: int, seg_frames: list) -> None:
        self.addr, self.size, self.req = addr, size, 0
        self.allocated = self.pending = False
        self.frames: list = []
        self.seg_frames = seg_frames


class HostAllocator:
    def __init__(self, rec: Rec) -> None:
        self.rec = rec
        self.trace: list[dict] = []
        self.next = HOST_BASE
        self.blocks: dict[int, HostBlock] = {}
        self.free_lists: dict[int, list[HostBlock]] = {}
        self.pending: list[HostBlock] = []

    def record(self, action: str, addr: int, size: int, frames: list) -> None:
        rec = self.rec
        rec.now += 1 + rec.jitter(4)
        self.trace.append({
            S("action"): S(action), S("addr"): addr, S("size"): size, S("stream"): 0,
            S("frames"): frames, S("time_us"): rec.now,
            S("compile_context"): S(rec.compile_context), S("user_metadata"): S(rec.user_metadata),
        })

    def process_events(self) -> None:
        for b in self.pending:
            b.pending = False
            self.record("free_completed", b.addr, b.req, [])
            self.free_lists.setdefault(b.size, []).append(b)
        self.pending = []

    def malloc(self, req: int, frames: list) -> HostBlock:
        self.process_events()
        size = next_pow2(req)
        cached = self.free_lists.get(size)
        if cached:
            b = cached.pop()                       # the most recently freed of that size
        else:
            addr = self.next
            self.next += (size + HOST_PAGE - 1) // HOST_PAGE * HOST_PAGE
            b = HostBlock(addr, size, frames)
            self.blocks[addr] = b
            self.record("segment_alloc", addr, size, frames)
        b.req, b.allocated, b.frames = req, True, frames
        self.record("alloc", b.addr, req, frames)
        return b

    def free(self, b: HostBlock, frames: list, copied: bool = True) -> None:
        assert b.allocated
        b.allocated = False
        b.frames = []
        self.record("free_requested", b.addr, b.req, frames)
        if copied:                                 # an event of the non_blocking copy is pending
            b.pending = True
            self.pending.append(b)
        else:
            self.record("free_completed", b.addr, b.req, frames)
            self.free_lists.setdefault(b.size, []).append(b)

    def empty_cache(self, frames: list) -> None:
        self.process_events()
        for size in sorted(self.free_lists):
            for b in sorted(self.free_lists[size], key=lambda b: b.addr):
                del self.blocks[b.addr]
                self.record("segment_free", b.addr, b.size, frames)
        self.free_lists = {}

    def snapshot_segments(self) -> list[dict]:
        assert not self.pending, "the snapshot must not hold pending host frees"
        out = []
        for addr in sorted(self.blocks):
            b = self.blocks[addr]
            allocated = b.size if b.allocated else 0
            requested = b.req if b.allocated else 0
            out.append({
                S("device"): -1,
                S("address"): b.addr,
                S("total_size"): b.size,
                S("allocated_size"): allocated,
                S("active_size"): allocated,
                S("requested_size"): requested,
                S("stream"): 0,
                S("segment_type"): S("small" if b.size <= mx.K_SMALL_SIZE else "large"),
                S("segment_pool_id"): (0, 0),
                S("is_expandable"): False,
                S("frames"): b.seg_frames,
                S("blocks"): [{
                    S("address"): b.addr,
                    S("size"): b.size,
                    S("requested_size"): b.req,
                    S("state"): S("active_allocated" if b.allocated else "inactive"),
                    S("frames"): b.frames,
                }],
            })
        return out


# --------------------------------------------------------------------------------------------
# The device: one caching allocator per pool on one address space.

DEFAULT_POOL, GRAPH_POOL, MEM_POOL = (0, 0), (1, 0), (0, 1)


class T:
    """A device tensor: its block and the pool that owns it."""
    __slots__ = ("block", "pool")

    def __init__(self, block, pool) -> None:
        self.block, self.pool = block, pool


class Sim:
    def __init__(self) -> None:
        self.rec = Rec()
        device = mx.Device()
        self.pools: dict[tuple, mx.CachingAllocator] = {}
        self.streams = {DEFAULT_POOL: 0, MEM_POOL: 0, GRAPH_POOL: CAPTURE_STREAM}
        for pool, stream in self.streams.items():
            a = mx.CachingAllocator(PoolRecorder(self.rec, pool, stream))
            a.device = device                      # all pools share the device's address space
            self.pools[pool] = a
        self.device = device
        self.current = DEFAULT_POOL
        self.host = HostAllocator(self.rec)
        self.workspaces: dict[tuple, T] = {}

    # -- device ---------------------------------------------------------------------------
    def new(self, nbytes: int, leaf: tuple = (), frames: list | None = None, cost: int = 0) -> T:
        rec = self.rec
        rec.advance(cost or (10 + nbytes // 50_000))
        if frames is None:
            frames = rec.capture(leaf)
        return T(self.pools[self.current].malloc(nbytes, frames), self.current)

    def free(self, *ts, frames: list | None = None) -> None:
        for t in ts:
            if t is not None:
                self.pools[t.pool].free(t.block, self.rec.capture() if frames is None else frames)

    def cublas(self, leaf: tuple = ()) -> None:
        """Each (thread, stream)'s first cuBLAS call allocates its workspace, kept forever."""
        key = (self.rec.on_autograd_thread, self.current)
        if key not in self.workspaces:
            self.workspaces[key] = self.new(mx.CUBLAS_WORKSPACE, leaf)

    def empty_cache(self) -> None:
        """torch.cuda.empty_cache(): frees the default pool's wholly free segments (private pools
        still in use keep theirs)."""
        self.pools[DEFAULT_POOL].empty_cache(self.rec.capture())

    def segments(self) -> list[dict]:
        out = []
        for pool, a in self.pools.items():
            for s in a.snapshot_segments():
                s["segment_pool_id"] = pool
                s["stream"] = self.streams[pool]
                out.append(s)
        out.sort(key=lambda s: s["address"])
        return out


# --------------------------------------------------------------------------------------------
# The job

class Job:
    def __init__(self) -> None:
        self.sim = Sim()
        self.rec = self.sim.rec

    def module(self, line: int = 0):
        return mx.Module(self.rec, line, MODEL)

    def linear(self, batch: int, out_f: int) -> T:
        sim = self.sim
        with self.module():
            t = sim.new(batch * out_f * F32, mx.LINEAR_LEAF)
            sim.cublas(mx.LINEAR_LEAF)
        return t

    def forward(self, x: T, batch: int) -> tuple[T, T]:
        """model(x) -> out; returns (a, out) with a = relu(fc1(x)) (saved for backward)."""
        sim, rec = self.sim, self.rec
        with self.module(28):
            h = self.linear(batch, HIDDEN)
            with mx.Call(rec, "relu", FUNCTIONAL, 1704):
                a = sim.new(batch * HIDDEN * F32)
            sim.free(h)                            # relu saves its result, not its input
            with mx.At(rec, 29):
                out = self.linear(batch, D_OUT)
        return a, out

    def params(self) -> dict[str, T]:
        sim, rec = self.sim, self.rec
        shapes = [("fc1.weight", HIDDEN * D_IN), ("fc1.bias", HIDDEN), ("fc2.weight", D_OUT * HIDDEN),
                  ("fc2.bias", D_OUT), ("probe.fc.weight", PROBE * D_OUT), ("probe.fc.bias", PROBE)]
        out = {}
        with mx.At(rec, 52), mx.Call(rec, "cuda", MODULE, 1084), mx.Call(rec, "_apply", MODULE, 915):
            for name, numel in shapes:
                leaf = ((("convert", MODULE, 1355), ("_apply", MODULE, 942))
                        + (("_apply", MODULE, 915),) * name.count(".", 0, name.rfind(".")))
                out[name] = sim.new(numel * F32, leaf, cost=60)
                rec.advance(200)
        return out

    def probe(self, x_batch: int, region: int) -> tuple[T, T]:
        """probe(out.detach()) under torch.compile: the generated code allocates buf0 (addmm),
        buf1 (amax) and buf2 (softmax) and frees buf0."""
        sim, rec = self.sim, self.rec
        code = INDUCTOR_CODE[region]
        rec.compile_context = f"Torch-Compiled Region: 0/{region}"
        fc = ((MODEL, 42, "forward", "x = self.fc(x)"),)
        tail = ((MODEL, 43, "forward", "return x.softmax(-1), x.amax(-1)"),)
        with mx.At(rec, 75):
            for f in reversed(COMPILED_STACK):
                rec.pystack.append(rec.frame(*f))
            for f in reversed(COMPILED_INNER):
                rec.pystack.append(rec.frame(*f))
            stack = list(reversed(rec.pystack))
            buf0 = sim.new(x_batch * PROBE * F32, frames=[rec.fx_frame(
                code, 38, "call_function", "addmm", "aten.addmm.default", fc)] + stack)
            sim.cublas()
            buf1 = sim.new(x_batch * F32, frames=[rec.fx_frame(
                code, 41, "call_function", "amax", "aten.amax.default", tail)] + stack)
            buf2 = sim.new(x_batch * PROBE * F32, frames=[rec.fx_frame(
                code, 42, "call_function", "_softmax", "aten._softmax.default", tail)] + stack)
            sim.free(buf0, frames=[rec.frame("call", code, 45)] + stack)
            del rec.pystack[-len(COMPILED_STACK) - len(COMPILED_INNER):]
        rec.compile_context = "N/A"
        return buf2, buf1

    def pin_batch(self, batch: int) -> tuple:
        """The DataLoader's pin-memory thread pins a batch (x float32, y int64)."""
        host, rec = self.sim.host, self.rec
        frames = [rec.frame(*f) for f in PIN_STACK]
        return (host.malloc(batch * D_IN * F32, frames), host.malloc(batch * I64, frames))

    def step(self, step: int, st: dict) -> None:
        sim, rec = self.sim, self.rec
        batch = LAST_BATCH if step == STEPS - 1 else BATCH
        rec.user_metadata = f"phase=train step={step}"
        rec.advance(1500 + rec.jitter(500))
        with mx.At(rec, 65):
            xb, yb = self.pin_batch(batch)
            for b in st.pop("host_batch", ()):     # the previous batch's pinned tensors
                sim.host.free(b, rec.capture())
        with mx.Annotated(rec, f"ProfilerStep#{step}"):
            with mx.At(rec, 68):
                x = sim.new(batch * D_IN * F32, cost=40)
                y = sim.new(batch * I64, cost=40)
                sim.free(st.pop("x", None), st.pop("y", None))
            with mx.At(rec, 69):
                a, out = self.forward(x, batch)
                sim.free(st.pop("out", None))
            with mx.At(rec, 70), mx.Call(rec, "cross_entropy", FUNCTIONAL, 3462):
                lsm = sim.new(batch * D_OUT * F32)
                loss = sim.new(F32)
                tw = sim.new(F32)
                sim.free(st.pop("loss", None))
            with mx.At(rec, 71), mx.Call(rec, "backward", mx.TENSOR, 648), \
                    mx.Call(rec, "backward", mx.AUTOGRAD, 347):
                with mx.Call(rec, "_make_grads", mx.AUTOGRAD, 220):
                    ones = sim.new(F32)
                rec.on_autograd_thread = True      # the engine's device thread: no Python frames
                g_lsm = sim.new(batch * D_OUT * F32)        # nll_loss_backward
                sim.free(ones, tw)
                g_out = sim.new(batch * D_OUT * F32)        # log_softmax_backward
                sim.free(g_lsm, lsm)
                g_a = sim.new(batch * HIDDEN * F32)         # fc2: grad input, weight, bias
                sim.cublas()
                grads = {"fc2.weight": sim.new(D_OUT * HIDDEN * F32), "fc2.bias": sim.new(D_OUT * F32)}
                sim.free(g_out)
                g_h = sim.new(batch * HIDDEN * F32)         # threshold_backward
                sim.free(g_a, a)
                grads["fc1.weight"] = sim.new(HIDDEN * D_IN * F32)
                grads["fc1.bias"] = sim.new(HIDDEN * F32)
                sim.free(g_h)
                rec.on_autograd_thread = False
            with mx.At(rec, 72), mx.Annotated(rec, "Optimizer.step#AdamW.step"), \
                    mx.Call(rec, "wrapper", OPTIMIZER, 516), mx.Call(rec, "_use_grad", OPTIMIZER, 79), \
                    mx.Call(rec, "step", ADAM, 236):
                if "opt" not in st:                   # lazy state initialisation
                    st["opt"] = []
                    for name in grads:
                        numel = st["numel"][name]
                        with mx.Call(rec, "_init_group", ADAM, 190):
                            st["opt"].append(sim.new(F32))
                        with mx.Call(rec, "_init_group", ADAM, 197):
                            st["opt"].append(sim.new(numel * F32))
                        with mx.Call(rec, "_init_group", ADAM, 201):
                            st["opt"].append(sim.new(numel * F32))
                rec.advance(900)
            with mx.At(rec, 73), mx.Annotated(rec, "Optimizer.zero_grad#AdamW.zero_grad"), \
                    mx.Call(rec, "zero_grad", OPTIMIZER, 1015):
                sim.free(*grads.values())
            probs, peak = self.probe(batch, 1 if batch != BATCH else 0)
            with mx.At(rec, 75):
                sim.free(st.pop("probs", None))
        st.update(x=x, y=y, out=out, loss=loss, probs=probs, host_batch=(xb, yb))
        st["peaks"].append(peak)
        rec.advance(120)

    def evaluate(self, st: dict) -> None:
        sim, rec = self.sim, self.rec
        host = sim.host
        rec.user_metadata = "phase=eval"
        with mx.At(rec, 79), mx.Annotated(rec, "evaluate"), mx.Call(rec, "evaluate", TRAIN, 86):
            xe = host.malloc(EVAL_BATCH * D_IN * F32, [rec.frame(*f) for f in PIN_STACK])
            rec.advance(300)                                   # static_x.copy_, graph.replay()
            with mx.At(rec, 89):
                out_host = host.malloc(EVAL_BATCH * D_OUT * F32, rec.capture())
            st["out_host"] = out_host
            with mx.At(rec, 92):
                sim.current = MEM_POOL
                st["kv"] = sim.new(2 * MIB)
                sim.current = DEFAULT_POOL
            with mx.At(rec, 94):
                big = sim.new(PROBE_BATCH * D_IN * F32)
            with mx.At(rec, 95):
                try:
                    self.forward(big, PROBE_BATCH)
                    raise SystemExit("make_newer_snapshot: the probe batch was expected not to fit")
                except mx.OutOfMemory:
                    pass
            with mx.At(rec, 97):
                sim.free(big)
            with mx.At(rec, 98), mx.Call(rec, "empty_cache", MEMORY, 224):
                sim.empty_cache()
            with mx.At(rec, 87):
                host.free(xe, rec.capture())
            with mx.At(rec, 99):
                host.empty_cache(rec.capture())

    def run(self) -> None:
        sim, rec = self.sim, self.rec
        st: dict = {"peaks": []}
        with mx.Call(rec, "<module>", TRAIN, 103), mx.Call(rec, "main", TRAIN, 51):
            params = self.params()
            st["numel"] = {"fc2.weight": D_OUT * HIDDEN, "fc2.bias": D_OUT,
                           "fc1.weight": HIDDEN * D_IN, "fc1.bias": HIDDEN}
            rec.advance(5000)
            # a torch.cuda.MemPool: communication buffers and flags
            with mx.At(rec, 56):
                sim.current = MEM_POOL
                comm = [sim.new(3 * MIB, cost=30) for _ in range(3)]
                with mx.At(rec, 57):
                    flags = sim.new(1024 * 4)
                sim.current = DEFAULT_POOL
            with mx.At(rec, 58):
                sim.free(comm.pop(1))
            with mx.At(rec, 59):
                static_x = sim.new(EVAL_BATCH * D_IN * F32)
            # CUDA graph capture: torch.cuda.graph empties the cache, then the capture allocates
            # from the graph's private pool on the capture stream
            with mx.At(rec, 61), mx.Call(rec, "__enter__", GRAPHS, 182):
                with mx.Call(rec, "empty_cache", MEMORY, 224):
                    sim.empty_cache()
            with mx.At(rec, 62):
                sim.current = GRAPH_POOL
                _a, static_out = self.forward(static_x, EVAL_BATCH)
                sim.free(_a)                        # no_grad: nothing saved
                sim.current = DEFAULT_POOL
            rec.advance(20_000)                     # torch.compile(model.probe): compiled lazily
            for step in range(STEPS):
                self.step(step, st)
                if step == EVAL_AT:
                    self.evaluate(st)
            rec.user_metadata = "phase=report"
            with mx.At(rec, 80):
                st["report"] = sim.host.malloc(STEPS * F32, rec.capture())
        self.kept = (params, comm, flags, static_x, static_out, st)


def build(truncated: bool) -> tuple[dict, dict]:
    """The snapshot and facts about it (for --verify and the summary)."""
    job = Job()
    job.run()
    sim, rec = job.sim, job.rec
    trace = rec.trace
    max_entries = TRUNCATED_MAX_ENTRIES if truncated else FULL_MAX_ENTRIES
    if truncated:
        assert len(trace) > max_entries
        kept = trace[-max_entries:]
    else:
        assert len(trace) < max_entries
        kept = trace
    settings = mx.default_allocator_settings()
    settings[S("trace_alloc_max_entries")] = [max_entries]  # PR #179276: per device
    settings[S("trace_alloc_overflowed")] = [truncated]
    snapshot = {
        S("segments"): sim.segments(),
        S("device_traces"): [kept],
        S("allocator_settings"): settings,
        S("external_annotations"): rec.annotations,
        S("host_segments"): sim.host.snapshot_segments(),
        S("host_traces"): [sim.host.trace],
    }
    assert len(rec.entry_pools) == len(trace)
    facts = {"full_trace": trace, "entry_pools": rec.entry_pools}
    return snapshot, facts


def render(truncated: bool) -> bytes:
    snapshot, _ = build(truncated)
    buf = io.BytesIO()
    pickle.dump(snapshot, buf, protocol=4)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# --verify: the fixture's own consistency, with the independent replayer of
# tests/resources/test_example.py (each pool's entries on their own) for the device, and a replay
# of the host trace (one block per segment).

def verify(truncated: bool) -> list[str]:
    te = _load("memlens_test_example", ROOT / "tests" / "resources" / "test_example.py")
    problems: list[str] = []
    snapshot, facts = build(truncated)
    # one pickle, so that the trace's frame lists stay the objects of the segments' and blocks'
    data, full = pickle.loads(pickle.dumps((snapshot, facts["full_trace"]), protocol=4))
    pools = facts["entry_pools"]
    segs = data["segments"]
    # segment invariants
    for s in segs + data["host_segments"]:
        where = f"segment {s['address']:#x} (device {s['device']})"
        addr = s["address"]
        for b in s["blocks"]:
            if b["address"] != addr:
                problems.append(f"{where}: blocks not contiguous at {addr:#x}")
            addr += b["size"]
        active = [b for b in s["blocks"] if b["state"] == "active_allocated"]
        if sum(b["size"] for b in s["blocks"]) != s["total_size"]:
            problems.append(f"{where}: block sizes != total_size")
        if sum(b["size"] for b in active) != s["allocated_size"] or s["active_size"] != s["allocated_size"]:
            problems.append(f"{where}: allocated_size/active_size")
        if sum(b["requested_size"] for b in active) != s["requested_size"]:
            problems.append(f"{where}: requested_size")
    # device: each pool's entries of the whole trace replayed on their own
    for pool in sorted(set(pools)):
        sub = [e for e, p in zip(full, pools) if p == pool]
        mine = [s for s in segs if s["segment_pool_id"] == pool]
        try:
            te.check_replay(sub, mine)
        except te.Failure as e:
            problems.append(f"pool {pool}: replay of its {len(sub)} entries: {e}")
        streams = {e["stream"] for e in sub} | {s["stream"] for s in mine}
        if len(streams) != 1:
            problems.append(f"pool {pool}: streams {streams}")
    kept = data["device_traces"][0]
    if kept != full[len(full) - len(kept):]:
        problems.append("the kept device trace is not the end of the whole trace")
    # host: replay (no split: one block per segment)
    hs: dict[int, list] = {}
    for i, e in enumerate(data["host_traces"][0]):
        a = e["action"]
        if a == "segment_alloc":
            if e["addr"] in hs or e["size"] & (e["size"] - 1):
                problems.append(f"host entry {i}: segment_alloc at {e['addr']:#x} size {e['size']}")
            hs[e["addr"]] = [e["size"], 0, "inactive", e["frames"]]
        elif a == "segment_free":
            b = hs.pop(e["addr"], None)
            if b is None or b[2] != "inactive" or b[0] != e["size"]:
                problems.append(f"host entry {i}: segment_free of {e['addr']:#x}: {b}")
        elif a in ("alloc", "free_requested", "free_completed"):
            b = hs.get(e["addr"])
            want = {"alloc": "inactive", "free_requested": "active_allocated",
                    "free_completed": "active_pending_free"}[a]
            if b is None or b[2] != want or (a == "alloc" and b[0] != next_pow2(e["size"])) or \
                    (a != "alloc" and b[1] != e["size"]):
                problems.append(f"host entry {i}: {a} at {e['addr']:#x}: {b}")
                continue
            b[1] = e["size"]
            b[2] = {"alloc": "active_allocated", "free_requested": "active_pending_free",
                    "free_completed": "inactive"}[a]
        else:
            problems.append(f"host entry {i}: action {a}")
    got = {a: (v[0], v[1], v[2]) for a, v in hs.items()}
    want = {s["address"]: (s["total_size"], s["blocks"][0]["requested_size"], s["blocks"][0]["state"])
            for s in data["host_segments"] if len(s["blocks"]) == 1}
    if got != want or len(want) != len(data["host_segments"]):
        problems.append(f"host: replayed {got} != host_segments {want}")
    # truncation: what the ring buffer lost shows
    starts = set()
    early_frees = 0
    for e in kept:
        if e["action"] == "alloc":
            starts.add(e["addr"])
        elif e["action"] == "free_requested" and e["addr"] not in starts:
            early_frees += 1
    live = [b for s in segs for b in s["blocks"] if b["state"] == "active_allocated"]
    ghosts = 0
    for b in live:
        last_alloc = max((i for i, e in enumerate(kept) if e["action"] == "alloc" and e["addr"] == b["address"]),
                         default=-1)
        ghosts += last_alloc < 0
    if truncated and not (early_frees and ghosts):
        problems.append(f"truncated: {early_frees} frees of earlier blocks, {ghosts} live blocks without alloc")
    if not truncated and (early_frees or ghosts):
        problems.append(f"whole trace: {early_frees} frees of unknown blocks, {ghosts} live blocks without alloc")
    per_pool = {}
    for s in segs:
        p = per_pool.setdefault(s["segment_pool_id"], [0, 0, 0])
        p[0] += 1
        p[1] += s["total_size"]
        p[2] += s["allocated_size"]
    print(f"make_newer_snapshot: {'truncated' if truncated else 'whole'}: device trace {len(kept)} of "
          f"{len(full)} entries, {len(segs)} segments, pools (segments, reserved, allocated) {per_pool}, "
          f"host trace {len(data['host_traces'][0])} entries, {len(data['host_segments'])} host segments, "
          f"{early_frees} frees of blocks allocated before the kept entries, {ghosts} live blocks without alloc, "
          f"{sum(1 for e in kept if any('fx_node_name' in f for f in e['frames']))} entries with FX frames")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", type=Path, help="the pickle to write")
    ap.add_argument("--truncated", action="store_true",
                    help="keep only the last 400 device trace entries (an overflowed ring buffer)")
    ap.add_argument("--verify", action="store_true",
                    help="check the fixture's consistency (replays); exit 1 on a problem")
    args = ap.parse_args()
    if not args.output and not args.verify:
        ap.error("-o FILE or --verify is required")
    if args.verify:
        problems = verify(args.truncated)
        for p in problems:
            print(f"make_newer_snapshot: INCONSISTENT: {p}", file=sys.stderr)
        if problems:
            return 1
    if args.output:
        data = render(args.truncated)
        args.output.write_bytes(data)
        print(f"make_newer_snapshot: wrote {args.output} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
