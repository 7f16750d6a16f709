"""Referrer paths from named variables to objects (see README-graphs.md).

Forward: a breadth-first walk of the Python object graph from the named starting points (frame
locals of every thread's stack, globals of ``__main__`` and of the job's own modules), labelling
each edge: ``.attr``, ``[3]``, ``['key']``, a closure variable ``.name``. Every object is visited
once; up to ``MAX_IN_EDGES`` incoming edges per object are kept, so that aliases give more than
one path. ``is_target(obj)`` marks the objects whose paths are wanted (tensors with a grad_fn);
the walk does not descend into them.

Reverse: targets known to exist (from ``gc.get_objects()``) that the forward walk did not reach
are looked up with ``gc.get_referrers``, one heap pass per level for all of them together, until
a referrer is a frame, a module's namespace or an object the forward walk named. A target with
referrers but no named one once they are exhausted is kept alive only by a reference cycle (or
by C++): its path starts with ``<unreachable Type>``. A target with no referrer at all is held
only by C++ (autograd's saved variables keep their Python object alive) and is not a root.

The scanner's own frames and containers, and objects in ``exclude_ids``, are never traversed or
reported.
"""

import gc
import os
import sys
import sysconfig
import threading
import time
import types

MAX_IN_EDGES = 4
MAX_PATHS = 8
MAX_PATH_STEPS = 64
REVERSE_LEVELS = 8

_CO_OPTIMIZED = 0x0001

_OLD_FRAME_LOCALS = sys.version_info < (3, 13)   # f_locals is a snapshot dict cached on the frame

_ATOMIC = (str, bytes, bytearray, int, float, complex, bool, type(None), type(Ellipsis), range,
           slice, memoryview, types.ModuleType, types.CodeType, types.BuiltinFunctionType,
           types.BuiltinMethodType, types.WrapperDescriptorType, types.MethodWrapperType,
           types.GetSetDescriptorType, types.MemberDescriptorType, types.MethodDescriptorType,
           property, type(NotImplemented))
_ATOMIC_SET = frozenset(_ATOMIC)


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        try:
            p = sysconfig.get_paths().get(key)
        except Exception:
            p = None
        if p:
            dirs.add(os.path.realpath(p))
    for p in sys.path:
        if p and os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages"):
            dirs.add(os.path.realpath(p))
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        dirs.add(os.path.realpath(os.path.join(p, "lib")))
    return tuple(d.rstrip(os.sep) + os.sep for d in dirs)


_LIB_DIRS = None


_LIB_FILES = {}


def _is_library_file(path):
    global _LIB_DIRS
    r = _LIB_FILES.get(path)
    if r is not None:
        return r
    if _LIB_DIRS is None:
        _LIB_DIRS = _library_dirs()
    if not path or path.startswith("<"):
        r = True
    else:
        rp = os.path.realpath(path)
        r = rp.startswith(_LIB_DIRS) or "/site-packages/" in rp or "/dist-packages/" in rp
    if len(_LIB_FILES) < 100000:
        _LIB_FILES[path] = r
    return r


def user_modules(agent_prefix, agent_dir=None):
    """(name, module) of __main__ and the job's own modules, __main__ first."""
    out = []
    main = sys.modules.get("__main__")
    seen = {id(main)}
    if isinstance(main, types.ModuleType):
        out.append(("__main__", main))
    for name, mod in list(sys.modules.items()):
        if not isinstance(mod, types.ModuleType) or name.startswith(agent_prefix) or id(mod) in seen:
            continue
        seen.add(id(mod))   # one name per module (__mp_main__ is __main__ under multiprocessing)
        f = getattr(mod, "__file__", None)
        if not f or not isinstance(f, str) or _is_library_file(f):
            continue
        if agent_dir and (f.startswith(agent_dir) or os.path.realpath(f).startswith(agent_dir)):
            continue
        out.append((name, mod))
    return out


def _short_repr(k):
    if isinstance(k, (str, int, float, bool, type(None))):
        r = repr(k)
        return r if len(r) <= 60 else r[:57] + "..."
    if isinstance(k, tuple) and len(k) <= 4 and all(isinstance(e, (str, int, float, bool)) for e in k):
        r = repr(k)
        return r if len(r) <= 60 else "(...)"
    return "<%s>" % type(k).__name__


def frame_locals(frame):
    """The frame's local variables as (name, value) pairs, leaving no reference behind.

    Before Python 3.13 ``frame.f_locals`` of a function frame copies the fast locals into a
    dict cached on the frame, which would keep them alive after the function drops them; that
    cache is emptied again (it is refreshed by every later reader). Not under a trace function
    (a debugger): after a Python trace function returns, the interpreter writes that dict back
    into the frame's variables, and an emptied one would delete them."""
    try:
        fl = frame.f_locals
    except Exception:
        return []
    try:
        items = list(fl.items())
    except Exception:
        return []
    if (_OLD_FRAME_LOCALS and type(fl) is dict and frame.f_code.co_flags & _CO_OPTIMIZED
            and fl is not frame.f_globals and frame.f_trace is None and not _tracing()):
        fl.clear()
    return items


def _tracing():
    if sys.gettrace() is not None:
        return True
    gettrace = getattr(threading, "gettrace", None)   # Python 3.10+
    return gettrace is not None and gettrace() is not None


def _instance_dict(o):
    try:
        d = object.__getattribute__(o, "__dict__")
    except Exception:
        return None
    return d if type(d) is dict else None


def _slot_names(t):
    names = []
    for k in getattr(t, "__mro__", ()):
        s = k.__dict__.get("__slots__", ())
        if isinstance(s, str):
            s = (s,)
        for n in s:
            if n not in ("__dict__", "__weakref__"):
                if n.startswith("__") and not n.endswith("__"):
                    n = "_%s%s" % (k.__name__.lstrip("_"), n)
                names.append(n)
    return names


class ReferrerSearch:
    def __init__(self, torch, is_target, deadline, max_objects, exclude_ids, agent_dir, agent_prefix):
        self.torch = torch
        self.is_target = is_target
        self.deadline = deadline
        self.max_objects = max_objects
        self.exclude = set(exclude_ids)
        self.agent_dir = agent_dir.rstrip(os.sep) + os.sep
        self.agent_prefix = agent_prefix
        self.torch_dir = os.path.dirname(os.path.realpath(torch.__file__)) + os.sep
        self.info = {}            # id -> [obj, depth, [(parent id | None, label), ...]]
        self.targets = {}         # id -> obj: targets reached
        self.visited = 0
        self.truncated = ""
        self._user_types = {}
        self._kinds = {}
        self._param_type = torch.nn.Parameter
        self._tensor_type = torch.Tensor
        self._module_type = torch.nn.Module

    # -- helpers -------------------------------------------------------------------------------
    def own_frame(self, f):
        fn = f.f_code.co_filename
        return fn.startswith(self.agent_dir) or os.path.realpath(fn).startswith(self.agent_dir)

    def _skip_frame(self, f):
        if self.own_frame(f):
            return True
        fn = f.f_code.co_filename
        return fn.startswith(self.torch_dir)

    def _user_type(self, t):
        r = self._user_types.get(t)
        if r is None:
            mod = sys.modules.get(getattr(t, "__module__", None) or "")
            f = getattr(mod, "__file__", None) if mod is not None else None
            r = (t.__module__ == "__main__") or bool(f and not _is_library_file(f))
            self._user_types[t] = r
        return r

    # -- forward -------------------------------------------------------------------------------
    def starting_points(self):
        """(label, object) of every named variable: frame locals, then module globals."""
        starts = []
        me = sys._getframe()
        try:
            frames = sys._current_frames()
        except Exception:
            frames = {0: me}
        module_dicts = {id(m.__dict__) for _, m in user_modules(self.agent_prefix, self.agent_dir)}
        for tid, top in frames.items():
            f = top
            while f is not None:
                if not self._skip_frame(f):
                    if not f.f_code.co_flags & _CO_OPTIMIZED:
                        # module-level or class-body code: its namespace, unless a module root has it
                        g = f.f_globals
                        ns = f.f_locals
                        if ns is not g or id(g) not in module_dicts:
                            prefix = str(g.get("__name__", "<module>")) if ns is g else f.f_code.co_name
                            for k, v in list(ns.items()):
                                if not (k.startswith("__") and k.endswith("__")):
                                    starts.append(("%s.%s" % (prefix, k), v))
                    else:
                        name = f.f_code.co_name
                        for k, v in frame_locals(f):
                            starts.append(("%s.%s" % (name, k), v))
                f = f.f_back
        del frames, me, f, top
        for name, mod in user_modules(self.agent_prefix, self.agent_dir):
            for k, v in list(mod.__dict__.items()):
                if k.startswith("__") and k.endswith("__"):
                    continue
                starts.append(("%s.%s" % (name, k), v))
        return starts

    # how _reach treats objects of a type, cached per type
    _SKIP, _TENSOR, _WALK = 0, 1, 2

    def _kind(self, t):
        k = self._kinds.get(t)
        if k is None:
            if t in _ATOMIC_SET or issubclass(t, _ATOMIC):
                k = self._SKIP
            elif issubclass(t, self._tensor_type):
                k = self._SKIP if issubclass(t, self._param_type) else self._TENSOR
            elif issubclass(t, type):
                k = self._WALK     # classes: only the job's own (see _reach)
            else:
                k = self._WALK
            self._kinds[t] = k
        return k

    def forward(self):
        exclude = self.exclude
        level = []
        for label, obj in self.starting_points():
            if id(obj) in exclude:
                continue
            self._reach(None, label, obj, 0, level)
        depth = 0
        checks = 0
        info = self.info
        kinds = self._kinds
        kind = self._kind
        reach = self._reach
        walk = self._WALK
        while level:
            nxt = []
            depth += 1
            for obj in level:
                checks += 1
                if checks & 511 == 0:
                    if time.monotonic() > self.deadline:
                        self.truncated = "time limit while naming referrers"
                        return
                    if self.visited > self.max_objects:
                        self.truncated = "object limit while naming referrers"
                        return
                oid = id(obj)
                t = type(obj)
                if t is list or t is tuple:
                    # the common case, inline: atomic items cost one set lookup
                    for i, child in enumerate(obj):
                        ct = type(child)
                        k = kinds.get(ct)
                        if k is None:
                            k = kind(ct)
                        if k == 0:
                            continue
                        e = info.get(id(child))
                        if e is not None:
                            if len(e[2]) < MAX_IN_EDGES and id(child) != oid:
                                e[2].append((oid, i))
                            continue
                        if id(child) not in exclude:
                            reach(oid, i, child, depth, nxt)
                    continue
                if t is dict:
                    items = tuple(dict.items(obj))
                    for key, child in items:
                        ct = type(child)
                        k = kinds.get(ct)
                        if k is None:
                            k = kind(ct)
                        if k == 0:
                            continue
                        e = info.get(id(child))
                        if e is not None:
                            if len(e[2]) < MAX_IN_EDGES and id(child) != oid:
                                e[2].append((oid, (key,)))
                            continue
                        if id(child) not in exclude:
                            reach(oid, (key,), child, depth, nxt)
                    continue
                for label, child in self._children(obj):
                    if id(child) in exclude:
                        continue
                    reach(oid, label, child, depth, nxt)
            level = nxt

    def _reach(self, parent, label, obj, depth, nxt):
        """Records one edge to obj; queues obj when it is new and worth walking."""
        oid = id(obj)
        e = self.info.get(oid)
        if e is not None:
            if len(e[2]) < MAX_IN_EDGES and (parent is None or parent != oid):
                e[2].append((parent, label))
            return
        t = type(obj)
        k = self._kinds.get(t)
        if k is None:
            k = self._kind(t)
        if k == 0:
            return
        if k == 1:
            if self.is_target(obj):
                self.info[oid] = [obj, depth, [(parent, label)]]
                self.targets[oid] = obj
                self.visited += 1
            return
        if t is not dict and t is not list and isinstance(obj, type) and not self._user_type(obj):
            return
        self.info[oid] = [obj, depth, [(parent, label)]]
        self.visited += 1
        nxt.append(obj)

    def _children(self, o):
        """(label, child) pairs of o; never runs user code on purpose (no __getattr__, no __iter__)."""
        t = type(o)
        try:
            if t is dict or isinstance(o, dict):
                return [((k,), v) for k, v in tuple(dict.items(o))]
            if t is list or t is tuple or isinstance(o, (list, tuple)):
                items = list.copy(o) if isinstance(o, list) else tuple.__iter__(o)
                fields = getattr(t, "_fields", None) if t is not tuple else None
                out = []
                for i, v in enumerate(items):
                    if fields and i < len(fields):
                        out.append(("." + fields[i], v))
                    else:
                        out.append(("[%d]" % i, v))
                out.extend(self._attrs(o, t))
                return out
            if isinstance(o, (set, frozenset)):
                return [("{*}", v) for v in tuple(o)]
            if isinstance(o, types.FunctionType):
                return self._function_children(o)
            if isinstance(o, types.MethodType):
                return [(".__self__", o.__self__), (".__func__", o.__func__)]
            if isinstance(o, (staticmethod, classmethod)):
                return [(".__func__", o.__func__)]
            if isinstance(o, type):
                return [("." + k, v) for k, v in tuple(o.__dict__.items())
                        if not (k.startswith("__") and k.endswith("__"))]
            if isinstance(o, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
                f = getattr(o, "gi_frame", None) or getattr(o, "cr_frame", None) or getattr(o, "ag_frame", None)
                return [(".<locals>." + k, v) for k, v in frame_locals(f)] if f is not None else []
            if isinstance(o, BaseException):
                out = [(".__traceback__", o.__traceback__), (".__cause__", o.__cause__),
                       (".__context__", o.__context__), (".args", o.args)]
                return out + self._attrs(o, t)
            if isinstance(o, types.TracebackType):
                return [(".tb_frame", o.tb_frame), (".tb_next", o.tb_next)]
            if isinstance(o, types.FrameType):
                if self.own_frame(o) or not o.f_code.co_flags & _CO_OPTIMIZED:
                    return []   # ours, or module-level code: its globals are roots already
                return [(".<%s>.%s" % (o.f_code.co_name, k), v) for k, v in frame_locals(o)]
            if isinstance(o, types.CellType):
                try:
                    return [(".cell_contents", o.cell_contents)]
                except ValueError:
                    return []
            if t.__module__ == "collections" and t.__name__ == "deque":
                return [("[%d]" % i, v) for i, v in enumerate(tuple(o))]
            if t.__module__ == "functools" and t.__name__ == "partial":
                return ([(".args[%d]" % i, v) for i, v in enumerate(o.args)]
                        + [(".keywords[%r]" % k, v) for k, v in o.keywords.items()])
            if isinstance(o, self._module_type):
                return self._module_children(o)
            out = self._attrs(o, t)
            if not out and gc.is_tracked(o) and self._user_type(t):
                out = [(".<ref>", r) for r in gc.get_referents(o) if not isinstance(r, type)]
            return out
        except Exception:
            return []

    def _attrs(self, o, t):
        out = []
        d = _instance_dict(o)
        if d:
            out.extend(("." + str(k), v) for k, v in tuple(d.items()))
        for n in _slot_names(t) if hasattr(t, "__slots__") else ():
            try:
                out.append(("." + n, object.__getattribute__(o, n)))
            except Exception:
                pass
        return out

    def _module_children(self, m):
        d = _instance_dict(m) or {}
        out = []
        for k, v in tuple(d.items()):
            if k in ("_modules", "_parameters", "_buffers") and isinstance(v, dict):
                out.extend(("." + str(n), c) for n, c in tuple(v.items()) if c is not None)
            else:
                out.append(("." + str(k), v))
        return out

    def _function_children(self, f):
        out = []
        cl = f.__closure__
        if cl:
            for name, cell in zip(f.__code__.co_freevars, cl):
                try:
                    out.append(("." + name, cell.cell_contents))
                except ValueError:
                    pass
        if f.__defaults__:
            out.extend((".__defaults__[%d]" % i, v) for i, v in enumerate(f.__defaults__))
        if f.__kwdefaults__:
            out.extend((".__kwdefaults__[%r]" % k, v) for k, v in f.__kwdefaults__.items())
        d = _instance_dict(f)
        if d:
            out.extend(("." + str(k), v) for k, v in tuple(d.items()))
        return out

    # -- paths ---------------------------------------------------------------------------------
    def paths(self, oid, limit=MAX_PATHS):
        """Named paths to the object, shortest first."""
        info = self.info
        found = []

        def walk(cur, suffix, seen, steps):
            if len(found) >= limit * 4 or steps > MAX_PATH_STEPS:
                return
            e = info.get(cur)
            if e is None:
                return
            for parent, label in e[2]:
                tl = type(label)
                if tl is int:
                    label = "[%d]" % label
                elif tl is tuple:
                    label = _key_label(label[0])
                if parent is None:
                    found.append(label + suffix)
                elif parent not in seen:
                    seen.add(parent)
                    walk(parent, label + suffix, seen, steps + 1)
                    seen.discard(parent)

        walk(oid, "", {oid}, 0)
        found = sorted(set(found), key=lambda p: (_steps(p), len(p), p))
        return found[:limit]

    # -- reverse -------------------------------------------------------------------------------
    def reverse(self, missing, own_ids, max_front=64):
        """Paths for targets the forward walk did not reach. missing: {id: obj}.

        Returns {id: (paths, unreachable)}; targets held only by C++ or by autograd are left out."""
        result = {}
        if not missing:
            return result
        module_dicts = {}
        for name, mod in list(sys.modules.items()):
            if isinstance(mod, types.ModuleType) and not name.startswith(self.agent_prefix):
                try:
                    module_dicts[id(mod.__dict__)] = name
                except Exception:
                    pass
        # Every container this search creates that holds objects of the job is in `ignore`, so
        # that it never shows up as a referrer; per-referrer temporaries are deleted before the
        # next gc.get_referrers call.
        ignore = set(own_ids) | self.exclude
        info = self.info
        ctx_type = getattr(self.torch._C, "_FunctionBase", None)
        # per target: parent links of its reverse tree, {obj id: (child id, label)}
        trees = {tid: {tid: None} for tid in missing}
        objs = dict(missing)              # id -> obj for everything in the trees
        frontier = {tid: {tid} for tid in missing}   # obj id -> targets whose tree it is in
        named = {tid: [] for tid in missing}
        internal = set()
        deepest = {tid: tid for tid in missing}
        had_referrers = set()
        ignore.update((id(missing), id(objs), id(trees), id(frontier), id(named)))
        level = 0
        while frontier and level < REVERSE_LEVELS and time.monotonic() < self.deadline:
            level += 1
            if len(frontier) > max_front:
                # gc.get_referrers costs (references on the heap) x (objects asked about)
                self.truncated = self.truncated or "reverse referrer search narrowed"
                frontier = dict(list(frontier.items())[:max_front])
            front_objs = [objs[i] for i in frontier]
            ignore.add(id(front_objs))
            refs = gc.get_referrers(*front_objs)
            ignore.add(id(refs))
            nxt = {}
            n_front = len(front_objs)
            for r in refs:
                rid = id(r)
                if rid in ignore or rid in frontier:
                    continue
                tr = type(r)
                if tr is tuple and len(r) == n_front and n_front and r[0] is front_objs[0]:
                    continue   # the argument tuple of this very call
                if tr is list and len(r) == 3 and info.get(id(r[0])) is r:
                    continue   # an entry of the forward walk's table
                if tr is types.FrameType and self.own_frame(r):
                    continue
                try:
                    kids = [c for c in gc.get_referents(r) if id(c) in frontier]
                except Exception:
                    continue
                for child in kids:
                    cid = id(child)
                    label = self._label(r, child)
                    for tid in frontier[cid]:
                        had_referrers.add(tid)
                        if tid in result or tid in internal:
                            continue
                        tree = trees[tid]
                        if ctx_type is not None and isinstance(r, ctx_type):
                            internal.add(tid)    # held by a custom Function's ctx: autograd's own
                            continue
                        prefix = None
                        if rid in self.info and self.info[rid][0] is r:
                            ps = self.paths(rid, 1)
                            prefix = ps[0] if ps else None
                        elif rid in module_dicts and label.startswith("["):
                            prefix = module_dicts[rid]
                            label = "." + label[2:-2] if label.startswith("['") else label
                        elif isinstance(r, types.FrameType):
                            prefix = r.f_code.co_name
                        if prefix is not None:
                            named[tid].append(prefix + label + self._suffix(tree, cid))
                            continue
                        if rid in tree:
                            continue
                        tree[rid] = (cid, label)
                        deepest[tid] = rid
                        objs[rid] = r
                        nxt.setdefault(rid, set()).add(tid)
                kids = child = None
            r = None
            del refs, front_objs
            for tid, ps in named.items():
                if ps and tid not in result:
                    result[tid] = (sorted(set(ps), key=lambda p: (_steps(p), len(p), p))[:MAX_PATHS], False)
            frontier = {rid: {t for t in tids if t not in result and t not in internal}
                        for rid, tids in nxt.items()}
            frontier = {rid: tids for rid, tids in frontier.items() if tids}
        exhausted = not frontier
        if frontier:
            self.truncated = self.truncated or "reverse referrer search cut short"
        for tid in missing:
            if tid in result or tid in internal or tid not in had_referrers:
                continue
            top = deepest[tid]
            if top == tid:
                continue
            top_obj = objs[top]
            if type(top_obj) is dict and trees[tid].get(top) is not None:
                below = trees[tid][top][0]     # an instance's __dict__: name the instance
                if below != tid and _instance_dict(objs[below]) is top_obj:
                    top, top_obj = below, objs[below]
            kind = "unreachable" if exhausted or tid not in {t for s in frontier.values() for t in s} else "unnamed"
            path = "<%s %s>%s" % (kind, type(top_obj).__name__, self._suffix(trees[tid], top))
            result[tid] = ([path], kind == "unreachable")
        objs.clear()
        return result

    @staticmethod
    def _suffix(tree, oid):
        parts = []
        cur = oid
        guard = 0
        while tree.get(cur) is not None and guard < MAX_PATH_STEPS:
            child, label = tree[cur]
            parts.append(label)
            cur = child
            guard += 1
        return _tidy("".join(parts))

    def _label(self, parent, child):
        try:
            if isinstance(parent, dict):
                for k, v in tuple(dict.items(parent)):
                    if v is child:
                        return _key_label(k)
                return "[<key>]"
            if isinstance(parent, (list, tuple)):
                for i, v in enumerate(parent):
                    if v is child:
                        return "[%d]" % i
                return "[?]"
            if isinstance(parent, types.FrameType):
                for k, v in frame_locals(parent):
                    if v is child:
                        return "." + k
                return ".<local>"
            if isinstance(parent, types.CellType):
                return ".cell_contents"
            if isinstance(parent, types.FunctionType):
                for label, v in self._function_children(parent):
                    if v is child:
                        return label
                if parent.__closure__ is child:
                    return ".__closure__"
                return ".<ref>"
            for label, v in self._attrs(parent, type(parent)):
                if v is child:
                    return label
            if _instance_dict(parent) is child:
                return ".__dict__"
        except Exception:
            pass
        return ".<ref>"


def _key_label(k):
    return "[%s]" % _short_repr(k)


def _tidy(path):
    """Readable forms of the raw steps a reverse search produces."""
    import re
    path = re.sub(r"\.__dict__\['([A-Za-z_][A-Za-z0-9_]*)'\]", r".\1", path)
    path = path.replace(".__closure__", "").replace(".cell_contents", "")
    return path


def _steps(path):
    n = 0
    depth = 0
    for ch in path:
        if ch in "[(":
            if depth == 0:
                n += 1
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "." and depth == 0:
            n += 1
    return n
