#!/usr/bin/env python3
"""Independent test oracle for memlens: reads PyTorch CUDA memory snapshot pickles with
Python's own `pickle` module (refusing every class) and computes what `memlens-cli` must print.

It shares no code with memlens. It follows the command-line contract:

  stats      {"devices": [...]} - one object per device that owns a segment or has a trace entry
  timeline   index,action,addr,size,live_bytes,reserved_bytes - rewound from the final state
  state      segments and blocks of one device; final_state() gives it at the last entry
  entries    the trace entries of one action on every device, with the totals right after each
             (for tests of the views, which must not type in figures of the real files)

Library use:
    data = load(path); stats(data); timeline(data, dev); final_state(data, dev); repickle(src, dst, proto)

Command line (for debugging):
    snapshot_oracle.py stats FILE
    snapshot_oracle.py timeline FILE --device D
    snapshot_oracle.py state FILE --device D          (the state at the last entry)
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
    for d, t in enumerate(traces_of(data)):
        if len(t) > 0:
            devs.add(d)
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


def stats(data):
    segs = segments_of(data)
    out = []
    for d in devices_of(data):
        t = totals([s for s in segs if s["device"] == d])
        trace = trace_of(data, d)
        actions = {}
        for e in trace:
            actions[e["action"]] = actions.get(e["action"], 0) + 1
        t = {"device": d, **t, "trace_events": len(trace), "actions": actions}
        out.append(t)
    return {"devices": out}


# ---------------------------------------------------------------------------------------------
# Timeline


def final_live_reserved(data, device):
    t = totals([s for s in segments_of(data) if s["device"] == device])
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


def timeline_csv(data, device):
    lines = ["index,action,addr,size,live_bytes,reserved_bytes"]
    for (i, a, addr, size, live, reserved) in timeline(data, device):
        lines.append(f"{i},{a},{'' if addr is None else addr},{size},{live},{reserved}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# State


def final_state(data, device):
    """The contract's `state --at <last>` output for `device`: the file's own segments and blocks,
    in address order."""
    segs = [s for s in segments_of(data) if s["device"] == device]
    t = totals(segs)
    out_segs = []
    for s in sorted(segs, key=lambda s: s["address"]):
        out_segs.append({
            "address": s["address"],
            "total_size": s["total_size"],
            "stream": s.get("stream", 0),
            "is_expandable": bool(s.get("is_expandable", False)),
            "blocks": [{"address": a, "size": size, "requested_size": req, "state": st}
                       for (a, size, req, st) in block_rows(s)],
        })
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
    return problems


def _files(args):
    for p in args:
        if os.path.isdir(p):
            for n in sorted(os.listdir(p)):
                if n.endswith((".pickle", ".pkl")):
                    yield os.path.join(p, n)
        else:
            yield p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("stats")
    p.add_argument("file")
    p = sub.add_parser("timeline")
    p.add_argument("file")
    p.add_argument("--device", type=int, required=True)
    p = sub.add_parser("state")
    p.add_argument("file")
    p.add_argument("--device", type=int, required=True)
    p = sub.add_parser("entries")
    p.add_argument("file")
    p.add_argument("--action", required=True)
    p = sub.add_parser("check")
    p.add_argument("paths", nargs="+")
    a = ap.parse_args(argv)

    if a.cmd == "stats":
        print(json.dumps(stats(load(a.file)), indent=1))
    elif a.cmd == "timeline":
        sys.stdout.write(timeline_csv(load(a.file), a.device))
    elif a.cmd == "state":
        print(json.dumps(final_state(load(a.file), a.device), indent=1))
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
