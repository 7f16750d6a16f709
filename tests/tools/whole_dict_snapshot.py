#!/usr/bin/env python3
"""Writes a snapshot with Python's own pickle (protocol 4, as torch's _dump_snapshot) whose trace
entries take every shape the reader's whole-dict path meets or leaves to the stack: frames lists
of memo gets, of new frames, of one frame, empty; strings new in an entry and read again within
it; a dict, a tuple, a float and a 9-byte integer under keys of their own; an entry listed twice;
a frames list shared by two entries; and enough of them that FRAME opcodes fall inside entries.
Then a training loop: the same entries every iteration, their numbers changing (addresses, times,
sizes, some of which change width), free_completed sharing its free_requested's frames list, as
torch writes them: what the reader's templates read. Prints the entries as Python reads them back
(JSON), for the test to compare with.

    whole_dict_snapshot.py OUT.pickle
"""

import json
import pickle
import sys


def main():
    out = sys.argv[1]
    frames = [{"filename": f"m{i % 7}.py", "line": i, "name": f"f{i}"} for i in range(40)]
    shared = [frames[3], frames[4], frames[5]]
    entries = []
    for i in range(6000):
        kind = i % 12
        fresh = "".join(["N", "/", "A"])  # a new str object each entry: memoised inside it
        e = {"action": ("alloc", "free_requested", "free_completed", "segment_alloc")[i % 4],
             "addr": 0x7F0000000000 + 512 * i, "size": 512 + (i % 97) * 4096, "stream": 0,
             "time_us": 1_700_000_000_000_000 + i}
        if kind == 0:
            e["frames"] = [frames[i % 40]]  # one frame: APPEND
        elif kind == 1:
            e["frames"] = []
        elif kind == 2:
            e["frames"] = shared  # the same list object each time: a memo get after the first
        elif kind == 3:
            e["frames"] = [{"filename": "new.py", "line": i, "name": f"g{i}"}, frames[1]]  # a new frame inside
        else:
            e["frames"] = [frames[(i + k) % 40] for k in range(2 + i % 9)]
        if kind == 4:
            e["compile_context"] = fresh
            e["user_metadata"] = fresh  # a memo get of a slot the entry itself set
        elif kind == 5:
            e["compile_context"] = fresh
        if kind == 6:
            e["extra"] = {"k": i}
        elif kind == 7:
            e["extra"] = (i, i + 1)
        elif kind == 8:
            e["extra"] = 0.5 + i
        elif kind == 9:
            e["extra"] = 2**63 + i
        elif kind == 10:
            e["extra"] = None
            e["flag"] = i % 2 == 0
        entries.append(e)
        if i % 500 == 499:
            entries.append(entries[i - 10])  # an entry listed twice: a memo get of its dict
    sizes = (7, 300, 70000, 2**33, 250)  # BININT1, BININT2, BININT, LONG1; 250 + it: BININT1 then BININT2
    for it in range(40):
        for k in range(25):
            stack = [frames[(k + j) % 40] for j in range(3 + k % 5)]
            addr = 0x7F1000000000 + 4096 * (it * 25 + k) * (1 if it % 3 else 4096)
            size = sizes[k % 5] + it
            t = 1_800_000_000_000_000 + 10 * (it * 25 + k)
            entries.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": stack})
            if k % 4 != 3:
                entries.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0,
                                "time_us": t + 1, "frames": stack})
                entries.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0,
                                "time_us": t + 2, "frames": stack})  # the same list: a memo get
    snap = {"segments": [], "device_traces": [entries],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1}}
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    expected = [{"action": e["action"], "addr": e["addr"], "size": e["size"], "time_us": e["time_us"],
                 "frames": [f"{fr['name']}@{fr['filename']}:{fr['line']}" for fr in e["frames"]],
                 "compile_context": e.get("compile_context", "")} for e in entries]
    json.dump(expected, sys.stdout)


if __name__ == "__main__":
    main()
