"""Trimming the stacks of an allocator snapshot to the innermost N frames (--stack-depth N).

PyTorch has no depth limit when it records stacks (_record_memory_history takes none, 1.13 to
2.11), so the agent trims the snapshot dict after torch.cuda.memory._snapshot(), on the sender
thread, before pickling it. A stack ("frames") is a list of frame dicts, innermost first (the
allocating function, then its callers, up to <module>), so the innermost N are frames[:N].

Where stacks are (shared/reference/snapshot-format.md): segments[*].frames,
segments[*].blocks[*].frames, segments[*].blocks[*].history[*].frames (torch 2.0),
device_traces[*][*].frames; a list of segments (torch.cuda.memory_snapshot()) is read the same.

_snapshot() builds new Python objects at every call, so the containing dicts are the agent's own:
their "frames" value is replaced by a shorter list. The frame lists themselves and the frame dicts
are never changed (torch deduplicates tracebacks, so one list is often shared by many entries):
each list is trimmed once, and every entry that shared it shares the shorter one, which keeps the
pickle's memo working (the pickle stays small).
"""


def trim_stacks(snapshot, depth):
    """Keeps at most DEPTH (>= 1) innermost frames in every stack of SNAPSHOT (a dict from
    _snapshot(), or a list of segments). Returns the number of stacks (distinct lists) shortened."""
    depth = int(depth)
    if depth < 1:
        raise ValueError("stack depth must be 1 or more, got %d" % depth)
    memo = {}  # id(original list) -> (original, trimmed); the original is kept alive so ids stay unique

    def trim(entry):
        if type(entry) is not dict:
            return
        frames = entry.get("frames")
        if type(frames) is not list or len(frames) <= depth:
            return
        key = id(frames)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = (frames, frames[:depth])
        entry["frames"] = hit[1]

    if isinstance(snapshot, dict):
        segments = snapshot.get("segments") or ()
        traces = snapshot.get("device_traces") or ()
    else:
        segments, traces = snapshot or (), ()
    for seg in segments:
        if type(seg) is not dict:
            continue
        trim(seg)
        for block in seg.get("blocks") or ():
            trim(block)
            if type(block) is dict:
                for h in block.get("history") or ():  # torch 2.0's legacy layout
                    trim(h)
    for trace in traces:
        for entry in trace or ():
            trim(entry)
    return len(memo)


def trimmer(depth):
    """prepare(snapshot, head) for Channel.send_pickled: trims on the sender thread and notes the
    outcome in head["info"] (stacks_trimmed, or stack_depth_error with the snapshot sent as it is
    so far)."""

    def prepare(snapshot, head):
        info = head.setdefault("info", {})
        try:
            info["stacks_trimmed"] = trim_stacks(snapshot, depth)
        except Exception as e:  # an unexpected layout: better a full snapshot than none
            info["stack_depth_error"] = "%s: %s" % (type(e).__name__, e)
        return snapshot

    return prepare
