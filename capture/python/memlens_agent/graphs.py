"""Retained autograd graphs: which reference keeps which graph alive, with how many bytes.

``scan()`` returns one scan object of the session's graph-scan contract (README-graphs.md):

1. roots: live tensors with a ``grad_fn`` that something outside autograd references, found by
   naming every object reachable from frame locals and the job's module globals
   (graphs_refs.ReferrerSearch.forward), then by ``gc.get_referrers`` for the tensors
   ``gc.get_objects()`` knows of that the walk did not reach (reference cycles, library globals);
2. each root's graph, by ``next_functions``: node names, edges, and every node's saved tensors
   through ``_raw_saved_*`` / ``_saved_*``, never unpacking a hooked one (graphs_saved.HookProbe);
3. bytes by unique storage (pointer, size, device), leaving out parameters, their gradients,
   optimizer state and module buffers; the root tensor counts;
4. referrer paths, shortest first.

Nothing is kept after a scan returns: no tensor, node or container of the job.
"""

import gc
import hashlib
import os
import re
import sys
import time
import warnings

try:
    from . import graphs_refs, graphs_saved
except ImportError:   # loaded as a top-level module (tests, tools)
    import graphs_refs
    import graphs_saved

AGENT_DIR = os.path.dirname(os.path.realpath(__file__))
AGENT_PREFIX = (__name__.rpartition(".")[0] or "memlens_agent")

_probe = graphs_saved.HookProbe()

MAX_DETAIL_GRAPHS = 50           # graphs with nodes_list/edges (besides one per signature)
MAX_DETAIL_NODES_PER_SCAN = 20000
MAX_REVERSE = 64                 # unnamed tensors looked up with gc.get_referrers per scan
REVERSE_WORK = 200_000_000       # heap objects x objects asked about, per gc.get_referrers call

# "[torch.cuda.FloatTensor [32, 8]], which is output 0 of ..., is at version 26; expected version 25"
_MODIFIED = re.compile(r"\[torch\.(cuda\.)?(\w+)Tensor \[([0-9, ]*)\]\]")
_LEGACY_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
                  "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
                  "Bool": "bool", "ComplexFloat": "complex64", "ComplexDouble": "complex128"}

_RELEASED_MARKERS = ("backward through the graph a second time", "already been freed")


def hook_detection(torch=None):
    """How hooked saved tensors are told apart: "memory", or "unavailable" (then none is unpacked)."""
    torch = torch or sys.modules.get("torch")
    if torch is not None and _probe.mode == "uncalibrated":
        _probe.calibrate(torch)
    return _probe.mode


def _empty_scan(iteration, phase, time_us, reason=""):
    return {"iteration": iteration, "phase": phase, "time_us": time_us, "partial": bool(reason),
            "partial_reason": reason, "graphs": []}


def scan(*, max_seconds=2.0, max_objects=1_000_000, exclude_ids=(), iteration=None, phase="",
         time_us=None, max_graphs=500, max_detail_nodes=2000, kept=False, kept_device=None):
    """One graph scan. iteration, phase and time_us are the caller's; see README-graphs.md.

    kept=True: the same walk also names tensors without a graph, and the scan gets a "kept" list
    (the doctor's `kept` marker, doctor.py): containers reachable from named variables holding
    at least 2 such tensors on kept_device (None: any device), grouped by pattern."""
    torch = sys.modules.get("torch")
    if torch is None:
        return _empty_scan(iteration, phase, time_us)
    t0 = time.monotonic()
    # The scan allocates a table entry per object it names; automatic collections meanwhile
    # would traverse the whole heap again and again.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        scanner = _Scanner(torch, t0, max_seconds, max_objects, exclude_ids, max_graphs, max_detail_nodes)
        scanner.kept = kept
        scanner.kept_device = kept_device
        try:
            # reading attributes of every module object can trigger deprecation warnings (e.g.
            # torch.distributed.reduce_op); they are the scan's, not the job's, so keep them quiet
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = scanner.run()
        finally:
            scanner.close()
    except Exception as e:  # a scan must never break the job
        out = _empty_scan(iteration, phase, time_us, "scan failed: %s: %s" % (type(e).__name__, e))
    finally:
        if gc_was_enabled:
            gc.enable()
    out["iteration"] = iteration
    out["phase"] = phase
    out["time_us"] = time_us
    out["scan_us"] = int((time.monotonic() - t0) * 1e6)
    return out


class _Scanner:
    def __init__(self, torch, t0, max_seconds, max_objects, exclude_ids, max_graphs, max_detail_nodes):
        self.torch = torch
        self.t0 = t0
        self.deadline = t0 + max_seconds
        self.discovery_deadline = t0 + 0.6 * max_seconds
        self.max_objects = max_objects
        self.exclude = set(exclude_ids)
        self.max_graphs = max_graphs
        self.max_detail_nodes = max_detail_nodes
        self.partial = []
        self.excluded_keys = set()     # storages of parameters, gradients, optimizer state, buffers
        self.param_ids = set()
        self.nodes = {}                # id(node) -> node info (holds the node)
        self.orders = {}               # id(root node) -> (nodes, edges, truncated)
        self.internal = set()          # ids of tensor objects that graphs hold (saved inputs)
        self.types = {}                # node type -> base names of its SavedVariable attributes
        self.refs = None
        self.kept = False              # also collect containers of tensors without a graph
        self.kept_device = None
        self.kept_groups = None
        self._fn_base = getattr(torch._C, "_FunctionBase", None)
        self._param = torch.nn.Parameter
        self._tensor = torch.Tensor
        self._no_tf = (getattr(torch._C, "DisableTorchFunctionSubclass", None)
                       or getattr(torch._C, "DisableTorchFunction", None))

    def close(self):
        if self.refs is not None:
            self.refs.info.clear()
            self.refs.targets.clear()
        self.nodes.clear()
        self.orders.clear()

    # -- top level -----------------------------------------------------------------------------
    def run(self):
        torch = self.torch
        mode = hook_detection(torch)
        guard = self._no_tf() if self._no_tf is not None else None
        if guard is not None:
            guard.__enter__()
        try:
            roots = self._find_roots()
            if self.kept:
                self.kept_groups = self._kept_groups()
            graphs = self._walk_all(roots)
        finally:
            if guard is not None:
                guard.__exit__(None, None, None)
        total = {}
        for g in graphs:
            for k, s in g.pop("_storages").items():
                total[k] = s
        out = {"partial": bool(self.partial), "partial_reason": "; ".join(self.partial),
               "hook_detection": mode, "torch": str(getattr(torch, "__version__", "")),
               "python": "%d.%d.%d" % sys.version_info[:3],
               "objects_visited": self.refs.visited if self.refs else 0,
               "total_retained_bytes": sum(s["bytes"] for s in total.values()),
               "graphs": graphs}
        if mode != "memory":
            out["hook_detection_note"] = _probe.reason
        if self.kept_groups is not None:
            out["kept"] = self.kept_groups
        return out

    # -- roots ---------------------------------------------------------------------------------
    def _find_roots(self):
        """{id: (tensor, paths, unreachable)} of every root."""
        torch = self.torch
        tensor_t, param_t = self._tensor, self._param
        optim_t = getattr(getattr(torch, "optim", None), "Optimizer", None)
        module_t = torch.nn.Module
        kinds = tuple(t for t in (tensor_t, optim_t, module_t) if t is not None)
        cands = {}
        objs = gc.get_objects()
        heap = len(objs)
        n = 0
        for o in objs:
            n += 1
            if n & 4095 == 0 and time.monotonic() > self.deadline:
                self.partial.append("time limit while listing objects")
                break
            if not isinstance(o, kinds):
                continue
            if isinstance(o, tensor_t):
                if isinstance(o, param_t):
                    self._exclude_tensor(o, param=True)
                elif o.grad_fn is not None and id(o) not in self.exclude:
                    cands[id(o)] = o
            elif optim_t is not None and isinstance(o, optim_t):
                self._exclude_optimizer(o)
            else:
                try:
                    for b in o.__dict__.get("_buffers", {}).values():
                        if isinstance(b, tensor_t):
                            self._exclude_tensor(b)
                except Exception:
                    pass
        o = None
        del objs
        self.candidates = len(cands)

        if self.kept:
            def is_target(t):
                return t.grad_fn is not None or not t.requires_grad
        else:
            def is_target(t):
                return t.grad_fn is not None

        self.refs = refs = graphs_refs.ReferrerSearch(
            torch, is_target, self.discovery_deadline, self.max_objects, self.exclude,
            AGENT_DIR, AGENT_PREFIX)
        refs.forward()
        roots = {}
        for tid, t in refs.targets.items():
            if t.grad_fn is not None:
                roots[tid] = (t, refs.paths(tid), False)
        # Tensors that gc lists but no name reaches are mostly autograd's own: a saved input's
        # Python object lives on while its graph saves it. Walking the graphs tells those apart
        # (unpacking a saved input gives back that very object); the rest are looked up by
        # gc.get_referrers, whose cost grows with their number.
        for t, _, _ in roots.values():
            self._order(t.grad_fn)
        missing = {tid: t for tid, t in cands.items() if tid not in roots and tid not in self.internal}
        for t in list(missing.values()):
            if time.monotonic() > self.discovery_deadline:
                break
            self._order(t.grad_fn)
        missing = {tid: t for tid, t in missing.items() if tid not in self.internal}
        # gc.get_referrers visits every reference on the heap once per object asked about
        max_front = max(1, min(MAX_REVERSE, REVERSE_WORK // max(heap, 1)))
        if len(missing) > max_front:
            self.partial.append("%d unnamed tensors with a graph; %d looked up" % (len(missing), max_front))
            missing = dict(list(missing.items())[:max_front])
        # one level costs about 0.1 us per heap object: start only when one fits in the time left
        if missing and time.monotonic() + heap * 1.5e-7 < self.discovery_deadline:
            rev = refs.reverse(missing, own_ids={id(cands), id(roots), id(refs.info), id(refs.targets),
                                                 id(self.nodes), id(self.orders)}, max_front=max_front)
            for tid, (paths, unreachable) in rev.items():
                roots[tid] = (missing[tid], paths, unreachable)
        elif missing:
            self.partial.append("no time left for the reverse referrer search")
        if refs.truncated:
            self.partial.append(refs.truncated)
        missing.clear()
        cands.clear()
        return roots

    _KEPT_CONTAINERS = (list, tuple, dict, set, frozenset)

    def _kept_groups(self):
        """Containers that hold tensors without a graph (not parameters, buffers, gradients or
        optimizer state) on the training device, grouped by the pattern of their elements:
        [{pattern, count, bytes, device, containers, container, example}], largest first (container:
        the type name of the first container, list / dict / deque / ...); a group is
        listed when it holds at least 2 such tensors (one list of many, or many lists of one:
        cache[k] = [t] is __main__.cache[*][*])."""
        refs = self.refs
        info = refs.info
        by_container = {}      # container id -> {storage key: bytes}
        kinds = {}             # container id -> its type's name (list, dict, deque, ...)
        for tid, t in refs.targets.items():
            if t.grad_fn is not None or t.requires_grad:
                continue
            key, nb, dev = self._storage(t)
            if key is not None and key in self.excluded_keys:
                continue
            if self.kept_device is not None and dev != self.kept_device:
                continue
            e = info.get(tid)
            if e is None:
                continue
            for parent, _label in e[2]:
                if parent is None:
                    continue
                pe = info.get(parent)
                if pe is None:
                    continue
                c = pe[0]
                tc = type(c)
                if not (isinstance(c, self._KEPT_CONTAINERS)
                        or (tc.__module__ == "collections" and tc.__name__ == "deque")):
                    continue
                slot = by_container.get(parent)
                if slot is None:
                    slot = by_container[parent] = {}
                    kinds[parent] = tc.__name__
                slot[key if key is not None else ("?", tid)] = (nb, dev)
        groups = {}
        for cid, storages in by_container.items():
            paths = refs.paths(cid, 1)
            if not paths:
                continue
            pattern = re.sub(r"\[\d+\]", "[*]", paths[0]) + "[*]"
            touched = set()
            for k, (nb, dev) in storages.items():
                g = groups.get((pattern, dev))
                if g is None:
                    g = groups[(pattern, dev)] = {"pattern": pattern, "count": 0, "bytes": 0, "device": dev,
                                                  "containers": 0, "container": kinds[cid], "example": paths[0],
                                                  "_keys": set()}
                if g["example"] > paths[0]:
                    g["example"] = paths[0]
                if id(g) not in touched:
                    touched.add(id(g))
                    g["containers"] += 1
                if k in g["_keys"]:
                    continue
                g["_keys"].add(k)
                g["count"] += 1
                g["bytes"] += nb
        out = []
        for g in groups.values():
            g.pop("_keys")
            if g["count"] >= 2:
                out.append(g)
        out.sort(key=lambda g: (-g["bytes"], g["pattern"]))
        return out

    def _exclude_tensor(self, t, param=False):
        if param:
            self.param_ids.add(id(t))
        k = self._storage(t)[0]
        if k is not None:
            self.excluded_keys.add(k)
        g = getattr(t, "grad", None) if param else None
        if g is not None:
            k = self._storage(g)[0]
            if k is not None:
                self.excluded_keys.add(k)

    def _exclude_optimizer(self, opt):
        tensor_t = self._tensor
        try:
            for group in opt.param_groups:
                for p in group.get("params", ()):
                    if isinstance(p, tensor_t):
                        self._exclude_tensor(p, param=True)
            todo = list(opt.state.values())
            while todo:
                v = todo.pop()
                if isinstance(v, tensor_t):
                    self._exclude_tensor(v)
                elif isinstance(v, dict):
                    todo.extend(v.values())
                elif isinstance(v, (list, tuple)):
                    todo.extend(v)
        except Exception:
            pass

    # -- storages ------------------------------------------------------------------------------
    def _storage(self, t):
        """((device, ptr) or None, storage bytes, device)."""
        try:
            dev = str(t.device)
        except Exception:
            dev = "?"
        st = None
        for getter in ("untyped_storage", "_storage"):
            f = getattr(t, getter, None)
            if f is not None:
                try:
                    st = f()
                    break
                except Exception:
                    st = None
        if st is not None:
            try:
                ptr = int(st.data_ptr())
                nb = int(st.nbytes())
                if ptr:
                    return (dev, ptr), nb, dev
                return None, nb, dev
            except Exception:
                pass
        try:
            return None, int(t.numel() * t.element_size()), dev
        except Exception:
            return None, 0, dev

    def _tensor_entry(self, t, name, state):
        key, nb, dev = self._storage(t)
        e = {"name": name, "state": state, "shape": list(t.shape),
             "dtype": str(t.dtype).replace("torch.", ""), "device": dev, "bytes": nb,
             "ptr": key[1] if key else None}
        if id(t) in self.param_ids or (key is not None and key in self.excluded_keys):
            e["param"] = True
        return e, key

    # -- graphs --------------------------------------------------------------------------------
    def _walk_all(self, roots):
        groups = {}   # id(grad_fn) -> [grad_fn, [(tensor, paths, unreachable)]]
        for tid, (t, paths, unreachable) in roots.items():
            if not paths:
                continue
            fn = t.grad_fn
            if fn is None:
                continue
            g = groups.get(id(fn))
            if g is None:
                groups[id(fn)] = g = [fn, []]
            g[1].append((t, paths, unreachable))
        roots.clear()
        out = []
        for fn, members in groups.values():
            if time.monotonic() > self.deadline:
                self.partial.append("time limit while walking graphs (%d of %d walked)" % (len(out), len(groups)))
                break
            out.append(self._graph(fn, members))
        groups.clear()
        # bytes reachable from no other graph
        owners = {}
        for g in out:
            for k in g["_storages"]:
                owners[k] = owners.get(k, 0) + 1
        for g in out:
            g["exclusive_bytes"] = sum(s["bytes"] for k, s in g["_storages"].items() if owners[k] == 1)
        out.sort(key=lambda g: (-g["retained_bytes"], _natural(g["root"])))
        if len(out) > self.max_graphs:
            self.partial.append("%d graphs, the %d largest listed" % (len(out), self.max_graphs))
            del out[self.max_graphs:]
        # Node detail (nodes_list, edges) for the largest graphs and the first graph of each
        # signature, within a node budget: a hundred copies of one leaked graph say nothing new.
        budget = MAX_DETAIL_NODES_PER_SCAN
        signatures = set()
        for k, g in enumerate(out):
            first_of_kind = g["signature"] not in signatures
            signatures.add(g["signature"])
            n = len(g["nodes_list"])
            if (k < MAX_DETAIL_GRAPHS or first_of_kind) and n <= budget:
                budget -= n
                continue
            g["nodes_list"] = []
            g["edges"] = []
            g["detail_omitted"] = True
        return out

    def _order(self, root_fn):
        """(nodes in breadth-first order, edges as index pairs, cut short); cached per root."""
        r = self.orders.get(id(root_fn))
        if r is not None:
            return r
        index = {id(root_fn): 0}
        order = [root_fn]
        edges = []
        truncated = False
        i = 0
        while i < len(order):
            fn = order[i]
            if (i & 255) == 255 and time.monotonic() > self.deadline:
                truncated = True
                self.partial.append("time limit inside a graph walk")
                break
            for nxt in self._node(fn)["next"]:
                j = index.get(id(nxt))
                if j is None:
                    j = index[id(nxt)] = len(order)
                    order.append(nxt)
                edges.append([i, j])
            i += 1
        if truncated:
            del order[i:]
            edges = [e for e in edges if e[1] < i]
        r = self.orders[id(root_fn)] = (order, edges, truncated)
        return r

    def _graph(self, root_fn, members):
        members.sort(key=lambda m: (graphs_refs._steps(m[1][0]), len(m[1][0]), m[1][0]))
        paths = sorted({p for m in members for p in m[1]}, key=lambda p: (graphs_refs._steps(p), len(p), p))
        main = members[0][0]
        order, edges, truncated = self._order(root_fn)
        storages = {}
        for t, _, _ in members:
            key, nb, dev = self._storage(t)
            if key is not None and key not in self.excluded_keys:
                storages[key] = {"ptr": key[1], "bytes": nb, "device": dev}
        saved = alive = released = hooked = params = slots = slots_released = 0
        nodes_list = []
        for n, fn in enumerate(order):
            info = self.nodes[id(fn)]
            for e in info["saved"]:
                saved += 1
                st = e["state"]
                if e.get("kind") != "attribute":
                    slots += 1
                if st == "alive":
                    alive += 1
                    if e.get("param"):
                        params += 1
                elif st == "released":
                    released += 1
                    if e.get("kind") != "attribute":
                        slots_released += 1
                else:
                    hooked += 1
            for key, nb, dev in info["keys"]:
                if key not in self.excluded_keys:
                    storages[key] = {"ptr": key[1], "bytes": nb, "device": dev}
            if n < self.max_detail_nodes:
                d = {"name": info["name"], "saved": info["saved"]}
                if info.get("variable") is not None:
                    d["variable"] = info["variable"]
                    d["param"] = bool(info["variable"].get("param"))
                nodes_list.append(d)
        n_nodes = len(order)
        if len(nodes_list) < n_nodes:
            edges = [e for e in edges if e[0] < len(nodes_list) and e[1] < len(nodes_list)]
        by_dev = {}
        for s in storages.values():
            by_dev[s["device"]] = by_dev.get(s["device"], 0) + s["bytes"]
        root_key, root_nb, root_dev = self._storage(main)
        device = max(by_dev.items(), key=lambda kv: kv[1])[0] if by_dev else root_dev
        names = [self.nodes[id(fn)]["name"] for fn in order[:64]]
        sig = hashlib.sha1(("%s|%d" % (",".join(names), n_nodes)).encode()).hexdigest()[:12]
        g = {"root": paths[0], "referrers": paths,
             "pattern": re.sub(r"\[\d+\]", "[*]", paths[0]),
             "unreachable": any(m[2] for m in members) and all(m[2] for m in members),
             "nodes": n_nodes, "saved_tensors": saved, "saved_tensors_alive": alive,
             "saved_tensors_released": released, "hooked_saved_tensors": hooked,
             "saved_parameter_tensors": params,
             "retained_bytes": sum(s["bytes"] for s in storages.values()),
             "device": device,
             "root_shape": list(main.shape), "root_dtype": str(main.dtype).replace("torch.", ""),
             "root_device": root_dev, "root_grad_fn": self.nodes[id(root_fn)]["name"],
             "root_key": "%x" % id(main), "roots": len(members),
             "backward_ran": slots > 0 and slots_released == slots,
             "signature": sig,
             "nodes_list": nodes_list, "edges": edges,
             "storages": sorted(storages.values(), key=lambda s: (s["device"], s["ptr"])),
             "truncated": truncated or len(nodes_list) < n_nodes,
             "_storages": storages}
        return g

    # -- one node ------------------------------------------------------------------------------
    def _node(self, fn):
        info = self.nodes.get(id(fn))
        if info is not None:
            return info
        info = {"fn": fn, "name": _node_name(fn), "saved": [], "keys": [], "next": [], "variable": None}
        self.nodes[id(fn)] = info
        try:
            info["next"] = [f for f, _ in fn.next_functions if f is not None]
        except Exception:
            pass
        if (isinstance(fn, self._fn_base) if self._fn_base is not None
                else hasattr(type(fn), "_raw_saved_tensors") and hasattr(type(fn), "saved_tensors")):
            self._python_node(fn, info)   # a custom Function's ctx
        else:
            for base in self._saved_names(type(fn)):
                self._saved_slot(fn, base, info)
            if info["name"].endswith("AccumulateGrad"):
                v = getattr(fn, "variable", None)
                if isinstance(v, self._param) and id(v) not in self.param_ids:
                    self._exclude_tensor(v, param=True)   # also when the object listing was cut short
                if isinstance(v, self._tensor):
                    e, key = self._tensor_entry(v, "variable", "alive")
                    e.pop("state")
                    info["variable"] = e
                    if key is not None and not e.get("param"):
                        info["keys"].append((key, e["bytes"], e["device"]))
        return info

    def _saved_names(self, t):
        names = self.types.get(t)
        if names is None:
            names = self.types[t] = [a[len("_raw_saved_"):] for a in dir(t) if a.startswith("_raw_saved_")]
        return names

    def _add_saved(self, info, e, key):
        info["saved"].append(e)
        if key is not None and e["state"] == "alive" and not e.get("param"):
            info["keys"].append((key, e["bytes"], e["device"]))

    def _saved_slot(self, fn, base, info):
        try:
            raw = getattr(fn, "_raw_saved_" + base)
        except RuntimeError as e:
            if any(m in str(e) for m in _RELEASED_MARKERS):
                info["saved"].append({"name": base, "state": "released"})
            return
        except Exception:
            return
        self._saved_values(info, base, raw, lambda: getattr(fn, "_saved_" + base))

    def _saved_values(self, info, base, raw, unpack):
        many = isinstance(raw, (tuple, list))
        raws = list(raw) if many else [raw]
        states = [_probe.hooked(r) for r in raws]
        if all(s is False for s in states):
            try:
                val = unpack()
            except RuntimeError as e:
                msg = str(e)
                if any(m in msg for m in _RELEASED_MARKERS):
                    for k in range(len(raws)):
                        info["saved"].append({"name": _slot_name(base, many, k), "state": "released"})
                else:   # modified in place since it was saved (a weight after optimizer.step()):
                    # still held; shape and dtype from the message, bytes unknown
                    for k in range(len(raws)):
                        e = {"name": _slot_name(base, many, k), "state": "alive",
                             "error": msg.split("\n")[0][:300]}
                        m = _MODIFIED.search(msg)
                        if m and not many:
                            e["modified_in_place"] = True
                            e["shape"] = [int(d) for d in m.group(3).replace(" ", "").split(",") if d]
                            e["dtype"] = _LEGACY_DTYPES.get(m.group(2), m.group(2))
                            e["device"] = "cuda" if m.group(1) else "cpu"
                        info["saved"].append(e)
                return
            except Exception:
                return
            vals = list(val) if many and isinstance(val, (tuple, list)) else [val]
            for k, v in enumerate(vals):
                if isinstance(v, self._tensor):
                    self.internal.add(id(v))   # the object itself while the graph saves it
                    e, key = self._tensor_entry(v, _slot_name(base, many, k), "alive")
                    self._add_saved(info, e, key)
            del val, vals
            return
        for k, s in enumerate(states):
            name = _slot_name(base, many, k)
            if s is True:
                info["saved"].append({"name": name, "state": "hooked"})
            elif s is None:
                info["saved"].append({"name": name, "state": "hooked", "note": "hook state unknown: not inspected"})
            else:  # unhooked slot in a list with hooked ones: not unpacked either
                info["saved"].append({"name": name, "state": "alive", "note": "not inspected"})

    def _python_node(self, fn, info):
        try:
            raw = fn._raw_saved_tensors
        except RuntimeError as e:
            if any(m in str(e) for m in _RELEASED_MARKERS):
                info["saved"].append({"name": "saved_tensors", "state": "released"})
            raw = None
        except Exception:
            raw = None
        if raw:
            self._saved_values(info, "saved_tensors", raw, lambda: fn.saved_tensors)
        try:
            attrs = list(object.__getattribute__(fn, "__dict__").items())
        except Exception:
            attrs = []
        for k, v in attrs:
            vals = v if isinstance(v, (tuple, list)) else [v]
            for j, t in enumerate(vals):
                if isinstance(t, self._tensor):
                    self.internal.add(id(t))
                    name = "ctx.%s" % k if vals is not v else "ctx.%s[%d]" % (k, j)
                    e, key = self._tensor_entry(t, name, "alive")
                    e["kind"] = "attribute"
                    self._add_saved(info, e, key)


def _natural(text):
    """Sort key: train_losses[2] before train_losses[10]."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]


def _slot_name(base, many, k):
    return "%s[%d]" % (base, k) if many else base


def _node_name(fn):
    try:
        return str(fn.name())
    except Exception:
        return type(fn).__name__


class GraphHistory:
    """first_seen per graph across scans, for the caller (the agent) to annotate scans with."""

    def __init__(self):
        self._first = {}

    def annotate(self, scan_obj, iteration):
        seen = {}
        for g in scan_obj.get("graphs", ()):
            key = (g.get("root_key"), g.get("root_grad_fn"), tuple(g.get("root_shape") or ()))
            first = self._first.get(key, iteration)
            seen[key] = first
            g["first_seen"] = first
        self._first = seen   # graphs gone from this scan are forgotten (their keys may be reused)
        return scan_obj
