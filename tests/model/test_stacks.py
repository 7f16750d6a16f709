#!/usr/bin/env python3
"""The frames of every trace entry and every block as memlens reads them (memlens-dump-stacks) against what
Python's own pickle reads (tests/tools/snapshot_oracle.py's class-refusing loader), on the bundled
example, every real snapshot in ../shared/snapshots, and a generated snapshot
(tests/bench/make_large_snapshot.py: shared frame dicts, shared frames lists, 10,000 entries);
the example and the generated one also re-pickled with protocols 0, 2 and 5.

    test_stacks.py --dump memlens-dump-stacks --python PY --source-dir DIR [--snapshots DIR]
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

NO_LINE = 2 ** 64 - 1


def frames_of(frames):
    out = []
    for fr in frames or []:
        line = fr.get("line")
        if line == NO_LINE:
            line = None
        out.append([fr.get("filename", ""), line, fr.get("name", "")])
    return out


def python_lines(oracle, data):
    """{"d", "i" or "b", "f"} for every trace entry and every block, as memlens must read them,
    per device: entries first, then blocks (segments by address; a torch 2.0 block's frames are
    those of its first history entry)."""
    traces = oracle.traces_of(data)
    segments = oracle.segments_of(data)
    devices = sorted({s.get("device", 0) for s in segments} | {d for d, t in enumerate(traces) if t})
    for d in devices:
        for i, e in enumerate(traces[d] if d < len(traces) and traces[d] else []):
            yield {"d": d, "i": i, "f": frames_of(e.get("frames"))}
        b = 0
        for seg in sorted((s for s in segments if s.get("device", 0) == d), key=lambda s: s["address"]):
            for blk in seg.get("blocks", []):
                history = blk.get("history")
                if isinstance(history, list):
                    frames = history[0].get("frames") if history and isinstance(history[0], dict) else None
                else:
                    frames = blk.get("frames")
                yield {"d": d, "b": b, "f": frames_of(frames)}
                b += 1


def check(dump, path, oracle):
    out = subprocess.run([dump, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if out.returncode != 0:
        return "memlens-dump-stacks failed: " + out.stderr.decode(errors="replace").strip()
    got = [json.loads(l) for l in out.stdout.decode().splitlines()]
    want = list(python_lines(oracle, oracle.load(path)))
    if len(got) != len(want):
        return "%d entries and blocks read, Python has %d" % (len(got), len(want))
    for g, w in zip(got, want):
        place = {k: v for k, v in w.items() if k != "f"}
        if {k: v for k, v in g.items() if k != "f"} != place:
            return "order differs at %s (memlens: %s)" % (place, {k: v for k, v in g.items() if k != "f"})
        if g["f"] != w["f"]:
            return "%s: frames differ:\n  memlens %s\n  python  %s" % (place, g["f"][:4], w["f"][:4])
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dump", required=True)
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--snapshots")
    a = p.parse_args()
    sys.path.insert(0, os.path.join(a.source_dir, "tests", "tools"))
    import snapshot_oracle as oracle

    tmp = tempfile.mkdtemp(prefix="memlens-stacks-")
    files = [os.path.join(a.source_dir, "resources", "example.pickle")]
    if a.snapshots and os.path.isdir(a.snapshots):
        files += sorted(glob.glob(os.path.join(a.snapshots, "*.pickle")) + glob.glob(os.path.join(a.snapshots, "*.pkl")))
    else:
        print("SKIPPED the real snapshots: %s is absent" % a.snapshots)
    generated = os.path.join(tmp, "generated-10000.pickle")
    subprocess.run([a.python, os.path.join(a.source_dir, "tests", "bench", "make_large_snapshot.py"), generated,
                    "--entries", "10000"], check=True, stdout=subprocess.DEVNULL)
    files.append(generated)

    failures = 0
    checked = 0
    for src in files:
        variants = [src]
        # other protocols (other memo opcodes, no frames, text opcodes): the made-up files only,
        # as the real ones take time (cli.snapshots re-pickles those for the contract's figures)
        for proto in (0, 2, 5) if src in (files[0], generated) else ():
            dst = os.path.join(tmp, "p%d-%s" % (proto, os.path.basename(src)))
            oracle.repickle(src, dst, proto)
            variants.append(dst)
        for path in variants:
            why = check(a.dump, path, oracle)
            checked += 1
            if why:
                failures += 1
                print("FAIL %s: %s" % (path, why))
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d files checked, %d failed" % (checked, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
