#!/usr/bin/env python3
"""Checks resources/example.pickle, the bundled example snapshot.

1. resources/make_example.py --check: regenerating it gives byte-identical output.
2. It loads with a class-free unpickler and has the torch 2.10/2.11 layout.
3. Segment invariants: contiguous blocks; block sizes sum to total_size; allocated_size,
   active_size and requested_size are the sums over active blocks.
4. Replaying the trace forward from an empty allocator, under the rules of
   shared/reference/caching-allocator.md (rounding, pools, best fit, splitting, merging,
   segment sizes, empty_cache order, OOM), reproduces the final segments and blocks exactly,
   stale requested_size of inactive blocks included.

Uses nothing but the standard library. Exit 0 when every check passes, 1 otherwise.
"""
from __future__ import annotations

import argparse
import io
import pickle
import subprocess
import sys
from pathlib import Path

MIB = 1 << 20
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
LARGE_BUFFER = 20 << 20
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20

TRACE_KEYS = ["action", "addr", "size", "stream", "frames", "time_us", "compile_context",
              "user_metadata"]
OOM_KEYS = ["action", "device_free", "size", "stream", "frames", "time_us", "compile_context",
            "user_metadata"]
SEGMENT_KEYS = ["device", "address", "total_size", "allocated_size", "active_size",
                "requested_size", "stream", "segment_type", "segment_pool_id", "is_expandable",
                "frames", "blocks"]
BLOCK_KEYS = ["address", "size", "requested_size", "state", "frames"]
SETTINGS_KEYS = ["PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
                 "expandable_segments", "pinned_num_register_threads",
                 "release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
                 "roundup_power2_divisions", "graph_capture_record_stream_reuse"]
STATE = {"A": "active_allocated", "I": "inactive"}


class Failure(Exception):
    pass


def check(cond: bool, msg: str) -> None:
    if not cond:
        raise Failure(msg)


def round_size(n: int) -> int:
    return 512 if n < 512 else (n + 511) // 512 * 512


def allocation_size(r: int) -> int:
    if r <= SMALL_SIZE:
        return SMALL_BUFFER
    if r < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (r + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class NoClasses(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"class {module}.{name} in a snapshot")


# --------------------------------------------------------------------------------------------

class RBlock:
    __slots__ = ("addr", "size", "req", "state", "frames")

    def __init__(self, addr, size, req, state, frames):
        self.addr, self.size, self.req, self.state, self.frames = addr, size, req, state, frames


class RSegment:
    def __init__(self, addr: int, size: int, small: bool, frames):
        self.addr, self.size, self.small, self.frames = addr, size, small, frames
        self.blocks = [RBlock(addr, size, 0, "I", None)]


class Replay:
    """Forward replay of one device's trace from an empty allocator."""

    def __init__(self) -> None:
        self.segs: dict[int, RSegment] = {}
        self.fresh: int | None = None        # segment created by the previous entry
        self.last_free_key = None            # order of a run of segment_free entries
        self.peak_reserved = self.reserved = 0
        self.peak_allocated = self.allocated = 0

    def find(self, addr: int) -> tuple[RSegment, int]:
        for seg in self.segs.values():
            if seg.addr <= addr < seg.addr + seg.size:
                for i, b in enumerate(seg.blocks):
                    if b.addr == addr:
                        return seg, i
                raise Failure(f"{addr:#x} is inside segment {seg.addr:#x} but starts no block")
        raise Failure(f"{addr:#x} is in no segment")

    def free_blocks(self, small: bool, size: int, exclude=None):
        return [(b.size, b.addr) for s in self.segs.values() if s.small == small and s is not exclude
                for b in s.blocks if b.state == "I" and b.size >= size]

    def apply(self, i: int, e: dict) -> None:
        a = e["action"]
        where = f"entry {i} ({a})"
        fresh, self.fresh = self.fresh, None
        if a != "segment_free":
            self.last_free_key = None
        if a == "segment_alloc":
            addr, size = e["addr"], e["size"]
            for s in self.segs.values():
                check(addr + size <= s.addr or s.addr + s.size <= addr,
                      f"{where}: new segment {addr:#x} overlaps {s.addr:#x}")
            seg = RSegment(addr, size, size == SMALL_BUFFER, e["frames"])
            self.segs[addr] = seg
            self.fresh = addr
            self.reserved += size
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        elif a == "segment_free":
            seg = self.segs.get(e["addr"])
            check(seg is not None, f"{where}: no segment at {e['addr']:#x}")
            check(seg.size == e["size"], f"{where}: size {e['size']} != segment size {seg.size}")
            check(len(seg.blocks) == 1 and seg.blocks[0].state == "I",
                  f"{where}: segment {seg.addr:#x} is not wholly free")
            key = (seg.small, seg.size, seg.addr)     # large pool first, then (size, ptr)
            check(self.last_free_key is None or key > self.last_free_key,
                  f"{where}: segment_free out of the release order")
            self.last_free_key = key
            del self.segs[seg.addr]
            self.reserved -= seg.size
        elif a == "alloc":
            req = e["size"]
            r = round_size(req)
            small = r <= SMALL_SIZE
            seg, k = self.find(e["addr"])
            b = seg.blocks[k]
            check(b.state == "I", f"{where}: block {b.addr:#x} is not free")
            check(seg.small == small, f"{where}: request of {req} served from the wrong pool")
            check(b.size >= r, f"{where}: block of {b.size} too small for {r}")
            if fresh == seg.addr:
                check(seg.size == allocation_size(r),
                      f"{where}: segment of {seg.size} for a rounded request of {r}")
                others = self.free_blocks(small, r, exclude=seg)
                check(not others, f"{where}: cudaMalloc although a cached block fits: {others[:1]}")
            else:
                best = min(self.free_blocks(small, r))
                check(best == (b.size, b.addr), f"{where}: not the best fit (expected {best})")
            rem = b.size - r
            if (small and rem >= 512) or (not small and rem > SMALL_SIZE):
                front = RBlock(b.addr, r, req, "A", e["frames"])
                b.addr += r
                b.size -= r                           # the remainder keeps its stale req
                seg.blocks.insert(k, front)
                b = front
            else:
                b.req, b.state, b.frames = req, "A", e["frames"]
            self.allocated += b.size
            self.peak_allocated = max(self.peak_allocated, self.allocated)
        elif a == "free_requested":
            seg, k = self.find(e["addr"])
            b = seg.blocks[k]
            check(b.state == "A", f"{where}: block {b.addr:#x} is not allocated")
            check(b.req == e["size"], f"{where}: size {e['size']} != requested_size {b.req}")
            b.state = "P"
            self.allocated -= b.size
        elif a == "free_completed":
            seg, k = self.find(e["addr"])
            b = seg.blocks[k]
            check(b.state == "P", f"{where}: block {b.addr:#x} was not freed")
            check(b.req == e["size"], f"{where}: size {e['size']} != requested_size {b.req}")
            b.state, b.frames = "I", None
            if k + 1 < len(seg.blocks) and seg.blocks[k + 1].state == "I":
                b.size += seg.blocks.pop(k + 1).size
            if k > 0 and seg.blocks[k - 1].state == "I":
                prev = seg.blocks.pop(k - 1)
                b.addr, b.size = prev.addr, b.size + prev.size
        elif a == "oom":
            r = e["size"]
            check(r == round_size(r), f"{where}: size {r} is not a rounded size")
            fits = self.free_blocks(r <= SMALL_SIZE, r)
            check(not fits, f"{where}: a cached block of {fits[:1]} would have served it")
            check(all(len(s.blocks) > 1 or s.blocks[0].state != "I" for s in self.segs.values()),
                  f"{where}: a wholly free segment was not released before the OOM")
            check(e["device_free"] < allocation_size(r),
                  f"{where}: device_free {e['device_free']} would fit {allocation_size(r)}")
        else:
            raise Failure(f"{where}: unexpected action")


# --------------------------------------------------------------------------------------------

def check_layout(snap) -> list:
    check(isinstance(snap, dict), "top level is not a dict")
    check(list(snap) == ["segments", "device_traces", "allocator_settings",
                         "external_annotations"], f"top-level keys {list(snap)}")
    check(list(snap["allocator_settings"]) == SETTINGS_KEYS, "allocator_settings keys")
    traces = snap["device_traces"]
    check(len(traces) == 2 and traces[1] == [], "expected two devices, the second without trace")
    trace = traces[0]
    check(1000 <= len(trace) <= 20000, f"{len(trace)} trace entries; a few thousand expected")
    check(trace[-1]["action"] == "oom", "the trace does not end with an oom entry")
    last_time = 0
    for i, e in enumerate(trace):
        keys = OOM_KEYS if e["action"] == "oom" else TRACE_KEYS
        check(list(e) == keys, f"entry {i}: keys {list(e)}")
        check(e["compile_context"] == "N/A" and e["user_metadata"] == "", f"entry {i}: metadata")
        check(e["stream"] == 0, f"entry {i}: stream")
        check(e["time_us"] > last_time, f"entry {i}: time_us does not increase")
        last_time = e["time_us"]
        check(isinstance(e["frames"], list), f"entry {i}: frames is not a list")
    check(trace[0]["time_us"] >= 1_700_000_000_000_000, "time_us is not microseconds since 1970")

    # Frames: dicts {name, filename, line}, one object per distinct frame (shared, as torch does).
    objects: dict[tuple, int] = {}
    references = 0
    stacks = [e["frames"] for e in trace] + [s["frames"] for s in snap["segments"]] + \
             [b["frames"] for s in snap["segments"] for b in s["blocks"]]
    for frames in stacks:
        for f in frames:
            check(list(f) == ["name", "filename", "line"], f"frame keys {list(f)}")
            key = (f["name"], f["filename"], f["line"])
            check(objects.setdefault(key, id(f)) == id(f), f"frame {key} is not shared")
            references += 1
    check(references > 5 * len(objects), "frames are not shared between stacks")
    for needle in ("train.py", "torch/nn/modules/module.py", "torch/optim/"):
        check(any(needle in k[1] for k in objects), f"no frame from {needle}")

    # Annotations: START/END pairs named "iteration N", time-ordered.
    ann = snap["external_annotations"]
    check(ann and all(list(a) == ["device", "time_us", "name", "stage"] for a in ann),
          "annotation keys")
    check(all(ann[i]["time_us"] < ann[i + 1]["time_us"] for i in range(len(ann) - 1)),
          "annotation times do not increase")
    open_ranges: list[str] = []
    for a in ann:
        if a["stage"] == "START":
            open_ranges.append(a["name"])
        else:
            check(open_ranges and open_ranges[-1] == a["name"], f"END without START: {a['name']}")
            open_ranges.pop()
    iterations = [a["name"] for a in ann if a["stage"] == "START" and a["name"].startswith("iteration ")]
    check(iterations == [f"iteration {i}" for i in range(len(iterations))], "iteration names")
    check(20 <= len(iterations) <= 40, f"{len(iterations)} iterations; about 30 expected")
    return trace


def check_segments(segments) -> None:
    for s in segments:
        where = f"segment {s['address']:#x}"
        check(list(s) == SEGMENT_KEYS, f"{where}: keys {list(s)}")
        check(s["device"] == 0 and s["segment_pool_id"] == (0, 0) and s["is_expandable"] is False,
              f"{where}: device/pool/expandable")
        addr = s["address"]
        for b in s["blocks"]:
            check(list(b) == BLOCK_KEYS, f"{where}: block keys {list(b)}")
            check(b["address"] == addr, f"{where}: blocks are not contiguous at {addr:#x}")
            check(b["state"] in ("active_allocated", "inactive"), f"{where}: state {b['state']}")
            check(b["state"] == "active_allocated" or b["frames"] == [],
                  f"{where}: inactive block with frames")
            addr += b["size"]
        active = [b for b in s["blocks"] if b["state"] == "active_allocated"]
        check(sum(b["size"] for b in s["blocks"]) == s["total_size"], f"{where}: sizes != total_size")
        check(sum(b["size"] for b in active) == s["allocated_size"], f"{where}: allocated_size")
        check(s["active_size"] == s["allocated_size"], f"{where}: active_size")
        check(sum(b["requested_size"] for b in active) == s["requested_size"], f"{where}: requested_size")
        small = s["total_size"] == SMALL_BUFFER
        check(s["segment_type"] == ("small" if small else "large"), f"{where}: segment_type")
    addrs = [s["address"] for s in segments]
    check(addrs == sorted(addrs), "segments are not sorted by address")


def check_replay(trace, segments) -> Replay:
    rp = Replay()
    for i, e in enumerate(trace):
        rp.apply(i, e)
    check(sorted(rp.segs) == [s["address"] for s in segments],
          "replayed segments differ from the snapshot's")
    for s in segments:
        seg = rp.segs[s["address"]]
        where = f"segment {s['address']:#x}"
        check(seg.size == s["total_size"], f"{where}: total_size")
        check(seg.frames is s["frames"], f"{where}: frames are not those of its segment_alloc")
        got = [(b.addr, b.size, b.req, STATE.get(b.state, b.state)) for b in seg.blocks]
        want = [(b["address"], b["size"], b["requested_size"], b["state"]) for b in s["blocks"]]
        check(got == want, f"{where}: replayed blocks {got} != snapshot {want}")
        for b, sb in zip(seg.blocks, s["blocks"]):
            if b.state == "A":
                check(sb["frames"] is b.frames, f"{where}: block frames are not its alloc's")
    return rp


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", type=Path, default=root / "resources" / "make_example.py")
    ap.add_argument("--pickle", type=Path, default=root / "resources" / "example.pickle")
    args = ap.parse_args()

    passed = failed = 0

    def run(name, fn):
        nonlocal passed, failed
        try:
            result = fn()
            print(f"PASS {name}")
            passed += 1
            return result
        except Failure as e:
            print(f"FAIL {name}: {e}")
            failed += 1
            return None

    def regenerate():
        p = subprocess.run([sys.executable, str(args.script), "--check", "-o", str(args.pickle)],
                           capture_output=True, text=True)
        check(p.returncode == 0, (p.stderr or p.stdout).strip())

    run("regeneration is byte-identical", regenerate)

    data = args.pickle.read_bytes()
    check_size = lambda: check(len(data) < 2_000_000 and data[:3] == b"\x80\x04\x95",
                               f"{len(data)} bytes, header {data[:3]!r}")
    run("pickle protocol 4, under 2 MB", check_size)
    snap = NoClasses(io.BytesIO(data)).load()
    trace = run("layout of torch 2.10/2.11", lambda: check_layout(snap))
    run("segment invariants", lambda: check_segments(snap["segments"]))
    if trace is not None:
        rp = run("forward replay reproduces the final state", lambda: check_replay(trace, snap["segments"]))
        if rp is not None:
            print(f"  {len(trace)} entries, {len(snap['segments'])} segments at the end, "
                  f"peak reserved {rp.peak_reserved / MIB:.0f} MiB, "
                  f"peak allocated {rp.peak_allocated / MIB:.0f} MiB")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
