#!/usr/bin/env python3
"""Hostile and broken inputs for memlens, built by hand from pickle opcodes (and a few with Python's
own pickler). Nothing here is ever unpickled by this module.

Each case is a Case(name, data, expect, place, ...):
  expect  "refuse"  - the reader must exit 1 with one error line;
          "accept"  - a valid snapshot; the reader must exit 0 (and agree with the oracle);
          "survive" - undefined by the format; exit 0, or exit 1 with one error line; never a crash.
  place   what the error line must point at, or None:
          ("op", offset, opname)  the byte offset of the first refused opcode, or its name;
          ("key", text)           a key path containing text (e.g. "segments");
          ("offset", limit)       some byte offset no larger than limit.
  marker  True where the pickle would run `touch <marker>` if it were executed.

Command line: hostile_pickles.py OUTDIR [REAL_SNAPSHOT]  writes every case to OUTDIR (e.g. as fuzz
seeds, or to try by hand).
"""

import gzip
import io
import os
import pickle
import pickletools
import random
import struct
import sys
import zipfile
from dataclasses import dataclass, field

PROTO, STOP, MARK, FRAME = b"\x80", b".", b"(", b"\x95"
EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE = b"}", b"]", b")"
SETITEM, SETITEMS, APPEND, APPENDS = b"s", b"u", b"a", b"e"
TUPLE, TUPLE1, TUPLE2, TUPLE3 = b"t", b"\x85", b"\x86", b"\x87"
BINUNICODE, SHORT_BINUNICODE, BINUNICODE8 = b"X", b"\x8c", b"\x8d"
BININT, BININT1, LONG1, LONG4 = b"J", b"K", b"\x8a", b"\x8b"
BINPUT, LONG_BINPUT, BINGET, LONG_BINGET, MEMOIZE = b"q", b"r", b"h", b"j", b"\x94"
GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ = b"c", b"\x93", b"R", b"b", b"i", b"o"
NEWOBJ, NEWOBJ_EX, EXT1, EXT2, EXT4, PERSID, BINPERSID = b"\x81", b"\x92", b"\x82", b"\x83", b"\x84", b"P", b"Q"
NONE, POP = b"N", b"0"

REFUSED_OPCODES = {"GLOBAL", "STACK_GLOBAL", "REDUCE", "BUILD", "INST", "OBJ", "NEWOBJ", "NEWOBJ_EX",
                   "EXT1", "EXT2", "EXT4", "PERSID", "BINPERSID"}


@dataclass
class Case:
    name: str
    data: bytes
    expect: str  # "refuse" | "accept" | "survive"
    place: tuple = None
    marker: bool = False
    note: str = ""
    extra: dict = field(default_factory=dict)


def proto(n):
    return PROTO + bytes([n])


def ustr(s):
    b = s.encode()
    return BINUNICODE + struct.pack("<I", len(b)) + b


def sstr(s):
    b = s.encode()
    return SHORT_BINUNICODE + bytes([len(b)]) + b


def first_refused(data):
    """(offset, name) of the first class-loading opcode, found by parsing (not running) the pickle."""
    try:
        for op, _arg, pos in pickletools.genops(data):
            if op.name in REFUSED_OPCODES:
                return pos, op.name
    except Exception:
        pass
    return None


def op_place(data):
    f = first_refused(data)
    assert f is not None, "no refused opcode in case"
    return ("op", f[0], f[1])


# ---------------------------------------------------------------------------------------------
# A small but complete synthetic snapshot (F/T era), coherent with the rules of the format.


def synthetic_snapshot(n_entries=120, line=None):
    base = 0x7F0000000000
    seg_size = 2 << 20
    fr = [{"name": f"fn{i}", "filename": f"/src/model_{i % 3}.py", "line": 10 + i} for i in range(6)]
    stack_a = fr[:4]
    stack_b = fr[2:]
    if line is not None:
        stack_b = stack_b + [{"name": "init_gpu_context", "filename": "torch/_subclasses/fake_tensor.py",
                              "line": line}]
    trace = [{"action": "segment_alloc", "addr": base, "size": seg_size, "stream": 0, "frames": stack_a,
              "time_us": 1700000000000000}]
    t = 1700000000000001
    live = []
    off = 0
    for i in range(n_entries):
        if live and (i % 3 == 2):
            a, s = live.pop(0)
            trace.append({"action": "free_requested", "addr": a, "size": s, "stream": 0, "frames": stack_b,
                          "time_us": t})
            trace.append({"action": "free_completed", "addr": a, "size": s, "stream": 0, "frames": [],
                          "time_us": t})
        else:
            s = 512 * (1 + i % 5) - 7
            a = base + off
            off += 512 * (1 + i % 5)
            live.append((a, s))
            trace.append({"action": "alloc", "addr": a, "size": s, "stream": 0, "frames": stack_a, "time_us": t})
        t += 3
    trace.append({"action": "oom", "device_free": 1 << 20, "size": 1 << 30, "stream": 0, "frames": stack_b,
                  "time_us": t})
    # Final state of segment 0: the live blocks, then inactive gaps, in address order.
    blocks = []
    livemap = dict(live)
    cur = base
    for i in range(n_entries):
        step = 512 * (1 + i % 5)
        if cur >= base + off:
            break
        if cur in livemap:
            blocks.append({"address": cur, "size": step, "requested_size": livemap[cur],
                           "state": "active_allocated", "frames": stack_a})
        else:
            blocks.append({"address": cur, "size": step, "requested_size": 0, "state": "inactive", "frames": []})
        cur += step
    blocks.append({"address": cur, "size": base + seg_size - cur, "requested_size": 0, "state": "inactive",
                   "frames": []})
    assert sum(b["size"] for b in blocks) == seg_size

    def seg(dev, addr, size, blks):
        alloc = sum(b["size"] for b in blks if b["state"] == "active_allocated")
        return {"device": dev, "address": addr, "total_size": size, "allocated_size": alloc, "active_size": alloc,
                "requested_size": sum(b["requested_size"] for b in blks if b["state"] == "active_allocated"),
                "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0), "is_expandable": False,
                "frames": [], "blocks": blks}

    other = 0x7F0010000000
    segs = [seg(0, base, seg_size, blocks),
            seg(0, other, 20 << 20, [{"address": other, "size": 20 << 20, "requested_size": 20000000,
                                      "state": "active_allocated", "frames": stack_b}]),
            seg(1, 0x7E0000000000, 2 << 20, [{"address": 0x7E0000000000, "size": 2 << 20, "requested_size": 0,
                                             "state": "inactive", "frames": []}])]
    return {"segments": segs, "device_traces": [trace, []],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0, "expandable_segments": False},
            "external_annotations": [{"stage": "START", "name": "step", "device": 0, "time_us": 1700000000000000}]}


class _Evil:
    """Pickles as a call of os.system (the class itself is never pickled: only the call is)."""

    def __init__(self, cmd):
        self.cmd = cmd

    def __reduce__(self):
        return (os.system, (self.cmd,))


def _nested_list(n):
    # n empty lists, then n-1 APPENDs: each appends the top list to the one below it.
    return proto(4) + EMPTY_LIST * n + APPEND * (n - 1) + STOP


def cases(tmpdir, real_snapshot=None, seed=1234):
    """Every hostile case. `tmpdir` is where a pickle that ran would leave its marker file."""
    marker = os.path.join(tmpdir, "PWNED")
    cmd = f"touch {marker}"
    out = []

    def add(name, data, expect, place=None, marker_case=False, note="", **extra):
        out.append(Case(name, data, expect, place, marker_case, note, extra))

    # --- class loading, calls and object building: refused wherever they appear ---------------
    classic = GLOBAL + b"posix\nsystem\n" + MARK + b"V" + cmd.encode() + b"\n" + TUPLE + REDUCE + STOP
    add("global_posix_system_protocol0", classic, "refuse", ("op", 0, "GLOBAL"), True)
    d = proto(2) + GLOBAL + b"posix\nsystem\n" + ustr(cmd) + TUPLE1 + REDUCE + STOP
    add("global_posix_system", d, "refuse", op_place(d), True)
    d = proto(2) + GLOBAL + b"os\nsystem\n" + ustr(cmd) + TUPLE1 + REDUCE + STOP
    add("global_os_system", d, "refuse", op_place(d), True)
    d = proto(2) + GLOBAL + b"builtins\neval\n" + ustr(f"__import__('os').system({cmd!r})") + TUPLE1 + REDUCE + STOP
    add("global_builtins_eval", d, "refuse", op_place(d), True)
    d = (proto(4) + sstr("posix") + MEMOIZE + sstr("system") + MEMOIZE + STACK_GLOBAL + MEMOIZE + sstr(cmd)
         + MEMOIZE + TUPLE1 + MEMOIZE + REDUCE + MEMOIZE + STOP)
    add("stack_global_posix_system", d, "refuse", op_place(d), True)
    # The call hidden inside an otherwise plausible snapshot, after valid data.
    d = (proto(4) + EMPTY_DICT + MEMOIZE + MARK + sstr("device_traces") + EMPTY_LIST + sstr("segments") + EMPTY_LIST
         + sstr("posix") + sstr("system") + STACK_GLOBAL + sstr(cmd) + TUPLE1 + REDUCE + APPEND + SETITEMS + STOP)
    add("stack_global_inside_snapshot", d, "refuse", op_place(d), True)
    d = proto(2) + EMPTY_DICT + EMPTY_TUPLE + REDUCE + STOP
    add("reduce", d, "refuse", op_place(d))
    d = proto(2) + EMPTY_DICT + EMPTY_DICT + BUILD + STOP
    add("build", d, "refuse", op_place(d))
    d = proto(2) + MARK + ustr(cmd) + INST + b"posix\nsystem\n" + STOP
    add("inst_posix_system", d, "refuse", op_place(d), True)
    d = proto(2) + MARK + GLOBAL + b"posix\nsystem\n" + ustr(cmd) + OBJ + STOP
    add("obj_posix_system", d, "refuse", op_place(d), True)
    d = proto(2) + MARK + EMPTY_DICT + OBJ + STOP
    add("obj", d, "refuse", op_place(d))
    d = proto(2) + EMPTY_DICT + EMPTY_TUPLE + NEWOBJ + STOP
    add("newobj", d, "refuse", op_place(d))
    d = proto(2) + GLOBAL + b"posix\nsystem\n" + ustr(cmd) + TUPLE1 + NEWOBJ + STOP
    add("newobj_posix_system", d, "refuse", op_place(d), True)
    d = proto(4) + EMPTY_DICT + EMPTY_TUPLE + EMPTY_DICT + NEWOBJ_EX + STOP
    add("newobj_ex", d, "refuse", op_place(d))
    d = proto(2) + EXT1 + b"\x01" + STOP
    add("ext1", d, "refuse", op_place(d))
    d = proto(2) + EXT2 + b"\x01\x02" + STOP
    add("ext2", d, "refuse", op_place(d))
    d = proto(2) + EXT4 + b"\x01\x02\x03\x04" + STOP
    add("ext4", d, "refuse", op_place(d))
    d = proto(2) + PERSID + b"some persistent id\n" + STOP
    add("persid", d, "refuse", op_place(d))
    d = proto(2) + ustr("pid") + BINPERSID + STOP
    add("binpersid", d, "refuse", op_place(d))
    for p in (0, 2, 4, 5):
        d = pickle.dumps(_Evil(cmd), protocol=p)
        add(f"python_reduce_os_system_protocol{p}", d, "refuse", op_place(d), True)
    d = pickle.dumps({"segments": [], "device_traces": [[_Evil(cmd)]]}, protocol=4)
    add("python_reduce_in_trace", d, "refuse", op_place(d), True)

    # --- not pickles at all ---------------------------------------------------------------
    valid4 = pickle.dumps(synthetic_snapshot(), protocol=4)
    add("empty_file", b"", "refuse")
    add("json_file", b'{"hello": [1, 2, 3], "world": null}\n', "refuse")
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as z:
        z.writestr("archive/data.pkl", valid4)
        z.writestr("archive/version", "3\n")
    add("zip_file", zbuf.getvalue(), "refuse")
    # compressed files are read as their decompressed stream (cli.compressed checks the valid ones):
    # what is inside still has to be a snapshot pickle, and a damaged stream is refused
    add("gzip_of_json", gzip.compress(b'{"hello": [1, 2, 3]}\n'), "refuse", ("key", "segments"))
    add("json_broken", b'{"segments": [{"device": 0, "address": 1,', "refuse", ("key", "JSON"))
    add("gzip_cut_in_half", gzip.compress(valid4)[: len(gzip.compress(valid4)) // 2], "refuse",
        ("key", "ends early"))
    add("gzip_of_zero_flood", gzip.compress(proto(4) + bytes(64 << 20)), "refuse")
    # a small gzip file whose string claims 4 GiB: refused at once, never buffered
    add("gzip_string_claims_4gib", gzip.compress(proto(4) + b"X" + (0xFFFFFFF0).to_bytes(4, "little") + bytes(4096)),
        "refuse", ("key", "longer than the rest of the file"))
    # a memlens session given where a snapshot is expected (SQLite's header, then pages)
    add("memlens_session", b"SQLite format 3\x00" + bytes(4080), "refuse", ("key", "memlens session"))
    rnd = random.Random(seed)
    for i in range(6):
        add(f"random_bytes_{i}", bytes(rnd.getrandbits(8) for _ in range(4096)), "refuse")
    for i in range(6):
        add(f"random_after_proto4_{i}", proto(4) + bytes(rnd.getrandbits(8) for _ in range(4096)), "refuse")
    for i in range(4):
        add(f"random_after_proto2_{i}", proto(2) + bytes(rnd.getrandbits(8) for _ in range(4096)), "refuse")

    # --- resource exhaustion ----------------------------------------------------------------
    n = 2_000_000
    add("nested_list_2M", _nested_list(n), "refuse", note="2,000,000 nested lists")
    add("nested_list_2M_in_segments",
        proto(4) + EMPTY_DICT + sstr("segments") + EMPTY_LIST * n + APPEND * (n - 1) + SETITEM + STOP, "refuse",
        note="'segments' holds 2,000,000 nested lists")
    add("nested_dict_2M", proto(4) + (EMPTY_DICT + sstr("k")) * n + EMPTY_DICT + SETITEM * n + STOP, "refuse",
        note="2,000,000 nested dicts")
    add("marks_3M", proto(4) + MARK * 3_000_000 + STOP, "refuse")
    add("marks_3M_then_list", proto(4) + MARK * 3_000_000 + b"l" + STOP, "survive",
        note="Python's unpickler returns [] here (an empty bare segment list)")
    d = proto(4) + BINUNICODE + struct.pack("<I", 0xFFFFFFF0) + b"abc" + STOP
    add("binunicode_longer_than_file", d, "refuse", ("offset", len(d)))
    d = proto(4) + BINUNICODE8 + struct.pack("<Q", 1 << 62) + b"abc" + STOP
    add("binunicode8_longer_than_file", d, "refuse", ("offset", len(d)))
    d = proto(4) + SHORT_BINUNICODE + b"\xff" + b"abc" + STOP
    add("short_binunicode_longer_than_file", d, "refuse", ("offset", len(d)))
    d = proto(2) + LONG4 + struct.pack("<i", 0x7FFFFFFF) + b"\x01\x02" + STOP
    add("long4_huge_length", d, "refuse", ("offset", len(d)))
    d = proto(2) + LONG4 + struct.pack("<i", -5) + b"\x01\x02" + STOP
    add("long4_negative_length", d, "refuse", ("offset", len(d)))
    d = proto(4) + FRAME + struct.pack("<Q", (1 << 63) + 5) + EMPTY_DICT + STOP
    add("frame_huge_length", d, "refuse")
    d = proto(2) + EMPTY_DICT + LONG_BINPUT + struct.pack("<I", 4_000_000_000) + STOP
    add("long_binput_4e9", d, "refuse", note="memo index 4,000,000,000 (must not allocate for it)")
    d = proto(2) + EMPTY_DICT + LONG_BINPUT + struct.pack("<I", 0xFFFFFFFF) + POP + LONG_BINGET + struct.pack("<I", 0xFFFFFFFF) + STOP
    add("long_binput_max_then_get", d, "refuse")
    d = proto(2) + BINGET + b"\x07" + STOP
    add("binget_never_stored", d, "refuse", ("op", 2, "BINGET"))
    d = proto(2) + LONG_BINGET + struct.pack("<I", 123456) + STOP
    add("long_binget_never_stored", d, "refuse", ("op", 2, "LONG_BINGET"))
    d = proto(4) + EMPTY_DICT + MEMOIZE + sstr("segments") + MEMOIZE + BINGET + b"\x05" + SETITEM + STOP
    add("binget_never_stored_in_snapshot", d, "refuse", ("op", d.index(BINGET + b"\x05"), "BINGET"))

    # --- integers ---------------------------------------------------------------------------
    wide = int.from_bytes(b"\x7f" * 10, "little", signed=True)
    d = pickle.dumps(synthetic_snapshot(line=wide), protocol=4)
    pos = _long1_offset(d, 10)
    add("long1_10_bytes_frame_line", d, "refuse", ("op", pos, "LONG1"),
        note="a frame line wider than 64 bits", alt_key="line")
    d = proto(2) + LONG1 + b"\x0a" + b"\x7f" * 10 + STOP
    add("long1_10_bytes_alone", d, "refuse")
    d = pickle.dumps(synthetic_snapshot(line=2**64 - 1), protocol=4)
    assert _long1_offset(d, 9) is not None
    add("long1_9_bytes_2_64_minus_1_frame_line", d, "accept", note="frame line 2^64-1 as a 9-byte LONG1")

    # --- valid pickles that are not snapshots: the error names the key path -----------------
    add("empty_dict", pickle.dumps({}, protocol=4), "refuse", ("key", "segments"))
    add("list_of_ints", pickle.dumps([1, 2, 3], protocol=4), "refuse", ("key", "[0]"))
    add("segments_is_a_string", pickle.dumps({"segments": "abc", "device_traces": []}, protocol=4), "refuse",
        ("key", "segments"))
    add("device_traces_is_an_int", pickle.dumps({"segments": [], "device_traces": 5}, protocol=4), "refuse",
        ("key", "device_traces"))
    add("segment_without_keys", pickle.dumps({"segments": [{"device": 0}], "device_traces": []}, protocol=4),
        "refuse", ("key", "segments[0]"))
    snap = synthetic_snapshot()
    snap["segments"][1]["blocks"] = "not a list"
    add("blocks_is_a_string", pickle.dumps(snap, protocol=4), "refuse", ("key", "blocks"))
    snap = synthetic_snapshot()
    del snap["device_traces"][0][3]["action"]
    add("trace_entry_without_action", pickle.dumps(snap, protocol=4), "refuse", ("key", "device_traces"))
    add("none", proto(2) + NONE + STOP, "refuse")
    add("a_string", pickle.dumps("segments", protocol=4), "refuse")

    # --- malformed opcode streams -----------------------------------------------------------
    add("append_on_empty_stack", proto(2) + APPEND + STOP, "refuse", ("op", 2, "APPEND"))
    add("setitems_without_mark", proto(2) + EMPTY_DICT + ustr("a") + SETITEMS + STOP, "refuse")
    add("tuple3_with_one_item", proto(2) + ustr("a") + TUPLE3 + STOP, "refuse")
    add("stop_on_empty_stack", proto(2) + STOP, "refuse")
    add("pop_on_empty_stack", proto(2) + POP + STOP, "refuse")
    add("no_stop", proto(4) + EMPTY_DICT, "refuse")
    add("unknown_opcode", proto(4) + b"\xff" + STOP, "refuse", ("op", 2, "0xff"))
    add("setitem_on_a_list", proto(2) + EMPTY_LIST + ustr("k") + ustr("v") + SETITEM + STOP, "refuse")
    add("append_to_a_dict", proto(2) + EMPTY_DICT + ustr("v") + APPEND + STOP, "refuse")
    add("unsupported_protocol_6", proto(6) + EMPTY_DICT + STOP, "refuse", ("offset", 2))

    # --- odd but parseable: anything but a crash ----------------------------------------------
    cyc = (proto(2) + EMPTY_DICT + MARK + ustr("segments") + EMPTY_LIST + ustr("device_traces") + EMPTY_LIST
           + EMPTY_LIST + EMPTY_DICT + MARK + ustr("action") + ustr("alloc") + ustr("addr") + BININT1 + b"\x10"
           + ustr("size") + BININT1 + b"\x10" + ustr("frames") + EMPTY_LIST + BINPUT + b"\x01"
           + BINGET + b"\x01" + APPEND + SETITEMS + APPEND + APPEND + SETITEMS + STOP)
    add("frames_list_contains_itself", cyc, "survive")
    bad_utf8 = proto(4) + EMPTY_DICT + SHORT_BINUNICODE + b"\x03\xff\xfe\xfd" + EMPTY_LIST + SETITEM + STOP
    add("invalid_utf8_key", bad_utf8, "refuse")
    snap = synthetic_snapshot()
    for s in snap["segments"][:2]:
        s["total_size"] = 2**63 - 1
    add("reserved_sum_overflows", pickle.dumps(snap, protocol=4), "survive")
    snap = synthetic_snapshot()
    snap["segments"][0]["blocks"][0]["size"] = -4096
    add("negative_block_size", pickle.dumps(snap, protocol=4), "survive")

    # --- valid controls (if these fail, the harness is wrong, not the reader) -------------------
    for p in (2, 4, 5):
        add(f"control_synthetic_protocol{p}", pickle.dumps(synthetic_snapshot(), protocol=p), "accept")

    # --- truncations: a valid pickle cut at every 1/50 of its length ----------------------------
    sources = [("synthetic_p4", valid4), ("synthetic_p2", pickle.dumps(synthetic_snapshot(), protocol=2))]
    if real_snapshot:
        with open(real_snapshot, "rb") as f:
            sources.append(("real_" + os.path.basename(real_snapshot).split(".")[0][:40], f.read()))
    for (label, full) in sources:
        cuts = sorted({len(full) * i // 50 for i in range(1, 50)} | {len(full) - 1})
        for c in cuts:
            if c > 0:
                add(f"truncated_{label}_at_{c}", full[:c], "refuse", ("offset", c))
    return out


def python_verdict(case):
    """What Python's own unpickler (refusing classes) plus the oracle make of a case: 'accept' or
    'refuse: reason'. Used to check the cases themselves."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import snapshot_oracle
    try:
        data = snapshot_oracle.loads(case.data)
        snapshot_oracle.stats(data)
        for d in snapshot_oracle.devices_of(data):
            snapshot_oracle.timeline(data, d)
        return "accept"
    except Exception as e:
        return f"refuse: {type(e).__name__}: {str(e)[:100]}"


def _long1_offset(data, nbytes):
    for op, arg, pos in pickletools.genops(data):
        if op.name == "LONG1" and data[pos + 1] == nbytes:
            return pos
    return None


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    for c in cases(outdir, argv[2] if len(argv) > 2 else None):
        with open(os.path.join(outdir, c.name + ".pickle"), "wb") as f:
            f.write(c.data)
        print(f"{c.name}: {len(c.data)} bytes, {c.expect}" + (f", place {c.place}" if c.place else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
