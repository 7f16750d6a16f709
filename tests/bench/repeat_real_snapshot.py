#!/usr/bin/env python3
"""Builds a large benchmark snapshot by repeating a real snapshot's trace K times.

    repeat_real_snapshot.py REAL.pickle OUT (--copies K | --size-mb M) [--check]

The real file is read at bench time and never copied into the repository. Its longest device
trace is written K times, copy k with addresses shifted by k * D (D: the address span of that
device, rounded up to 1 GiB) and times by k * (the trace's duration + 1 µs), so each copy lives
in its own address range and the file stays consistent: the final segments of that device are
repeated with the same shift, so undoing the trace from the final state finds, for every copy,
what the real file had. Sharing is kept as torch writes it:
  * frame dicts are the real file's objects, shared by every copy (memo gets);
  * each copy has its own frames lists (within a copy, lists are shared as in the real file:
    free_completed with its free_requested, a block with its alloc);
  * strings that the real file writes out once per use (compile_context 'N/A', ...) are new
    objects in each copy; strings it shares (keys, actions) stay shared.
Other devices' segments and traces, allocator_settings and the rest are written once;
external_annotations are repeated with the time shift. The file is streamed with
make_large_snapshot's pickler (memory: the real file's objects plus one copy's), and is
byte-identical to pickle._Pickler(protocol=4) on the same object graph (--check, small K).
"""
import argparse
import io
import os
import pickle
import sys
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'tools'))
from make_large_snapshot import StreamPickler, fresh  # noqa: E402
import snapshot_oracle  # noqa: E402  (its loader refuses classes and persistent ids)

GiB = 1 << 30


class Repeater:
    def __init__(self, path):
        self.doc = snapshot_oracle.load(path)
        doc = self.doc
        if not isinstance(doc, dict) or not doc.get('device_traces'):
            raise SystemExit(f'{path}: no device_traces')
        traces = doc['device_traces']
        self.dev = max(range(len(traces)), key=lambda i: len(traces[i]))
        self.trace = traces[self.dev]
        if not self.trace:
            raise SystemExit(f'{path}: every trace is empty')
        self.segs = [s for s in doc.get('segments', []) if s.get('device', 0) == self.dev]
        # how often each object is referenced: a string used once is written out once per use
        self.refs = Counter()
        self.frame_dicts = set()
        self._count(doc)
        addrs = [e['addr'] for e in self.trace if e.get('addr') and e.get('action') not in ('oom', 'snapshot')]
        for s in self.segs:
            addrs += [s['address'], s['address'] + s['total_size']]
        lo, hi = min(addrs), max(addrs)
        self.shift_addr = ((hi - lo) // GiB + 1) * GiB
        times = [e['time_us'] for e in self.trace if 'time_us' in e]
        self.shift_time = (max(times) - min(times) + 1) if times else 0

    def _count(self, root):
        seen = set()
        stack = [(root, None)]
        while stack:
            x, key = stack.pop()
            self.refs[id(x)] += 1
            if id(x) in seen:
                continue
            seen.add(id(x))
            if isinstance(x, dict):
                for k, v in x.items():
                    stack.append((v, k))
            elif isinstance(x, (list, tuple)):
                if key == 'frames':
                    self.frame_dicts.update(id(f) for f in x if isinstance(f, dict))
                stack.extend((v, None) for v in x)

    def clone(self, x, k, cache, key=None, action=None):
        """Copy k of x: new containers (one per original container, so sharing within the copy is
        kept), frame dicts and shared strings as they are, addresses and times shifted."""
        t = type(x)
        if t is str:
            if self.refs[id(x)] > 1 or len(x) < 2:
                return x
            y = cache.get(id(x))
            if y is None:
                y = cache[id(x)] = fresh(x)
            return y
        if t is int:
            if key in ('addr', 'address') and x and action not in ('oom', 'snapshot'):
                return x + k * self.shift_addr
            if key == 'time_us':
                return x + k * self.shift_time
            return x
        if t not in (dict, list, tuple) or id(x) in self.frame_dicts:
            return x
        y = cache.get(id(x))
        if y is not None:
            return y
        if t is dict:
            y = cache[id(x)] = {}
            act = x.get('action')
            for kk, v in x.items():
                y[kk] = self.clone(v, k, cache, kk, act)
        elif t is list:
            y = cache[id(x)] = []
            y.extend(self.clone(v, k, cache) for v in x)
        else:
            y = cache[id(x)] = tuple(self.clone(v, k, cache) for v in x)
        return y


def write(rep, copies, out, in_memory=False):
    """Writes the repeated snapshot to `out` (a file object) with the streaming pickler; with
    in_memory, returns instead the object graph (for --check)."""
    doc = rep.doc
    caches = [{} for _ in range(copies)]
    other_segs = [s for s in doc.get('segments', []) if s.get('device', 0) != rep.dev]
    segments = other_segs + [rep.clone(s, k, caches[k]) for k in range(copies) for s in rep.segs]
    annotations = [rep.clone(a, k, {}) for k in range(copies) for a in doc.get('external_annotations', [])]
    n = len(rep.trace) * copies
    if in_memory:
        trace = [rep.clone(e, k, caches[k]) for k in range(copies) for e in rep.trace]
        new = {}
        for key, v in doc.items():
            if key == 'segments':
                v = segments
            elif key == 'device_traces':
                v = [trace if i == rep.dev else t for i, t in enumerate(v)]
            elif key == 'external_annotations':
                v = annotations
            new[key] = v
        return new
    w = StreamPickler(out)
    w.start()
    w.buf += b'}'
    w.memoize(doc, True)
    items = list(doc.items())
    w.buf += b'(' if len(items) > 1 else b''
    for key, v in items:
        w.save(key)
        if key == 'segments':
            w.save(segments)
        elif key == 'external_annotations':
            w.save(annotations)
        elif key == 'device_traces':
            if len(w.buf) >= w.FRAME_TARGET:
                w.commit()
            w.buf += b']'
            w.memoize(v, True)
            w.buf += b'(' if len(v) > 1 else b''
            for i, t in enumerate(v):
                if i != rep.dev:
                    w.save(t)
                    continue
                w.begin_streamed_list(n)
                for k in range(copies):
                    cache = caches[k]
                    for e in rep.trace:
                        w.streamed_item(rep.clone(e, k, cache))
                    for obj in cache.values():  # this copy is done: nothing later refers to it
                        w.forget(obj)
                    caches[k] = None
                w.end_streamed_list()
            w.buf += b'e' if len(v) > 1 else b'a'
        else:
            w.save(v)
    w.buf += b'u' if len(items) > 1 else b's'
    w.finish()
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('real')
    ap.add_argument('out')
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument('--copies', type=int)
    g.add_argument('--size-mb', type=float, help='as many copies as make about this many MB')
    ap.add_argument('--check', action='store_true',
                    help='compare with pickle._Pickler(protocol=4) on the same objects (small K only)')
    args = ap.parse_args()
    t0 = time.perf_counter()
    rep = Repeater(args.real)
    copies = args.copies
    if copies is None:  # bytes per copy from a 2-copy file minus a 1-copy file
        sizes = []
        for k in (1, 2):
            buf = io.BytesIO()
            write(rep, k, buf)
            sizes.append(len(buf.getvalue()))
        copies = max(1, round(1 + (args.size_mb * 1e6 - sizes[0]) / (sizes[1] - sizes[0])))
    if copies < 1:
        ap.error('--copies must be at least 1')
    tmp = args.out + '.tmp'
    with open(tmp, 'wb') as f:
        n = write(rep, copies, f)
    os.replace(tmp, args.out)
    print(f'{args.out}: {os.path.getsize(args.out) / 1e6:.1f} MB, {copies} copies of device {rep.dev}\'s '
          f'{len(rep.trace)} trace entries = {n} entries; address shift {rep.shift_addr / GiB:.0f} GiB, '
          f'time shift {rep.shift_time} µs; {time.perf_counter() - t0:.1f} s', file=sys.stderr)
    if args.check:
        ref = io.BytesIO()
        pickle._Pickler(ref, protocol=4).dump(write(Repeater(args.real), copies, None, in_memory=True))
        with open(args.out, 'rb') as f:
            data = f.read()
        if data != ref.getvalue():
            r = ref.getvalue()
            i = next((j for j in range(min(len(data), len(r))) if data[j] != r[j]), min(len(data), len(r)))
            sys.exit(f'check FAILED: differs from pickle._Pickler output at byte {i} ({len(data)} vs {len(r)})')
        print('check ok: identical to pickle._Pickler(protocol=4) output', file=sys.stderr)


if __name__ == '__main__':
    main()
