"""What "the doctor" (memlens-cli check, the Findings dock) needs from a Python job.

Records three kinds of evidence (capture/README.md, "What the doctor records"):

* a ``forward`` marker per iteration, at the first call of the top-level module (an nn.Module
  called while no other module's forward runs): grad mode, ``training``, the training device,
  whether the output has a graph and, for evaluation with grad, the bytes that graph saved;
  parameters whose ``.grad`` is allocated at forward start; the call's input tensors; the
  previous iteration's inputs that are still alive, and who keeps them;
* a ``kept`` marker at every graph scan: containers reachable from named variables that hold
  tensors without a graph on the training device (predictions gathered on the GPU);
* ``categories`` in each allocator snapshot's info: the storages of the parameters, gradients,
  optimizer state and input batch of the tracked model and optimizers.

Costs. Every nn.Module call goes through one wrapper of ``Module.__call__`` whose nested path is
one attribute test; only a top-level call does more, and only the first top-level call of an
iteration records anything (a few dozen Python operations plus one pass over the parameters).
The walks (saved tensors of an evaluation graph, referrers of a previous batch) run only when
the mistake is there, and within a share of the job's time (``doctor_max_share``).

Nothing here keeps a tensor or module of the job alive: weak references only.
"""

import gc
import sys
import threading
import time
import weakref

try:
    from . import graphs, graphs_refs
except ImportError:   # loaded as a top-level module (tests)
    import graphs
    import graphs_refs

MAX_INPUTS = 8
PARAM_REFRESH = 64         # iterations between two walks of the model's parameters
FIRST_WALKS = 3            # walks always done, before the time share applies
WALK_MAX_SECONDS = 0.5


def _now_us():
    return time.time_ns() // 1000


_STORAGE_GETTERS = ["untyped_storage", "_storage"]   # torch 2.x, 1.13; pruned by install()


def storage_key(t):
    """((device index, storage data_ptr) or None, storage bytes); device index -1: the CPU."""
    for getter in _STORAGE_GETTERS:
        f = getattr(t, getter, None)
        if f is not None:
            try:
                st = f()
                ptr = st.data_ptr()
                return ((t.get_device(), ptr) if ptr else None), st.nbytes()
            except Exception:
                continue
    try:
        return None, int(t.numel() * t.element_size())
    except Exception:
        return None, 0


def tensors_in(obj, tensor_t, limit=64):
    """Tensors of obj: obj itself, or the items of a tuple/list/dict (one level)."""
    if isinstance(obj, tensor_t):
        return [obj]
    out = []
    if isinstance(obj, dict):
        vals = list(obj.values())
    elif isinstance(obj, (tuple, list)):
        vals = obj
    else:
        return out
    for v in vals:
        if isinstance(v, tensor_t):
            out.append(v)
            if len(out) >= limit:
                break
    return out


def _tensor_bytes(t):
    try:
        return int(t.numel() * t.element_size())
    except Exception:
        return 0


def categories(torch, modules=(), optimizers=(), inputs=()):
    """{"parameter": [[ptr, bytes], ...], "gradient": [...], "optimizer_state": [...], "input": [...]}
    for the given modules, optimizers and input tensors: storages by address (the allocator block
    that holds a CUDA storage starts at or below its data_ptr). Each storage once per category;
    a storage in an earlier category is not repeated in a later one."""
    tensor_t = torch.Tensor
    out = {"parameter": [], "gradient": [], "optimizer_state": [], "input": []}
    seen = set()

    def add(cat, t):
        if not isinstance(t, tensor_t):
            return
        key, nb = storage_key(t)
        if key is None or key in seen:
            return
        seen.add(key)
        out[cat].append([key[1], nb])

    params = []
    for m in modules:
        try:
            params.extend(m.parameters())
        except Exception:
            pass
    for opt in optimizers:
        try:
            for group in opt.param_groups:
                params.extend(p for p in group.get("params", ()) if isinstance(p, tensor_t))
        except Exception:
            pass
    for p in params:
        add("parameter", p)
    for p in params:
        add("gradient", getattr(p, "grad", None))
    for opt in optimizers:
        try:
            todo = list(opt.state.values())
        except Exception:
            todo = []
        while todo:
            v = todo.pop()
            if isinstance(v, tensor_t):
                add("optimizer_state", v)
            elif isinstance(v, dict):
                todo.extend(v.values())
            elif isinstance(v, (list, tuple)):
                todo.extend(v)
    for t in inputs:
        add("input", t)
    return out


def saved_bytes(torch, outputs, module, max_seconds=WALK_MAX_SECONDS):
    """Bytes of the tensors saved for backward by the graphs of ``outputs`` (tensors with a
    grad_fn): unique storages, without the module's parameters and buffers. Hooked saved
    tensors are never unpacked (graphs_saved.HookProbe). Returns (bytes, note)."""
    mode = graphs.hook_detection(torch)
    sc = graphs._Scanner(torch, time.monotonic(), max_seconds, 10 ** 6, (), 1, 10 ** 6)
    guard = sc._no_tf() if sc._no_tf is not None else None
    if guard is not None:
        guard.__enter__()
    try:
        try:
            for p in module.parameters():
                sc._exclude_tensor(p, param=True)
            for b in module.buffers():
                sc._exclude_tensor(b)
        except Exception:
            pass
        for t in outputs:
            fn = t.grad_fn
            if fn is not None:
                sc._order(fn)
        keys = {}
        hooked = 0
        for info in sc.nodes.values():
            for e in info["saved"]:
                st = e.get("state")
                if st == "hooked":
                    hooked += 1
                elif st == "alive" and not e.get("param") and e.get("ptr"):
                    keys[(e.get("device"), e["ptr"])] = int(e.get("bytes") or 0)
        note = ""
        if mode != "memory":
            note = "hooked saved tensors cannot be told apart here: none was inspected"
        elif hooked:
            note = "%d saved tensors packed by hooks are not counted" % hooked
        if sc.partial:
            note = (note + "; " if note else "") + "; ".join(sc.partial)
        return sum(keys.values()), note
    finally:
        if guard is not None:
            guard.__exit__(None, None, None)
        sc.close()


def find_references(torch, targets, exclude_ids=(), max_seconds=WALK_MAX_SECONDS):
    """{id(tensor): [paths]} for the given tensors, from named variables (the graph scans'
    forward walk, graphs_refs)."""
    want = {id(t) for t in targets}
    if not want:
        return {}
    gc_was = gc.isenabled()
    gc.disable()
    refs = graphs_refs.ReferrerSearch(torch, lambda t: id(t) in want, time.monotonic() + max_seconds, 10 ** 6,
                                      exclude_ids, graphs.AGENT_DIR, graphs.AGENT_PREFIX)
    try:
        refs.forward()
        return {tid: refs.paths(tid) for tid in refs.targets}
    finally:
        refs.info.clear()
        refs.targets.clear()
        if gc_was:
            gc.enable()


class Doctor(object):
    """The forward watch of one agent (installed by install())."""

    def __init__(self, agent, config):
        self.agent = agent
        self.enabled = bool(config.get("doctor", True))
        self.max_share = float(config.get("doctor_max_share", 0.02))
        self.depth = 0                 # 1 while a top-level forward runs (main thread)
        self.torch = None
        self.tensor_t = None
        self.marked = 0                # the iteration of the last forward marker
        self.model = None              # weakref: the module of the last forward marker
        self.optimizers = weakref.WeakSet()
        self.cur_inputs = []           # weakrefs to the inputs of the last marked call
        self.walks = 0
        self.walk_s = 0.0
        self.started = time.monotonic()
        self.last_saved = {}           # id(module class) -> last measured saved bytes
        self.pcache = None             # parameters(): (weakref module, weakrefs, iteration, ...)
        self.compiling = lambda: False
        self.main_ident = threading.main_thread().ident
        self.inference_enabled = lambda: False
        self.dtype_names = {}          # torch dtype -> "float32"

    # -- installation ----------------------------------------------------------------------------
    def install(self, torch):
        self.torch = torch
        self.inference_enabled = getattr(torch, "is_inference_mode_enabled", None) or (lambda: False)
        self.tensor_t = torch.Tensor
        getters = [g for g in _STORAGE_GETTERS if hasattr(torch.Tensor, g)]
        if getters:
            _STORAGE_GETTERS[:] = getters
        # torch.compile: while dynamo traces, calls pass straight through (dynamo folds
        # is_compiling() to True, so it never traces the bookkeeping below)
        comp = getattr(getattr(torch, "compiler", None), "is_compiling", None)   # torch >= 2.3
        self.compiling = comp if comp is not None else self._compiling_fallback
        Module = torch.nn.Module
        orig = Module.__call__
        doctor = self

        def __call__(self, *args, **kwargs):
            if doctor.depth:
                return orig(self, *args, **kwargs)
            return doctor.top_call(orig, self, args, kwargs)

        try:
            __call__.__name__ = getattr(orig, "__name__", "__call__")
            __call__.__qualname__ = getattr(orig, "__qualname__", "Module.__call__")
            __call__.__doc__ = getattr(orig, "__doc__", None)
            __call__.__wrapped__ = orig
        except Exception:
            pass
        self.agent.patch(Module, "__call__", __call__)

    def _compiling_fallback(self):
        """torch < 2.3: dynamo's own is_compiling once torch._dynamo is imported (torch 2.0-2.2
        import it lazily); before that nothing can be compiling."""
        d = sys.modules.get("torch._dynamo")
        f = getattr(d, "is_compiling", None) if d is not None else None
        if f is None:
            return False
        self.compiling = f
        return bool(f())

    def add_optimizer(self, opt):
        try:
            self.optimizers.add(opt)
        except Exception:
            pass

    def allowed(self):
        """Whether an expensive walk may run: the first few always, then within max_share."""
        if self.walks < FIRST_WALKS:
            return True
        return self.walk_s <= self.max_share * max(time.monotonic() - self.started, 1e-3)

    # -- the top-level call ----------------------------------------------------------------------
    def top_call(self, orig, mod, args, kwargs):
        a = self.agent
        if (self.compiling() or not self.enabled or a.exited
                or threading.get_ident() != self.main_ident):
            return orig(mod, *args, **kwargs)
        pre = None
        try:
            pre = self.before(mod, args, kwargs)
        except Exception as e:
            a.error("forward start", e)
        self.depth = 1
        try:
            out = orig(mod, *args, **kwargs)
        except BaseException as e:
            self.depth = 0
            if pre is not None:
                try:
                    self.after(pre, mod, None, e)
                except Exception as e2:
                    a.error("forward end", e2)
            raise
        self.depth = 0
        if pre is not None:
            try:
                self.after(pre, mod, out, None)
            except Exception as e:
                a.error("forward end", e)
        return out

    def before(self, mod, args, kwargs):
        """The first top-level call of an iteration: what the rules need, gathered cheaply (this
        runs once per iteration on the training thread; encoding is the sender thread's)."""
        t0 = _now_us()
        a = self.agent
        a.on_forward_top(mod, t0)
        it = a.index + 1
        if it == self.marked:
            return None        # not the first top-level call of this iteration
        self.marked = it
        torch = self.torch
        params, device, n, nb = self.parameters(mod, it)
        gn = gb = 0
        for p in params:
            g = p.grad
            if g is not None:
                gn += 1
                gb += g.numel() * g.element_size()
        del params
        d = {"module": type(mod).__name__, "training": mod.training, "grad_enabled": torch.is_grad_enabled(),
             "inference_mode": bool(self.inference_enabled()), "device": device,
             "params": {"count": n, "bytes": nb}, "grads": {"count": gn, "bytes": gb}}
        # inputs: up to MAX_INPUTS tensors, one level into tuples/lists/dicts
        tensor_t = self.tensor_t
        inputs = []
        for v in (args if not kwargs else tuple(args) + tuple(kwargs.values())):
            if isinstance(v, tensor_t):
                inputs.append(v)
            else:
                inputs.extend(tensors_in(v, tensor_t, MAX_INPUTS))
            if len(inputs) >= MAX_INPUTS:
                del inputs[MAX_INPUTS:]
                break
        keys = set()
        desc = []
        names = self.dtype_names
        refs = []
        for t in inputs:
            key, snb = storage_key(t)
            if key is not None:
                keys.add(key)
            dt = t.dtype
            name = names.get(dt)
            if name is None:
                name = names[dt] = str(dt).replace("torch.", "")
            desc.append({"bytes": t.numel() * t.element_size(), "storage_bytes": snb, "shape": list(t.shape),
                         "dtype": name, "device": str(t.device)})
            try:
                refs.append(weakref.ref(t))
            except TypeError:
                pass
        d["inputs"] = desc
        d["previous_inputs"] = self.previous(keys)
        r = self.model
        if r is None or r() is not mod:
            self.model = weakref.ref(mod)
        self.cur_inputs = refs
        return (t0, it, d)

    def parameters(self, mod, it):
        """(parameters, device of the first, count, bytes) of mod. Walking module.parameters()
        costs about 2 us per submodule, so the list is kept as weak references and walked
        again every PARAM_REFRESH iterations, for another module, or when a parameter died."""
        c = self.pcache
        if c is not None and c[0]() is mod and it - c[2] < PARAM_REFRESH:
            ps = []
            for r in c[1]:
                p = r()
                if p is None:     # (never `None in ps`: that compares tensors with ==)
                    break
                ps.append(p)
            else:
                return ps, c[3], c[4], c[5]
        ps = list(mod.parameters())
        device = str(ps[0].device) if ps else ""
        nb = sum(p.numel() * p.element_size() for p in ps)
        try:
            self.pcache = (weakref.ref(mod), [weakref.ref(p) for p in ps], it, device, len(ps), nb)
        except TypeError:
            self.pcache = None
        return ps, device, len(ps), nb

    def previous(self, keys):
        """The previous marked call's inputs still alive now (not sharing a storage with this
        call's inputs)."""
        alive = []
        for r in self.cur_inputs:    # the previous marked call's (cur_inputs is moved on after)
            t = r()
            if t is not None:
                alive.append(t)
        if not alive:
            return {"count": 0, "bytes": 0, "references": []}
        seen = {}
        kept = []
        for t in alive:
            key, nb = storage_key(t)
            if key is not None and (key in keys or key in seen):
                continue
            if key is not None:
                seen[key] = nb
            else:
                seen[("?", id(t))] = nb
            kept.append(t)
        out = {"count": len(kept), "bytes": sum(seen.values()), "references": []}
        if kept:
            if self.allowed():
                t0 = time.monotonic()
                try:
                    found = find_references(self.torch, kept, exclude_ids=(id(self), id(self.agent), id(alive),
                                                                           id(kept)))
                    paths = []
                    for t in kept:
                        for p in found.get(id(t), ()):
                            if p not in paths:
                                paths.append(p)
                    out["references"] = paths[:8]
                finally:
                    self.walks += 1
                    self.walk_s += time.monotonic() - t0
            else:
                out["references_skipped"] = True
        del alive, kept
        return out

    def after(self, pre, mod, out, exc):
        t0, it, d = pre
        if exc is not None:
            d["raised"] = type(exc).__name__
            d["output_requires_grad"] = False
            d["output_bytes"] = 0
            d["saved_bytes"] = 0
        else:
            outs = tensors_in(out, self.tensor_t)
            grads = [t for t in outs if t.requires_grad and t.grad_fn is not None]
            d["output_requires_grad"] = bool(grads)
            seen = {}
            for t in outs:
                key, nb = storage_key(t)
                seen[key if key is not None else ("?", id(t))] = nb
            d["output_bytes"] = sum(seen.values())
            d["saved_bytes"] = 0
            if grads and not d["training"]:
                ck = id(type(mod))
                if self.allowed():
                    w0 = time.monotonic()
                    try:
                        b, note = saved_bytes(self.torch, grads, mod)
                    finally:
                        self.walks += 1
                        self.walk_s += time.monotonic() - w0
                    d["saved_bytes"] = b
                    self.last_saved[ck] = b
                    if note:
                        d["saved_note"] = note
                else:
                    d["saved_bytes"] = self.last_saved.get(ck, 0)
                    d["saved_bytes_measured"] = False
            del grads, outs
        # encoded and sent by the sender thread, never delaying the iteration record (_channel.py)
        self.agent.ch.send_deferred({"t": "marker", "time_us": t0, "iteration": it, "name": "forward", "data": d})

    # -- at snapshots ----------------------------------------------------------------------------
    def categories(self):
        mods = []
        m = self.model() if self.model is not None else None
        if m is not None:
            mods.append(m)
        inputs = [t for t in (r() for r in self.cur_inputs) if t is not None]
        return categories(self.torch, mods, list(self.optimizers), inputs)

    def training_device(self):
        m = self.model() if self.model is not None else None
        if m is None:
            return None
        try:
            for p in m.parameters():
                return str(p.device)
        except Exception:
            pass
        return None
