"""Side-effect-free inspection of autograd saved tensors (see README-graphs.md).

Reading ``grad_fn._saved_<name>`` unpacks the saved variable, and unpacking runs the unpack hook
of a hooked saved tensor (``saved_tensors_hooks``, ``save_on_cpu``, non-reentrant checkpointing,
``SavedTensor.register_hooks``): a copy back to the GPU, or a whole forward pass re-run. Python has
no query "does this saved tensor have hooks", so this module reads the answer out of the C++
object: a ``torch._C._autograd.SavedTensor`` is a pybind11 wrapper that points at the node's own
``SavedVariable``, whose ``hooks_`` member is a ``unique_ptr`` that is null unless hooks are set.

The offset of ``hooks_`` differs between torch versions, so it is not assumed: ``HookProbe``
calibrates it once per process, on a thread of its own (the default-hooks stack is thread-local,
so the job's active hooks never see the calibration's tensors), from small CPU graphs whose hook
state is known: the same saved slots (a leaf input, a non-leaf input, an output) plain, released
by backward and hooked. The offset chosen is the word that is non-null in every hooked sample and
null in every other, and whose pointee starts with the same vtable in every hooked sample. If no
such word exists, or the wrapper does not point inside the node, detection is "unavailable" and
the scanner never unpacks a saved tensor (all count as hooked, i.e. not inspected).

With ``hooks_`` null, unpacking calls no Python code: it returns the saved tensor, ``None`` for an
empty slot, or raises ERR_BACKWARD_TWICE for a slot that backward released.
"""

import ctypes
import threading

_HEAD = object.__basicsize__          # bytes of PyObject_HEAD: pybind11's value pointer follows it
_PTR = ctypes.sizeof(ctypes.c_void_p)
_WORDS = 12                           # how much of a SavedVariable is read during calibration
_NODE_SPAN = 8192                     # a SavedVariable member lies this close after its node


def _word(addr):
    return ctypes.c_void_p.from_address(addr).value or 0


def _wrapped_ptr(obj):
    """The C++ pointer right after the PyObject header: pybind11 instance value / THPCppFunction cdata."""
    return _word(id(obj) + _HEAD)


class HookProbe:
    """Tells whether a ``SavedTensor`` has hooks, without calling any of them."""

    def __init__(self):
        self.mode = "uncalibrated"     # "memory" | "unavailable" | "uncalibrated"
        self.offset = None             # byte offset of SavedVariable::hooks_
        self.reason = ""
        self._saved_type = None
        self._lock = threading.Lock()

    # -- calibration ---------------------------------------------------------------------------
    def calibrate(self, torch, timeout=5.0):
        with self._lock:
            if self.mode != "uncalibrated":
                return self.mode
            result = {}
            t = threading.Thread(target=self._calibrate_thread, args=(torch, result),
                                 name="memlens-graphs-calibrate", daemon=True)
            try:
                t.start()
                t.join(timeout)
            except RuntimeError:
                # no new threads at interpreter shutdown (an exit scan that is the first scan):
                # calibrate here; at exit no saved_tensors_hooks context is open any more
                t = None
                self._calibrate_thread(torch, result)
            if t is not None and t.is_alive():
                self.mode, self.reason = "unavailable", "calibration did not finish"
            elif "offset" in result:
                self.mode, self.offset = "memory", result["offset"]
                self._saved_type = result["type"]
            else:
                self.mode, self.reason = "unavailable", result.get("reason", "calibration failed")
            return self.mode

    @staticmethod
    def _calibrate_thread(torch, result):
        try:
            result.update(_calibrate(torch))
        except Exception as e:  # never let calibration break the job
            result["reason"] = "calibration failed: %s: %s" % (type(e).__name__, e)

    # -- queries -------------------------------------------------------------------------------
    def hooked(self, raw):
        """True: hooks set (never unpack). False: no hooks (unpacking runs no hook). None: unknown."""
        if self.mode != "memory" or type(raw) is not self._saved_type:
            return None
        sv = _wrapped_ptr(raw)
        if not sv:
            return None
        return _word(sv + self.offset) != 0


def _samples(torch):
    """Three graphs built the same way: (plain, released, hooked, registered); each a list of SavedTensor + node."""
    x = torch.randn(3, 2, requires_grad=True)
    w = torch.randn(2, 4, requires_grad=True)

    def build():
        h = x.sin()          # SinBackward0: self (a leaf, saved as is)
        m = h.mm(w)          # MmBackward0: self (non-leaf input), mat2 (a leaf)
        return m.exp()       # ExpBackward0: result (an output)

    def slots(root):
        out, seen, todo = [], set(), [root.grad_fn]
        while todo:
            fn = todo.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            for a in dir(fn):
                if a.startswith("_raw_saved_"):
                    out.append((fn, getattr(fn, a)))
            todo.extend(f for f, _ in fn.next_functions)
        return out

    plain = build()
    released = build()
    released.sum().backward()

    # The packed value must not be the tensor: an output packed as itself would form a cycle
    # through C++ (tensor -> grad_fn -> hooks -> tensor) that no collector can free.
    def pack(t):
        return None

    def unpack(packed):
        raise RuntimeError("memlens calibration graph: never unpacked")

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        hooked = build()
    registered = build()
    reg_slots = slots(registered)
    for _, raw in reg_slots:
        raw.register_hooks(pack, unpack)
    # keep the roots alive with their slots
    return ([plain, slots(plain)], [released, slots(released)], [hooked, slots(hooked)],
            [registered, reg_slots])


def _calibrate(torch):
    plain, released, hooked, registered = _samples(torch)
    groups = {"plain": plain[1], "released": released[1], "hooked": hooked[1] + registered[1]}
    if any(len(v) < 4 for v in (plain[1], released[1], hooked[1])):
        return {"reason": "unexpected saved slots in the calibration graphs"}
    saved_type = type(plain[1][0][1])
    words = {}
    for kind, slots in groups.items():
        rows = []
        for fn, raw in slots:
            if type(raw) is not saved_type:
                return {"reason": "saved slot of type %s" % type(raw).__name__}
            node = _wrapped_ptr(fn)
            sv = _wrapped_ptr(raw)
            if not node or not (node <= sv < node + _NODE_SPAN):
                return {"reason": "SavedTensor does not point into its node (pybind11 layout?)"}
            rows.append((ctypes.c_void_p * _WORDS).from_address(sv))
        words[kind] = [[w or 0 for w in row] for row in rows]
    for k in range(_WORDS):
        if not all(r[k] for r in words["hooked"]):
            continue
        if any(r[k] for r in words["plain"] + words["released"]):
            continue
        vtables = {_word(r[k]) for r in words["hooked"]}
        if 0 not in vtables and len(vtables) <= 2:
            return {"offset": k * _PTR, "type": saved_type}
    return {"reason": "no SavedVariable word tells hooked slots apart"}
