#!/usr/bin/env python3
"""Independent test oracle for memlens: reads PyTorch CUDA memory snapshot pickles with
Python's own `pickle` module (refusing every class) and computes what `memlens-cli` must print.

It shares no code with memlens. It follows the command-line contract:

  stats      {"devices": [...]} - one object per device that owns a segment or has a trace entry
  timeline   index,action,addr,size,live_bytes,reserved_bytes - rewound from the final state
  state      segments and blocks of one device; final_state() gives it at the last entry
  entries    the trace entries of one action on every device, with the totals right after each
             (for tests of the views, which must not type in figures of the real files)

Pinned host memory (torch 2.14, `_record_memory_history(record_pinned_host_memory=True)`): the
top-level `host_segments` and `host_traces` (a list holding one trace) are read as a device
numbered -1, named "host". Its allocator never splits a block, so its state at any entry is a plain
forward replay of its trace (host_state). Newer per-device facts (stats(data, newer=True)): `name`,
`pools` (per segment_pool_id: segments, reserved and allocated bytes of the final state), and the
ring-buffer flags of PR #179276, `trace_overflowed` / `trace_max_entries` (trace_flags).

Library use:
    data = load(path); stats(data); timeline(data, dev); final_state(data, dev); repickle(src, dst, proto)
    stats(data, newer=True); pools(data, dev); trace_flags(data, dev); host_state(data, at)

Command line (for debugging):
    snapshot_oracle.py stats FILE [--newer]
    snapshot_oracle.py timeline FILE --device D       (D: a number, or host)
    snapshot_oracle.py state FILE --device D [--newer] (the state at the last entry)
    snapshot_oracle.py state FILE --device host --at K (the host's state after entry K, replayed)
    snapshot_oracle.py entries FILE --action A        (e.g. every oom entry, as JSON)
    snapshot_oracle.py check FILE_OR_DIR...           (self-check of the oracle on real files)
"""

import argparse
import io
import json
import os
import pickle
import sys

ACTIVE_STATES = ("active_allocated", "active_pending_free")
# torch's docstring spells the pending-free state differently from its C++ code; accept both.
STATE_ALIASES = {"active_awaiting_free": "active_pending_free"}

# Effect of each trace action on (live, reserved), applied forwards. Others change nothing.
# "free" (old traces) is free_requested and free_completed in one entry.
LIVE_DELTA = {"alloc": +1, "free_completed": -1, "free": -1}
RESERVED_DELTA = {"segment_alloc": +1, "segment_map": +1, "segment_free": -1, "segment_unmap": -1}

HOST = -1  # the device number of pinned host memory


class RefusingUnpickler(pickle.Unpickler):
    """A pickle reader that loads no class and resolves no persistent id."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused to load class {module}.{name}")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused persistent id")


def loads(data: bytes):
    return RefusingUnpickler(io.BytesIO(data)).load()


def load(path):
    with open(path, "rb") as f:
        return RefusingUnpickler(f).load()


def repickle(src, dst, protocol):
    """Writes the snapshot in `src` to `dst` with pickle protocol `protocol`."""
    data = load(src)
    with open(dst, "wb") as f:
        pickle.dump(data, f, protocol=protocol)


# ---------------------------------------------------------------------------------------------
# Layout


def segments_of(data):
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("segments"), list):
        return data["segments"]
    raise ValueError("not a memory snapshot (no 'segments' list)")


def host_segments_of(data):
    """The pinned host memory's segments (top-level `host_segments`), whatever their `device` says."""
    if isinstance(data, dict) and isinstance(data.get("host_segments"), list):
        return data["host_segments"]
    return []


def host_trace_of(data):
    """The pinned host memory's trace: `host_traces` is a list holding one list of entries (a flat
    list of entries is read as that one list)."""
    if not isinstance(data, dict):
        return []
    tr = data.get("host_traces")
    if not isinstance(tr, list) or not tr:
        return []
    if all(isinstance(t, list) for t in tr):
        return [e for t in tr for e in t]
    return [e for e in tr if isinstance(e, dict)]


def device_segments(data, device):
    """The final segments of `device` (HOST: the host segments)."""
    if device == HOST:
        return host_segments_of(data)
    return [s for s in segments_of(data) if s["device"] == device]


def device_name(device):
    return "host" if device == HOST else f"cuda:{device}"


def traces_of(data):
    """device_traces as a list indexed by device; a bare segment list has none."""
    if isinstance(data, list):
        return []
    tr = data.get("device_traces", [])
    if tr is None:
        return []
    if isinstance(tr, dict):  # not seen in real files; keep it simple and index by key
        n = max(tr.keys()) + 1 if tr else 0
        return [tr.get(i, []) for i in range(n)]
    return tr


def trace_of(data, device):
    if device == HOST:
        return host_trace_of(data)
    tr = traces_of(data)
    if 0 <= device < len(tr):
        return tr[device]
    return []


def state_of(block):
    s = block.get("state")
    return STATE_ALIASES.get(s, s)


def block_rows(seg):
    """(address, size, requested_size, state) of a segment's blocks, in file order. Blocks of torch
    2.0 files have no `address`: it is the segment address plus the sizes of earlier blocks."""
    out = []
    addr = seg["address"]
    for b in seg.get("blocks", []):
        a = b["address"] if "address" in b else addr
        out.append((a, b["size"], b.get("requested_size", 0) or 0, state_of(b)))
        addr = a + b["size"]
    return out


def devices_of(data):
    devs = {s["device"] for s in segments_of(data)}
    devs.discard(HOST)  # a host segment listed among the device segments is not a CUDA device
    for d, t in enumerate(traces_of(data)):
        if len(t) > 0:
            devs.add(d)
    if host_segments_of(data) or host_trace_of(data):
        devs.add(HOST)
    return sorted(devs)


# ---------------------------------------------------------------------------------------------
# Totals


def totals(segments):
    """Totals over a list of segment dicts (the file's own)."""
    reserved = allocated = requested = free = largest = nblocks = 0
    for s in segments:
        reserved += s["total_size"]
        for (_a, size, req, st) in block_rows(s):
            nblocks += 1
            if st in ACTIVE_STATES:
                allocated += size
                requested += req
            elif st == "inactive":
                free += size
                largest = max(largest, size)
    return {
        "segments": len(segments),
        "blocks": nblocks,
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "requested_bytes": requested,
        "free_bytes": free,
        "largest_free_block": largest,
    }


def pool_id(seg):
    """A segment's pool as [owner, id]; (0, 0), the default pool, where the file has none."""
    p = seg.get("segment_pool_id")
    if isinstance(p, (list, tuple)) and len(p) == 2:
        return [int(p[0]), int(p[1])]
    return [0, 0]


def pools(data, device):
    """Per pool of the final state, sorted by pool: segment count, reserved bytes (sum of total_size)
    and allocated bytes (sum of the sizes of active_allocated blocks)."""
    by = {}
    for s in device_segments(data, device):
        p = by.setdefault(tuple(pool_id(s)), {"segments": 0, "reserved_bytes": 0, "allocated_bytes": 0})
        p["segments"] += 1
        p["reserved_bytes"] += s["total_size"]
        p["allocated_bytes"] += sum(size for (_a, size, _r, st) in block_rows(s) if st == "active_allocated")
    return [{"pool": list(k), **v} for k, v in sorted(by.items())]


TRACE_FLAG_KEYS = ("trace_alloc_overflowed", "trace_alloc_max_entries")


def _flag_for(value, device):
    """One device's value of a per-device flag: a list indexed by device, a dict keyed by device
    (int or str; the host as -1 or "host"), or a scalar meaning every CUDA device. None where the
    value does not say."""
    if isinstance(value, dict):
        keys = (HOST, "-1", "host") if device == HOST else (device, str(device))
        for k in keys:
            if k in value:
                return value[k]
        return None
    if isinstance(value, (list, tuple)):
        return value[device] if 0 <= device < len(value) else None
    if device == HOST:
        return None
    return value


def trace_flags(data, device):
    """(trace_overflowed, trace_max_entries) of `device`: from allocator_settings, else the top level;
    each None where the snapshot does not say."""
    found = {}
    if isinstance(data, dict):
        sources = [data.get("allocator_settings"), data]
        for key in TRACE_FLAG_KEYS:
            for src in sources:
                if isinstance(src, dict) and key in src:
                    found[key] = _flag_for(src[key], device)
                    break
    over = found.get("trace_alloc_overflowed")
    most = found.get("trace_alloc_max_entries")
    over = bool(over) if isinstance(over, (bool, int)) else None
    most = most if isinstance(most, int) and not isinstance(most, bool) else None
    return over, most


def stats(data, newer=False):
    """The contract's stats. newer=True adds the keys of torch 2.12+ files: name, pools,
    trace_overflowed, trace_max_entries."""
    out = []
    for d in devices_of(data):
        t = totals(device_segments(data, d))
        trace = trace_of(data, d)
        actions = {}
        for e in trace:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
        t = {"device": d, **t, "trace_events": len(trace), "actions": actions}
        if newer:
            over, most = trace_flags(data, d)
            t.update(name=device_name(d), pools=pools(data, d), trace_overflowed=over, trace_max_entries=most)
        out.append(t)
    return {"devices": out}


# ---------------------------------------------------------------------------------------------
# Timeline


def final_live_reserved(data, device):
    t = totals(device_segments(data, device))
    return t["requested_bytes"], t["reserved_bytes"]


def timeline(data, device):
    """Rows (index, action, addr or None, size, live_bytes, reserved_bytes): totals right after each
    entry, rewound from the final state."""
    trace = trace_of(data, device)
    live, reserved = final_live_reserved(data, device)
    rows = [None] * len(trace)
    for i in range(len(trace) - 1, -1, -1):
        e = trace[i]
        a = e["action"]
        size = e.get("size", 0)
        rows[i] = (i, a, e.get("addr"), size, live, reserved)
        live -= LIVE_DELTA.get(a, 0) * size
        reserved -= RESERVED_DELTA.get(a, 0) * size
    return rows


def before_first(data, device):
    """(live, reserved) before the first trace entry of `device`."""
    trace = trace_of(data, device)
    live, reserved = final_live_reserved(data, device)
    for e in reversed(trace):
        size = e.get("size", 0)
        live -= LIVE_DELTA.get(e["action"], 0) * size
        reserved -= RESERVED_DELTA.get(e["action"], 0) * size
    return live, reserved


def peaks(data, device):
    """The greatest live and reserved bytes over the trace, the state before the first entry
    included, and the first entry after which the live peak holds (0 where no entry rises above
    the state before the first); peak_reserved_at: the first entry at the reserved peak with the
    most live bytes of those (-1 where no entry rises above the state before the first, reserved
    bytes first, then live)."""
    live, reserved = before_first(data, device)
    peak_live, peak_index, peak_reserved = live, 0, reserved
    top, top_at = (reserved, live), -1
    for (i, _a, _addr, _size, lv, rs) in timeline(data, device):
        if lv > peak_live:
            peak_live, peak_index = lv, i
        peak_reserved = max(peak_reserved, rs)
        if (rs, lv) > top:
            top, top_at = (rs, lv), i
    return {"live_before": live, "reserved_before": reserved, "peak_live": peak_live,
            "peak_live_index": peak_index, "peak_reserved": peak_reserved, "peak_reserved_at": top_at}


def timeline_csv(data, device):
    lines = ["index,action,addr,size,live_bytes,reserved_bytes"]
    for (i, a, addr, size, live, reserved) in timeline(data, device):
        lines.append(f"{i},{a},{'' if addr is None else addr},{size},{live},{reserved}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# State


def final_state(data, device, newer=False):
    """The contract's `state --at <last>` output for `device`: the file's own segments and blocks,
    in address order. newer=True adds each segment's "pool": [owner, id]."""
    segs = device_segments(data, device)
    t = totals(segs)
    out_segs = []
    for s in sorted(segs, key=lambda s: s["address"]):
        seg = {
            "address": s["address"],
            "total_size": s["total_size"],
            "stream": s.get("stream", 0),
            "is_expandable": bool(s.get("is_expandable", False)),
            "blocks": [{"address": a, "size": size, "requested_size": req, "state": st}
                       for (a, size, req, st) in block_rows(s)],
        }
        if newer:
            seg["pool"] = pool_id(s)
        out_segs.append(seg)
    return {
        "device": device,
        "at": len(trace_of(data, device)) - 1,
        "reserved_bytes": t["reserved_bytes"],
        "allocated_bytes": t["allocated_bytes"],
        "requested_bytes": t["requested_bytes"],
        "free_bytes": t["free_bytes"],
        "largest_free_block": t["largest_free_block"],
        "segments": out_segs,
    }


class ReplayError(Exception):
    pass


def host_state(data, at):
    """The host's state right after entry `at` of its trace (-1: before the first), replayed forwards
    from nothing: the pinned host allocator never splits, so segment_alloc makes one inactive block
    of the segment's size, alloc takes it (requested = the entry's size), free_requested leaves it
    active_pending_free, free_completed inactive (its requested_size stale, as in real files),
    segment_free removes the segment. Same shape as final_state. Raises ReplayError on a trace
    that does not replay (an entry about a block or segment it does not know)."""
    trace = host_trace_of(data)
    if not -1 <= at < len(trace):
        raise ReplayError(f"no entry {at} in a host trace of {len(trace)}")
    segs = {}  # address -> [size, stream, requested, state]
    want = {"alloc": "inactive", "free_requested": "active_allocated", "free_completed": "active_pending_free"}
    then = {"alloc": "active_allocated", "free_requested": "active_pending_free", "free_completed": "inactive"}
    for i in range(at + 1):
        e = trace[i]
        a = e["action"]
        addr = e.get("addr")
        if a == "segment_alloc":
            if addr in segs:
                raise ReplayError(f"host entry {i}: segment_alloc at {addr}, already a segment")
            segs[addr] = [e["size"], e.get("stream", 0), 0, "inactive"]
        elif a == "segment_free":
            s = segs.pop(addr, None)
            if s is None or s[3] != "inactive":
                raise ReplayError(f"host entry {i}: segment_free at {addr}: {s}")
        elif a in want:
            s = segs.get(addr)
            if s is None or s[3] != want[a]:
                raise ReplayError(f"host entry {i}: {a} at {addr}: {s}")
            if a == "alloc":
                s[2] = e["size"]
            s[3] = then[a]
    out_segs = []
    reserved = allocated = requested = free = largest = 0
    for addr in sorted(segs):
        size, stream, req, st = segs[addr]
        reserved += size
        if st in ACTIVE_STATES:
            allocated += size
            requested += req
        else:
            free += size
            largest = max(largest, size)
        out_segs.append({"address": addr, "total_size": size, "stream": stream, "is_expandable": False,
                         "blocks": [{"address": addr, "size": size, "requested_size": req, "state": st}]})
    return {
        "device": HOST,
        "at": at,
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "requested_bytes": requested,
        "free_bytes": free,
        "largest_free_block": largest,
        "segments": out_segs,
    }


# ---------------------------------------------------------------------------------------------
# Entries


def leading_native_frames(frames):
    """How many frames come before the first Python frame (a filename ending in .py): the C++
    frames at the top of a stack captured with context='all'. All of them when none is Python."""
    for i, f in enumerate(frames):
        if str(f.get("filename", "")).endswith(".py"):
            return i
    return len(frames)


def entries(data, action):
    """Every trace entry whose action is `action`, on every device, in device then entry order:
    its index, size and frame count, the live and reserved totals right after it (as `timeline`),
    and the C++ frames above its first Python frame."""
    out = []
    for d in devices_of(data):
        trace = trace_of(data, d)
        rows = None
        for i, e in enumerate(trace):
            if e["action"] != action:
                continue
            if rows is None:
                rows = timeline(data, d)
            frames = e.get("frames") or []
            out.append({
                "device": d,
                "index": i,
                "action": e["action"],
                "addr": e.get("addr"),
                "size": e.get("size", 0),
                "live_bytes": rows[i][4],
                "reserved_bytes": rows[i][5],
                "frames": len(frames),
                "leading_native_frames": leading_native_frames(frames),
            })
    return out


# ---------------------------------------------------------------------------------------------
# Self-check on real files: the oracle's own reading must satisfy the format's invariants.


def self_check(data):
    """Returns a list of problems (empty when the oracle's view of the file is coherent)."""
    problems = []
    for i, s in enumerate(segments_of(data)):
        rows = block_rows(s)
        if sum(r[1] for r in rows) != s["total_size"]:
            problems.append(f"segments[{i}]: block sizes add to {sum(r[1] for r in rows)}, total_size {s['total_size']}")
        addr = s["address"]
        for j, r in enumerate(rows):
            if r[0] != addr:
                problems.append(f"segments[{i}].blocks[{j}]: address {r[0]} expected {addr}")
            addr = r[0] + r[1]
        alloc = sum(r[1] for r in rows if r[3] == "active_allocated")
        if "allocated_size" in s and alloc != s["allocated_size"]:
            problems.append(f"segments[{i}]: allocated blocks {alloc} != allocated_size {s['allocated_size']}")
        req = sum(r[2] for r in rows if r[3] in ACTIVE_STATES)
        if "requested_size" in s and req != s["requested_size"]:
            problems.append(f"segments[{i}]: requested {req} != requested_size {s['requested_size']}")
        for j, r in enumerate(rows):
            if r[3] not in ACTIVE_STATES and r[3] != "inactive":
                problems.append(f"segments[{i}].blocks[{j}]: unknown state {r[3]!r}")
    st = stats(data)
    for d in st["devices"]:
        dev = d["device"]
        rows = timeline(data, dev)
        if rows:
            last = rows[-1]
            if (last[4], last[5]) != (d["requested_bytes"], d["reserved_bytes"]):
                problems.append(f"device {dev}: last row {last} does not hold the final totals")
        live0, res0 = before_first(data, dev)
        for r in rows:
            if r[4] < 0 or r[5] < 0:
                problems.append(f"device {dev}: negative total in row {r}")
                break
        if live0 < 0 or res0 < 0:
            problems.append(f"device {dev}: negative totals before the first entry: live {live0} reserved {res0}")
        if sum(d["actions"].values()) != d["trace_events"]:
            problems.append(f"device {dev}: action counts do not add up")
    # pinned host memory: its trace, replayed forwards, must lead to its final segments
    trace = host_trace_of(data)
    if trace:
        try:
            got = host_state(data, len(trace) - 1)
            want = final_state(data, HOST)
            if got["segments"] != want["segments"]:
                problems.append("host: replaying host_traces does not lead to host_segments")
        except ReplayError as e:
            problems.append(f"host: {e}")
    for d in st["devices"]:
        over, most = trace_flags(data, d["device"])
        if over is False and most is not None and d["trace_events"] > most:
            problems.append(f"device {d['device']}: {d['trace_events']} entries, more than trace_alloc_max_entries "
                            f"{most}, yet not overflowed")
    return problems


def _files(args):
    for p in args:
        if os.path.isdir(p):
            for n in sorted(os.listdir(p)):
                if n.endswith((".pickle", ".pkl")):
                    yield os.path.join(p, n)
        else:
            yield p


def device_arg(text):
    if text == "host":
        return HOST
    return int(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("stats")
    p.add_argument("file")
    p.add_argument("--newer", action="store_true", help="with the keys of torch 2.12+ files")
    p = sub.add_parser("timeline")
    p.add_argument("file")
    p.add_argument("--device", type=device_arg, required=True)
    p = sub.add_parser("peaks")
    p.add_argument("file")
    p.add_argument("--device", type=device_arg, required=True)
    p = sub.add_parser("state")
    p.add_argument("file")
    p.add_argument("--device", type=device_arg, required=True)
    p.add_argument("--newer", action="store_true", help="with each segment's pool")
    p.add_argument("--at", type=int, help="host only: the state after this entry (replayed)")
    p = sub.add_parser("entries")
    p.add_argument("file")
    p.add_argument("--action", required=True)
    p = sub.add_parser("check")
    p.add_argument("paths", nargs="+")
    a = ap.parse_args(argv)

    if a.cmd == "stats":
        print(json.dumps(stats(load(a.file), newer=a.newer), indent=1))
    elif a.cmd == "timeline":
        sys.stdout.write(timeline_csv(load(a.file), a.device))
    elif a.cmd == "peaks":
        print(json.dumps(peaks(load(a.file), a.device)))
    elif a.cmd == "state":
        data = load(a.file)
        if a.at is not None:
            if a.device != HOST:
                ap.error("--at is for --device host only (the host's trace is replayed forwards)")
            print(json.dumps(host_state(data, a.at), indent=1))
        else:
            print(json.dumps(final_state(data, a.device, newer=a.newer), indent=1))
    elif a.cmd == "entries":
        print(json.dumps(entries(load(a.file), a.action), indent=1))
    elif a.cmd == "check":
        missing = [p for p in a.paths if not os.path.exists(p)]
        if missing:
            print(f"SKIP: {', '.join(missing)} not found")
            return 77
        bad = 0
        # A synthetic snapshot (tests/tools/hostile_pickles.py) must be coherent too.
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import hostile_pickles
        problems = self_check(loads(pickle.dumps(hostile_pickles.synthetic_snapshot(), protocol=4)))
        print(f"{'BAD' if problems else 'ok '} synthetic snapshot")
        for pr in problems[:20]:
            print(f"    {pr}")
        bad += bool(problems)
        for f in _files(a.paths):
            data = load(f)
            st = stats(data)
            summary = ", ".join(
                f"dev {d['device']}: {d['segments']} segs {d['blocks']} blocks reserved {d['reserved_bytes']} "
                f"allocated {d['allocated_bytes']} requested {d['requested_bytes']} trace {d['trace_events']} "
                f"before-first {before_first(data, d['device'])}"
                for d in st["devices"]) or "no devices"
            problems = self_check(data)
            print(f"{'BAD' if problems else 'ok '} {os.path.basename(f)}: {summary}")
            for pr in problems[:20]:
                print(f"    {pr}")
            bad += bool(problems)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
