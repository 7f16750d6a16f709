#!/usr/bin/env python3
"""Writes a large, realistic PyTorch CUDA memory snapshot pickle for benchmarks.

    make_large_snapshot.py OUT [--entries N | --size-mb M] [--seed S] [--check]

The file has the dict layout of torch 2.10/2.11 (segments, device_traces, allocator_settings,
external_annotations; trace entries with time_us, compile_context 'N/A', user_metadata '' and
frames), pickled with protocol 4 exactly as Python's own pickler writes it: the bytes are those
of pickle._Pickler(protocol=4) applied to the equivalent object graph (--check verifies this on
a small file), but the trace is generated and written as a stream, so memory stays small
whatever N is.

What is in it:
  * a simulated caching allocator (small/large pools, 2 MiB / 20 MiB segments, best-fit with
    splitting and merging, occasional empty_cache) drives device_traces[0]: alloc,
    free_requested + free_completed pairs (a few completed late, as after record_stream),
    segment_alloc when a new segment is needed, segment_free from empty_cache; time_us
    increases; addresses are 0x7f...; stream 0;
  * a pool of a few thousand distinct frames (Python frames, and C++ frames with '??', '' or
    basename filenames, line 0 and long demangled names) and a few hundred call paths of 10-40
    frames. As in torch, every frame dict object is shared by all the lists that hold it (so
    pickle memoises it), each alloc and each free has its own frames list, free_completed shares
    the list of its free_requested, segment_alloc shares the list of the alloc that caused it;
  * allocations made before recording started (weights): they appear as blocks without an alloc
    in the trace, and a few of them are freed during the trace;
  * final segments and blocks consistent with the trace: every block alive at the end is
    active_allocated with the frames list of its alloc entry (the same object), free blocks are
    inactive with [] frames, block sizes add up to total_size.

The trace is generated twice with the same seed: once to learn the final state (which goes
first in the file, under 'segments'), then again while writing.
"""
import argparse
import bisect
import io
import os
import pickle
import random
import struct
import sys
import time

KiB = 1024
MiB = 1024 * KiB

# --- allocator constants (CUDACachingAllocator)
SMALL_SIZE = 1 * MiB  # requests up to this use the small pool
SMALL_BUFFER = 2 * MiB  # small pool segment
LARGE_BUFFER = 20 * MiB  # large pool segment for requests below MIN_LARGE_ALLOC
MIN_LARGE_ALLOC = 10 * MiB
ROUND_LARGE = 2 * MiB
MIN_BLOCK = 512
ADDRESS_BASE = 0x7F3C_0000_0000
T0 = 1_783_874_422_287_973  # µs since the epoch
FRAME_POOL = 900  # distinct frames: real files have 300 to 1000


def fresh(text):
    """A new str object equal to text, as torch makes one (py::str from a std::string) for each
    field it converts: pickle then writes it out again instead of a memo get. '' and one-character
    latin-1 strings come back as CPython's shared singletons, as they do from pybind11."""
    return text.encode('utf-8', 'surrogatepass').decode('utf-8', 'surrogatepass')

# --------------------------------------------------------------------------------------------
# Frames and call paths


def make_frames(rng, count):
    """Returns (frames, paths): frame dicts (shared objects) and call paths (lists of frame indices)."""
    frames = []

    def s(text):  # a str object of its own for each frame dict, as torch writes them (py::str per
        return fresh(text)  # field of each symbolized frame; '' and 1-char strings are CPython's singletons)

    def frame(name, filename, line):
        frames.append({'name': s(name), 'filename': s(filename), 'line': line})
        return len(frames) - 1

    # allocator internals on top of every stack
    top = [
        frame('torch::unwind::unwind()', '??', 0),
        frame('torch::CapturedTraceback::gather(bool, bool, bool)', '??', 0),
        frame('torch::cuda::(anonymous namespace)::gather_with_cpp()', 'memory_snapshot.cpp', 0),
        frame('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, '
              'CUstream_st*)', 'CUDACachingAllocator.cpp', 0),
        frame('c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, '
              'unsigned long, CUstream_st*)', '', 0),
        frame('c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)', '', 0),
    ]
    free_top = [
        top[0], top[1], top[2],
        frame('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::'
              'CUDACachingAllocator::Native::Block*)', 'CUDACachingAllocator.cpp', 0),
        frame('c10::cuda::CUDACachingAllocator::Native::local_raw_delete(void*)', '', 0),
        frame('c10::StorageImpl::~StorageImpl()', '??', 0),
        frame('c10::TensorImpl::~TensorImpl()', '??', 0),
    ]
    bottom = [
        frame('_PyEval_EvalFrameDefault', '??', 0),
        frame('PyEval_EvalCode', '??', 0),
        frame('_PyRun_SimpleFileObject', '??', 0),
        frame('_PyRun_AnyFileObject', '??', 0),
        frame('Py_RunMain', '??', 0),
        frame('Py_BytesMain', '??', 0),
        frame('__libc_start_main', '??', 0),
        frame('_start', '??', 0),
        frame('<module>', '/home/user/project/train.py', 312),
    ]
    # CPython internals between Python frames (stacks='all': native frames outnumber Python ones)
    eval_frames = [frame(n, f, 0) for n, f in (
        ('_PyEval_EvalFrameDefault', '??'), ('PyMethod_New', '??'), ('_PyObject_MakeTpCall', '??'),
        ('_PyObject_Call_Prepend', '??'), ('_PyFunction_Vectorcall', '??'), ('PyObject_Call', '??'),
        ('slot_tp_call', '??'), ('_PyObject_FastCallDictTstate', '??'), ('method_vectorcall', 'classobject.c'),
        ('cfunction_call', 'methodobject.c'), ('_PyEval_Vector', 'ceval.c'), ('PyObject_Vectorcall', 'call.c'),
        ('torch::autograd::THPVariable_apply_(_object*, _object*)', '??'),
        ('torch::PythonArgParser::raw_parse(_object*, _object*, _object*, _object**)', 'python_arg_parser.cpp'))]

    # native operator frames: long demangled names
    types = ['at::Tensor', 'c10::ArrayRef<long>', 'c10::SymInt', 'c10::Scalar const&', 'std::optional<at::Tensor>',
             'c10::List<std::optional<at::Tensor> > const&', 'c10::TensorOptions const&', 'c10::DispatchKeySet',
             'std::optional<c10::MemoryFormat>', 'at::Tensor const&', 'bool', 'long', 'double']
    ops = ['add', 'mul', 'matmul', 'mm', 'bmm', 'addmm', 'softmax', 'gelu', 'layer_norm', 'native_layer_norm',
           'embedding', 'dropout', 'cat', 'index', 'scaled_dot_product_attention', '_efficient_attention_forward',
           'empty', 'empty_strided', 'clone', 'contiguous', 'to', 'copy_', 'sum', 'mean', 'where', 'view', 'silu',
           'cross_entropy_loss', 'nll_loss_forward', 'log_softmax', 'transpose', 'expand', 'baddbmm', 'rsqrt']
    files = ['??', '??', '??', '', 'RegisterCUDA_0.cpp', 'VariableType_1.cpp', 'VariableType_3.cpp',
             'ADInplaceOrView_0.cpp', 'TraceType_2.cpp', 'Functions.cpp', 'python_variable_methods.cpp']
    native = []
    n_native = count * 3 // 5
    for i in range(n_native):
        op = ops[i % len(ops)]
        args = ', '.join(rng.choice(types) for _ in range(rng.randint(2, 7)))
        kind = rng.randrange(4)
        if kind == 0:
            name = (f'c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<'
                    f'c10::CompileTimeFunctionPointer<at::Tensor ({args}), &at::(anonymous namespace)::wrapper_CUDA_{op}_'
                    f'{i}>, at::Tensor, c10::guts::typelist::typelist<{args}> >, at::Tensor ({args})>::call('
                    f'c10::OperatorKernel*, c10::DispatchKeySet, {args})')
        elif kind == 1:
            name = f'at::_ops::{op}_{i}::call({args})'
        elif kind == 2:
            name = f'torch::autograd::VariableType::(anonymous namespace)::{op}_{i}(c10::DispatchKeySet, {args})'
        else:
            name = f'at::native::(anonymous namespace)::{op}_kernel_impl_{i}({args})'
        native.append(frame(name, rng.choice(files), 0))

    # Python frames: model code, torch.nn, optimizer
    modules = [f'/home/user/project/model/{m}.py' for m in
               ('attention', 'mlp', 'embedding', 'block', 'transformer', 'loss', 'data', 'optim_utils')]
    modules += ['/usr/lib/python3/dist-packages/torch/nn/modules/module.py',
                '/usr/lib/python3/dist-packages/torch/nn/functional.py',
                '/usr/lib/python3/dist-packages/torch/optim/adamw.py',
                '/usr/lib/python3/dist-packages/torch/optim/optimizer.py',
                '/usr/lib/python3/dist-packages/torch/_tensor.py',
                '/usr/lib/python3/dist-packages/torch/autograd/__init__.py']
    funcs = ['forward', '_call_impl', '_wrapped_call_impl', 'backward', 'step', '_single_tensor_adamw',
             '_multi_tensor_adamw', 'scaled_dot_product_attention', 'linear', 'gelu', 'layer_norm', 'train_step',
             'compute_loss', '__getitem__', 'apply_rotary', 'split_heads', 'merge_heads', 'zero_grad']
    python = []
    for i in range(count - n_native):
        python.append(frame(rng.choice(funcs), rng.choice(modules), rng.randint(10, 2000)))

    # call paths: allocator top, a few native frames, Python frames each under one to four
    # interpreter frames, the program's bottom frames. As in real files (stacks='all'), 14 to 150
    # frames, about 60 on average for allocations and 40 for frees.
    def path(for_free):
        head = list(free_top if for_free else top)
        target = int(rng.triangular(14, 100, 30)) if for_free else int(rng.triangular(20, 150, 45))
        body = []
        n_nat = rng.randint(1, 8)
        body += rng.sample(native, n_nat)
        while len(head) + len(body) + 3 < target:
            body.append(rng.choice(python))
            for _ in range(rng.randint(1, 4)):
                body.append(rng.choice(eval_frames))
        tail = bottom[-rng.randint(1, len(bottom)):]
        p = (head + body + tail)[:target]
        if len(p) < 10:
            p += bottom[:10 - len(p)]
        return p

    alloc_paths = [path(False) for _ in range(300)]
    free_paths = [path(True) for _ in range(100)]
    empty_cache_path = (free_top[:3] +
                        [frame('c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::emptyCache()',
                               'CUDACachingAllocator.cpp', 0),
                         frame('empty_cache', '/usr/lib/python3/dist-packages/torch/cuda/memory.py', 222)] +
                        [rng.choice(python) for _ in range(4)] + bottom)
    return frames, alloc_paths, free_paths, empty_cache_path


# --------------------------------------------------------------------------------------------
# Allocator simulation


class Block:
    __slots__ = ('addr', 'size', 'req', 'seg', 'prev', 'next', 'free', 'ctx', 'path')

    def __init__(self, addr, size, seg):
        self.addr, self.size, self.seg = addr, size, seg
        self.req = 0
        self.prev = self.next = None
        self.free = True
        self.ctx = -1  # context serial of its alloc; -1: allocated before recording
        self.path = -1


class Seg:
    __slots__ = ('addr', 'size', 'small', 'first', 'used')

    def __init__(self, addr, size, small):
        self.addr, self.size, self.small = addr, size, small
        self.first = None
        self.used = 0  # bytes in blocks that are not free


def round_size(n):
    return MIN_BLOCK if n < MIN_BLOCK else MIN_BLOCK * ((n + MIN_BLOCK - 1) // MIN_BLOCK)


def segment_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


class Allocator:
    def __init__(self):
        self.free_sets = {True: [], False: []}  # small? -> sorted [(size, addr)]
        self.free_blocks = {}  # addr -> free Block
        self.segments = {}  # addr -> Seg
        self.next_addr = ADDRESS_BASE
        self.released = {}  # size -> [addr] of freed segment ranges, reused by size

    def _add_free(self, b):
        bisect.insort(self.free_sets[b.seg.small], (b.size, b.addr))
        self.free_blocks[b.addr] = b

    def _remove_free(self, b):
        lst = self.free_sets[b.seg.small]
        i = bisect.bisect_left(lst, (b.size, b.addr))
        del lst[i]
        del self.free_blocks[b.addr]

    def find(self, size):
        """Best-fit free block for a rounded size, or None."""
        small = size <= SMALL_SIZE
        lst = self.free_sets[small]
        i = bisect.bisect_left(lst, (size, 0))
        if i == len(lst):
            return None
        sz, addr = lst[i]
        if not small and sz > size + 64 * MiB and sz > 2 * size:
            return None  # do not carve a small request out of a huge cached block
        return self.free_blocks[addr]

    def new_segment(self, size):
        seg_size = segment_size(size)
        addrs = self.released.get(seg_size)
        if addrs:
            addr = addrs.pop()
        else:
            addr = self.next_addr
            self.next_addr += seg_size
        seg = Seg(addr, seg_size, size <= SMALL_SIZE)
        b = Block(addr, seg_size, seg)
        seg.first = b
        self.segments[addr] = seg
        self._add_free(b)
        return seg, b

    def take(self, b, size, req):
        """Allocates `size` (rounded) bytes at the start of free block b; splits the rest off."""
        self._remove_free(b)
        rest = b.size - size
        if (b.seg.small and rest >= MIN_BLOCK) or (not b.seg.small and rest > SMALL_SIZE):
            r = Block(b.addr + size, rest, b.seg)
            r.next = b.next
            if r.next:
                r.next.prev = r
            r.prev = b
            b.next = r
            b.size = size
            self._add_free(r)
        b.free = False
        b.req = req
        b.seg.used += b.size
        return b

    def release(self, b):
        b.free = True
        b.seg.used -= b.size
        b.ctx = -1
        b.path = -1
        for nb in (b.prev, b.next):
            if nb is not None and nb.free:
                self._remove_free(nb)
                if nb is b.prev:  # merge b into prev
                    nb.size += b.size
                    nb.next = b.next
                    if b.next:
                        b.next.prev = nb
                    if b.seg.first is b:
                        b.seg.first = nb
                    nb.req = b.req
                    b = nb
                else:  # merge next into b
                    b.size += nb.size
                    b.next = nb.next
                    if nb.next:
                        nb.next.prev = b
        self._add_free(b)
        return b

    def free_segments(self):
        """Segments whose only block is free (what empty_cache would release), in the order torch
        releases them: the large pool, then the small one, each in its free set's (stream, size,
        address) order (release_blocks)."""
        return sorted((s for s in self.segments.values() if s.used == 0), key=lambda s: (s.small, s.size, s.addr))

    def drop_segment(self, seg):
        self._remove_free(seg.first)
        del self.segments[seg.addr]
        self.released.setdefault(seg.size, []).append(seg.addr)


# --------------------------------------------------------------------------------------------
# The workload: training steps, each a forward (activations pile up) and a backward (they go)


class Workload:
    def __init__(self, seed, entries):
        self.seed = seed
        self.entries = entries

    def run(self, emit, release, annotate):
        """Generates the trace. emit(action, addr, size, time_us, ctx, path) for each entry, where
        ctx is a context serial (entries with the same serial share one frames list) and path an
        index into alloc_paths (ctx >= 0, path >= 0), free_paths (path encoded as -2 - i) or the
        empty_cache path (-1). release(ctx) says a context is not used by any later entry.
        Returns the allocator at the end."""
        rng = random.Random(self.seed)
        self.frames, self.alloc_paths, self.free_paths, self.empty_cache_path = make_frames(random.Random(self.seed ^ 0x5EED), FRAME_POOL)
        a = Allocator()
        n_paths = len(self.alloc_paths)
        # each call path allocates tensors of one to three typical shapes
        path_sizes = []
        for p in range(n_paths):
            large = rng.random() < 0.22
            sizes = []
            for _ in range(rng.randint(1, 3)):
                if large:
                    sizes.append(int(2 ** rng.uniform(20, 26)) // 4 * 4)  # 1 MiB .. 64 MiB
                else:
                    sizes.append(int(2 ** rng.uniform(6, 20)) // 4 * 4)  # 64 B .. 1 MiB
            path_sizes.append(sizes)
        cum_weights = []
        acc = 0.0
        for p in range(n_paths):
            acc += 1.0 / (p + 1) ** 0.8  # Zipf-like: some ops allocate far more often
            cum_weights.append(acc)

        # weights and optimizer state, allocated before recording started (not in the trace)
        persistent = []
        for _ in range(260):
            size = int(2 ** rng.uniform(12, 25.5)) // 512 * 512 or 512
            rs = round_size(size)
            b = a.find(rs)
            if b is None:
                _, b = a.new_segment(rs)
            persistent.append(a.take(b, rs, size))

        live = []  # blocks allocated during the trace, most recent last
        pending = []  # (due entry, block, ctx): free_requested written, free_completed not yet
        now = T0
        i = 0
        ctx_serial = 0
        N = self.entries
        step_len = max(2000, min(40000, N // 25))
        base_live = 250
        peak_live = 1500

        def new_ctx():
            nonlocal ctx_serial
            ctx_serial += 1
            return ctx_serial - 1

        def put(action, addr, size, ctx, path):
            nonlocal i, now
            now += rng.randint(1, 40)
            emit(action, addr, size, now, ctx, path)
            i += 1

        def complete(b, ctx, path):
            put('free_completed', b.addr, b.req, ctx, path)
            release(ctx)
            a.release(b)

        step = 0
        while i < N:
            remaining = N - i
            # late free_completed (record_stream) once their time has come, or at the end
            if pending and (pending[0][0] <= i or remaining <= len(pending)):
                _, b, ctx, path = pending.pop(0)
                complete(b, ctx, path)
                continue
            pos = i % step_len
            if pos == 0 and i > 0:
                step += 1
                annotate('END', 'Optimizer.step#AdamW.step', now)
                if step % 10 == 0:  # torch.cuda.empty_cache() now and then
                    segs = a.free_segments()
                    if segs and len(segs) + 50 + len(pending) < remaining:
                        ctx = new_ctx()
                        for s in segs:
                            put('segment_free', s.addr, s.size, ctx, -1)
                            a.drop_segment(s)
                        release(ctx)
                        continue
            if pos == step_len * 9 // 10:
                annotate('START', 'Optimizer.step#AdamW.step', now)
            phase = pos / step_len
            target = base_live + (peak_live - base_live) * (phase / 0.6 if phase < 0.6 else (1 - phase) / 0.4)
            want_alloc = rng.random() < (0.75 if len(live) < target else 0.25)
            if remaining - len(pending) <= 2 and live:
                want_alloc = False if remaining - len(pending) == 2 else True
            if not live:
                want_alloc = True
            if want_alloc:
                p = bisect.bisect_left(cum_weights, rng.random() * acc)
                p = min(p, n_paths - 1)
                req = rng.choice(path_sizes[p])
                if rng.random() < 0.1:  # dynamic shapes
                    req = max(1, int(req * rng.uniform(0.5, 1.5)))
                rs = round_size(req)
                b = a.find(rs)
                need = 1 if b is not None else 2
                if need > remaining - len(pending):
                    # no room for segment_alloc + alloc: the smallest request into a cached block
                    rs = req = MIN_BLOCK
                    b = a.find(rs)
                    if b is None:  # nothing cached at all: a snapshot marker fills the last slot
                        active = sum(s.used for s in a.segments.values())
                        put('snapshot', 0, active, -1, 0)
                        continue
                ctx = new_ctx()
                if b is None:
                    seg, b = a.new_segment(rs)
                    put('segment_alloc', seg.addr, seg.size, ctx, p)
                a.take(b, rs, req)
                b.ctx, b.path = ctx, p
                put('alloc', b.addr, req, ctx, p)
                release(ctx)
                live.append(b)
            else:
                if persistent and rng.random() < 0.0005:  # a weight freed during the trace
                    b = persistent.pop(rng.randrange(len(persistent)))
                elif rng.random() < 0.7:
                    b = live.pop()
                else:
                    k = rng.randrange(len(live))
                    live[k], live[-1] = live[-1], live[k]
                    b = live.pop()
                fp = rng.randrange(len(self.free_paths))
                ctx = new_ctx()
                put('free_requested', b.addr, b.req, ctx, -2 - fp)
                if rng.random() < 0.01 and remaining > 200:
                    pending.append((i + rng.randint(1, 30), b, ctx, -2 - fp))
                else:
                    complete(b, ctx, -2 - fp)
        assert not pending
        self.end_time = now
        return a

    def path_frames(self, path):
        if path >= 0:
            return self.alloc_paths[path]
        if path == -1:
            return self.empty_cache_path
        return self.free_paths[-2 - path]


# --------------------------------------------------------------------------------------------
# A protocol-4 pickler that writes what pickle._Pickler writes, with the trace list streamed


class StreamPickler:
    FRAME_TARGET = 64 * 1024

    def __init__(self, out):
        self.out = out
        self.buf = bytearray()
        self.memo = {}  # id -> memo index, for objects that may be referenced again
        self.keep = {}  # id -> object, so that ids stay unique while memoised
        self.count = 0  # memo entries so far (MEMOIZE opcodes written)
        # list contents (tuple of item ids) -> the bytes of its batch when every item is memoised
        # (frames lists: a run of memo gets); `bodied` holds the ids those bytes depend on
        self.bodies = {}
        self.bodied = set()

    def start(self):
        self.out.write(b'\x80\x04')

    def finish(self):
        self.buf += b'.'
        self.commit(True)

    def commit(self, force=False):
        buf = self.buf
        if len(buf) >= self.FRAME_TARGET or (force and buf):
            if len(buf) >= 4:
                self.out.write(b'\x95' + struct.pack('<Q', len(buf)))
            self.out.write(buf)
            self.buf = bytearray()

    def memoize(self, obj, record):
        self.buf += b'\x94'
        if record:
            self.memo[id(obj)] = self.count
            self.keep[id(obj)] = obj
        self.count += 1

    def forget(self, obj):
        self.memo.pop(id(obj), None)
        self.keep.pop(id(obj), None)
        if id(obj) in self.bodied:  # its id may be reused by another object: drop what used it
            self.bodies.clear()
            self.bodied.clear()

    def list_body(self, obj):
        """The bytes of a list's single batch (MARK gets... APPENDS) when every item is already
        memoised, else None. Cached by the items' ids: frames lists repeat the same stacks."""
        ids = tuple(map(id, obj))
        body = self.bodies.get(ids)
        if body is None:
            memo = self.memo
            idx = [memo.get(i) for i in ids]
            if None in idx:
                return None
            body = b'(' + b''.join(map(self.get, idx)) + b'e'
            self.bodies[ids] = body
            self.bodied.update(ids)
        return body

    def get(self, idx):
        return (b'h' + bytes((idx,))) if idx < 256 else (b'j' + struct.pack('<I', idx))

    def save(self, obj, record=True):
        """Saves like pickle._Pickler.save. record=False: the object is memoised (MEMOIZE is
        written) but never looked up again, so it need not be kept."""
        if len(self.buf) >= self.FRAME_TARGET:
            self.commit()
        x = self.memo.get(id(obj))
        if x is not None:
            self.buf += self.get(x)
            return
        t = type(obj)
        buf = self.buf
        if t is str:
            e = obj.encode('utf-8', 'surrogatepass')
            n = len(e)
            if n <= 0xFF:
                buf += b'\x8c' + bytes((n,)) + e
            else:
                assert n < self.FRAME_TARGET
                buf += b'X' + struct.pack('<I', n) + e
            self.memoize(obj, True)
        elif t is int:
            if 0 <= obj <= 0xFF:
                buf += b'K' + bytes((obj,))
            elif 0 <= obj <= 0xFFFF:
                buf += b'M' + struct.pack('<H', obj)
            elif -0x80000000 <= obj <= 0x7FFFFFFF:
                buf += b'J' + struct.pack('<i', obj)
            else:
                e = pickle.encode_long(obj)
                buf += b'\x8a' + bytes((len(e),)) + e
        elif t is bool:
            buf += b'\x88' if obj else b'\x89'
        elif t is float:
            buf += b'G' + struct.pack('>d', obj)
        elif obj is None:
            buf += b'N'
        elif t is dict:
            buf += b'}'
            self.memoize(obj, record)
            self.batch(list(obj.items()), True)
        elif t is list:
            buf += b']'
            self.memoize(obj, record)
            if 1 < len(obj) <= 1000:
                body = self.list_body(obj)
                # written at once only where pickle would not end a frame inside it (it ends one
                # before an item's save once 64 KiB are buffered)
                if body is not None and len(buf) + len(body) < self.FRAME_TARGET:
                    buf += body
                    return
            self.batch(obj, False)
        elif t is tuple:
            assert 0 < len(obj) <= 3
            for x in obj:
                self.save(x)
            self.buf += (b'\x85', b'\x86', b'\x87')[len(obj) - 1]
            self.memoize(obj, record)
        else:
            raise TypeError(t)

    def batch(self, items, is_dict):
        for start in range(0, len(items), 1000):
            chunk = items[start:start + 1000]
            self.write_chunk(chunk, is_dict)
        # pickle writes nothing more for an exact multiple of 1000 or an empty container

    def write_chunk(self, chunk, is_dict):
        if len(chunk) > 1:
            self.buf += b'('
            if is_dict:
                for k, v in chunk:
                    self.save(k)
                    self.save(v)
                self.buf += b'u'
            else:
                for v in chunk:
                    self.save(v)
                self.buf += b'e'
        elif chunk:
            if is_dict:
                self.save(chunk[0][0])
                self.save(chunk[0][1])
                self.buf += b's'
            else:
                self.save(chunk[0])
                self.buf += b'a'

    def begin_streamed_list(self, n):
        """Starts a list of exactly n items that are then given one by one to streamed_item()."""
        if len(self.buf) >= self.FRAME_TARGET:
            self.commit()
        self.buf += b']'
        self.memoize(None, False)
        self.s_total, self.s_done = n, 0

    def streamed_item(self, obj):
        k = self.s_done
        assert k < self.s_total, 'more items than announced'
        first = k % 1000 == 0
        batch = min(1000, self.s_total - (k - k % 1000))
        if first and batch > 1:
            self.buf += b'('
        self.save(obj, record=False)
        if k % 1000 == batch - 1:
            self.buf += b'e' if batch > 1 else b'a'
        self.s_done = k + 1

    def end_streamed_list(self):
        assert self.s_done == self.s_total, f'{self.s_done} items given, {self.s_total} announced'


# --------------------------------------------------------------------------------------------


def settings():
    return {'PYTORCH_CUDA_ALLOC_CONF': '', 'max_split_size': -1, 'garbage_collection_threshold': 0.0,
            'expandable_segments': False, 'pinned_num_register_threads': 1, 'release_lock_on_cudamalloc': False,
            'pinned_use_cuda_host_register': False, 'graph_capture_record_stream_reuse': False,
            'roundup_power2_divisions': {str(1 << k): 0 for k in range(16)}}


class Generator:
    """Runs the workload twice: pass 1 learns the final state (segments and blocks, which come
    first in the file); pass 2 produces the trace entries for writing."""

    def __init__(self, seed, entries):
        self.seed, self.entries = seed, entries
        self.wl = Workload(seed, entries)
        self.final = self.wl.run(lambda *a: None, lambda c: None, lambda *a: None)
        self.frames = self.wl.frames  # the one set of frame dicts, shared by every list
        self.lists = {}  # context serial -> frames list object, while the context is in use
        self.segments = self._segments()

    def frames_list(self, ctx, path):
        lst = self.lists.get(ctx)
        if lst is None:
            lst = [self.frames[f] for f in self.wl.path_frames(path)]
            self.lists[ctx] = lst
        return lst

    def _segments(self):
        segs = []
        for addr, s in sorted(self.final.segments.items()):
            blocks = []
            b = s.first
            alloc = requested = 0
            while b is not None:
                if b.free:
                    blocks.append({'address': b.addr, 'size': b.size, 'requested_size': b.req, 'state': 'inactive',
                                   'frames': []})
                else:
                    frames = self.frames_list(b.ctx, b.path) if b.ctx >= 0 else []
                    blocks.append({'address': b.addr, 'size': b.size, 'requested_size': b.req,
                                   'state': 'active_allocated', 'frames': frames})
                    alloc += b.size
                    requested += b.req
                b = b.next
            assert sum(x['size'] for x in blocks) == s.size
            segs.append({'device': 0, 'address': s.addr, 'total_size': s.size, 'allocated_size': alloc,
                         'active_size': alloc, 'requested_size': requested, 'stream': 0,
                         'segment_type': 'small' if s.small else 'large', 'segment_pool_id': (0, 0),
                         'is_expandable': False, 'frames': [], 'blocks': blocks})
        return segs

    def run_trace(self, on_entry, on_release, annotations):
        """Pass 2: calls on_entry(dict) for each trace entry in order, on_release(list) when a
        frames list is used by no later entry."""
        wl = Workload(self.seed, self.entries)

        def emit(action, addr, size, t, ctx, path):
            frames = self.frames_list(ctx, path) if ctx >= 0 else []
            on_entry({'action': action, 'addr': addr, 'size': size, 'stream': 0, 'time_us': t,
                      'compile_context': fresh('N/A'), 'user_metadata': '', 'frames': frames})

        def release(ctx):
            lst = self.lists.pop(ctx, None)
            if lst is not None:
                on_release(lst)

        def annotate(stage, name, t):
            annotations.append({'stage': stage, 'name': name, 'device': 0, 'time_us': t})

        wl.run(emit, release, annotate)
        self.end_time = wl.end_time


def write_snapshot(path, seed, entries):
    """Streams the snapshot to `path`; returns the Generator (for its final state)."""
    gen = Generator(seed, entries)
    annotations = []
    with open(path, 'wb') as f:
        w = StreamPickler(f)
        w.start()
        # the top-level dict: segments, device_traces, allocator_settings, external_annotations
        w.buf += b'}'
        w.memoize(None, False)
        w.buf += b'('
        w.save('segments')
        w.save(gen.segments, record=False)
        w.save('device_traces')
        # device_traces = [trace]: EMPTY_LIST MEMOIZE <trace> APPEND
        w.buf += b']'
        w.memoize(None, False)
        w.begin_streamed_list(entries)

        def item(entry):
            w.streamed_item(entry)
            w.forget(entry['compile_context'])  # its own str, never referenced again

        gen.run_trace(item, w.forget, annotations)
        w.end_streamed_list()
        w.buf += b'a'
        w.save('allocator_settings')
        w.save(settings(), record=False)
        w.save('external_annotations')
        w.save(annotations, record=False)
        w.buf += b'u'
        w.finish()
    return gen


def reference_bytes(seed, entries):
    """The same snapshot built in memory and pickled by Python's own (pure Python) pickler."""
    gen = Generator(seed, entries)
    trace, annotations = [], []
    gen.run_trace(trace.append, lambda lst: None, annotations)
    doc = {'segments': gen.segments, 'device_traces': [trace], 'allocator_settings': settings(),
           'external_annotations': annotations}
    buf = io.BytesIO()
    pickle._Pickler(buf, protocol=4).dump(doc)
    return buf.getvalue(), doc


def verify_consistency(doc):
    """Undoes the trace from the final state, as PyTorch's viewer does, and checks that every
    entry finds what it must: an alloc its live block, a free_completed no live block at its
    address, a segment_alloc its segment, a segment_free no segment."""
    segs = {s['address']: s['total_size'] for s in doc['segments']}
    live = {}
    for s in doc['segments']:
        assert sum(b['size'] for b in s['blocks']) == s['total_size']
        for b in s['blocks']:
            if b['state'] != 'inactive':
                live[b['address']] = b['requested_size']
    trace = doc['device_traces'][0]
    for k in range(len(trace) - 1, -1, -1):
        e = trace[k]
        a, act = e['addr'], e['action']
        if act == 'alloc':
            assert live.pop(a, None) == e['size'], f'entry {k}: alloc of a block not live after it'
        elif act == 'free_completed':
            assert a not in live, f'entry {k}: free_completed of a live block'
            live[a] = e['size']
        elif act == 'free_requested':
            assert live.get(a) == e['size'], f'entry {k}: free_requested of a block not live'
        elif act == 'segment_alloc':
            assert segs.pop(a, None) == e['size'], f'entry {k}: segment_alloc of an unknown segment'
        elif act == 'segment_free':
            assert a not in segs, f'entry {k}: segment_free of a live segment'
            segs[a] = e['size']
    for a in live:  # blocks live before the trace lie in segments that existed then
        assert any(s <= a < s + n for s, n in segs.items()), f'block 0x{a:x} outside every segment'


def entries_for_size(out, seed, size_mb):
    """Trace entries that make a file of about size_mb MB, from the mean bytes per entry of a
    200,000-entry file (185 B; the first 100,000 entries weigh more, the rest stays within 1 %)."""
    n = 200_000
    tmp = out + '.calibrate'
    try:
        write_snapshot(tmp, seed, n)
        size = os.path.getsize(tmp)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return max(1, round(size_mb * 1e6 * n / size))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('out')
    ap.add_argument('--entries', type=int, default=None, help='trace entries (default 1,000,000)')
    ap.add_argument('--size-mb', type=float, help='instead of --entries: as many entries as make about this '
                    'many MB (bytes per entry measured on a 200,000-entry file first)')
    ap.add_argument('--seed', type=int, default=20240601)
    ap.add_argument('--check', action='store_true',
                    help='also build the snapshot in memory, pickle it with pickle._Pickler and compare the bytes '
                         '(small --entries only), and load the file back with pickle')
    args = ap.parse_args()
    if args.size_mb is not None:
        if args.entries is not None:
            ap.error('give --entries or --size-mb, not both')
        args.entries = entries_for_size(args.out, args.seed, args.size_mb)
    elif args.entries is None:
        args.entries = 1_000_000
    if args.entries < 1:
        ap.error('--entries must be at least 1')
    t0 = time.perf_counter()
    tmp = args.out + '.tmp'
    gen = write_snapshot(tmp, args.seed, args.entries)
    os.replace(tmp, args.out)
    size = os.path.getsize(args.out)
    n_blocks = sum(len(s['blocks']) for s in gen.segments)
    live = sum(1 for s in gen.segments for b in s['blocks'] if b['state'] != 'inactive')
    print(f'{args.out}: {size / 1e6:.1f} MB, {args.entries} trace entries, {len(gen.segments)} segments, '
          f'{n_blocks} blocks ({live} allocated), {len(gen.frames)} frames in the pool; '
          f'{time.perf_counter() - t0:.1f} s', file=sys.stderr)
    if args.check:
        with open(args.out, 'rb') as f:
            data = f.read()
        ref, doc = reference_bytes(args.seed, args.entries)
        if data != ref:
            i = next((k for k in range(min(len(data), len(ref))) if data[k] != ref[k]), min(len(data), len(ref)))
            sys.exit(f'check FAILED: differs from pickle._Pickler output at byte {i} '
                     f'({len(data)} vs {len(ref)} bytes)')
        back = pickle.loads(data)
        assert back == doc
        tr = back['device_traces'][0]
        assert len(tr) == args.entries
        assert all(tr[k]['time_us'] <= tr[k + 1]['time_us'] for k in range(len(tr) - 1))
        verify_consistency(back)
        print('check ok: identical to pickle._Pickler(protocol=4) output, loads back equal, trace consistent with '
              'the final state', file=sys.stderr)


if __name__ == '__main__':
    main()
