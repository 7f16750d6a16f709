"""--stack-depth: the agent's trimming (capture/python/memlens_agent/_trim.py) on real snapshots.

    test_trim.py --pickle resources/example.pickle [--snapshots DIR]

Each file is loaded twice with Python's pickle (snapshots are plain data): one copy is trimmed,
the other is the reference. For N in 1, 2, 3, 5 and 1000: every stack of the trimmed copy has
min(N, original length) frames, equal to the original's first (innermost) N; every other value
is unchanged; stacks that were one shared list are still one shared list; the frame lists
themselves were not modified (the trimmed copy's untrimmed lists are the originals). Files of
DIR that are not snapshots (no segments) are skipped with a line; an absent DIR is said so.
Exit 0: passed, 1: failed, 77: no snapshot at all.
"""

import argparse
import glob
import os
import pickle
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "capture", "python"))

from memlens_agent import _trim  # noqa: E402

SKIP = 77
DEPTHS = (1, 2, 3, 5, 1000)


class Failure(Exception):
    pass


def stack_holders(snap):
    """(path, dict) for every dict of SNAP that may carry a stack, in the layouts of
    shared/reference/snapshot-format.md, found independently of _trim (by walking everything)."""
    out = []

    def walk(o, path):
        if isinstance(o, dict):
            if "frames" in o:
                out.append((path, o))
            for k, v in o.items():
                walk(v, "%s.%s" % (path, k))
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                walk(v, "%s[%d]" % (path, i))

    walk(snap, "")
    return out


def same_except_frames(a, b, path, depth):
    """a (trimmed) equals b (original) everywhere, 'frames' values compared as trimmed stacks."""
    if type(a) is not type(b):
        raise Failure("%s: type %s != %s" % (path, type(a).__name__, type(b).__name__))
    if isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            raise Failure("%s: keys differ: %s != %s" % (path, list(a.keys()), list(b.keys())))
        for k in a:
            p = "%s.%s" % (path, k)
            if k == "frames" and isinstance(b[k], list):
                want = b[k][:depth]
                if len(a[k]) != min(depth, len(b[k])) or a[k] != want:
                    raise Failure("%s: %d frames, expected the innermost %d of %d" % (p, len(a[k]), min(depth, len(b[k])),
                                                                                    len(b[k])))
            else:
                same_except_frames(a[k], b[k], p, depth)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise Failure("%s: length %d != %d" % (path, len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            same_except_frames(x, y, "%s[%d]" % (path, i), depth)
    elif a != b and not (a != a and b != b):  # NaN == NaN here
        raise Failure("%s: %r != %r" % (path, a, b))


def check_file(path):
    with open(path, "rb") as f:
        data = f.read()
    original = pickle.loads(data)
    if not (isinstance(original, dict) and "segments" in original) and not isinstance(original, list):
        print("  skipped (not a snapshot): %s" % os.path.basename(path))
        return False
    holders = stack_holders(original)
    stacks = [h["frames"] for _, h in holders if isinstance(h.get("frames"), list)]
    longest = max((len(s) for s in stacks), default=0)
    distinct = len({id(s) for s in stacks})
    for depth in DEPTHS:
        snap = pickle.loads(data)
        before = stack_holders(snap)
        lists_before = [h["frames"] for _, h in before]
        copies_before = [list(l) if isinstance(l, list) else l for l in lists_before]
        # Which holders shared one list, by position in the walk.
        groups = {}
        for i, l in enumerate(lists_before):
            if isinstance(l, list):
                groups.setdefault(id(l), []).append(i)
        n = _trim.trim_stacks(snap, depth)
        after = stack_holders(snap)
        if [p for p, _ in after] != [p for p, _ in before]:
            raise Failure("%s: the places of the stacks changed" % path)
        same_except_frames(snap, original, "", depth)
        lists_after = [h["frames"] for _, h in after]
        for members in groups.values():
            if len({id(lists_after[i]) for i in members}) != 1:
                raise Failure("%s, depth %d: a shared stack (%s) is no longer one shared list" %
                              (path, depth, after[members[0]][0]))
        for l, copy in zip(lists_before, copies_before):
            if l != copy:
                raise Failure("%s, depth %d: a frame list torch returned was modified" % (path, depth))
        for l0, l1 in zip(lists_before, lists_after):
            if isinstance(l0, list) and len(l0) <= depth and l1 is not l0:
                raise Failure("%s, depth %d: a stack short enough was copied" % (path, depth))
        longer = len({id(l) for l in lists_before if isinstance(l, list) and len(l) > depth})
        if n != longer:
            raise Failure("%s, depth %d: %d stacks reported trimmed, %d were longer" % (path, depth, n, longer))
        # The pickle stays small: shared stacks are pickled once.
        if depth < longest and len(pickle.dumps(snap)) >= len(pickle.dumps(original)):
            raise Failure("%s, depth %d: the trimmed pickle is not smaller" % (path, depth))
    print("  ok: %s: %d stacks (%d distinct lists, longest %d), depths %s" %
          (os.path.basename(path), len(stacks), distinct, longest, ",".join(map(str, DEPTHS))))
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pickle", required=True)
    ap.add_argument("--snapshots")
    a = ap.parse_args()
    files = [a.pickle]
    if a.snapshots and os.path.isdir(a.snapshots):
        files += sorted(glob.glob(os.path.join(a.snapshots, "*.pickle")) + glob.glob(os.path.join(a.snapshots, "*.pkl")))
    else:
        print("  no real snapshots directory (%s): only %s" % (a.snapshots, a.pickle))
    checked = 0
    try:
        for f in files:
            if not os.path.exists(f):
                print("  absent: %s" % f)
                continue
            checked += check_file(f)
        # Bad depths are refused; a depth of the agent's config that is not a number never reaches here.
        for bad in (0, -1):
            try:
                _trim.trim_stacks({"segments": []}, bad)
                raise Failure("depth %d accepted" % bad)
            except ValueError:
                pass
        # The sender-thread wrapper notes the outcome in the head.
        head = {"info": {}}
        snap = {"segments": [{"frames": [1, 2, 3], "blocks": [{"frames": [1, 2, 3]}]}], "device_traces": [[]]}
        _trim.trimmer(2)(snap, head)
        if head["info"].get("stacks_trimmed") != 2 or snap["segments"][0]["frames"] != [1, 2]:
            raise Failure("trimmer(): %r" % head)
    except Failure as e:
        print("FAILED:", e)
        return 1
    if not checked:
        print("no snapshot to test: skipped")
        return SKIP
    print("trim: %d snapshot files passed" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
