"""The memlens agent, inside the recorded Python process.

Started from sitecustomize (boot/) when MEMLENS_SOCKET is set; does nothing else until torch is
imported. Then it:

* marks iteration boundaries without changes to the job: optimizer steps (a post-step hook on
  torch >= 2.0, a wrapper of each optimizer class's step() on 1.13), DataLoader batches
  (_BaseDataLoaderIter.__next__) and backward() calls; memlens_agent.mark_step() for other loops;
* when the job initialises CUDA (torch.cuda._lazy_call, so never earlier than the job itself),
  enables the allocator's history (_record_memory_history, per torch version) and registers the
  out-of-memory observer;
* takes allocator snapshots at the configured iterations, on the recorder's request, at an
  out-of-memory error and at exit, and hands them to the sender thread (_channel.py), which trims
  their stacks to the configured depth (stack_depth, _trim.py) and pickles them.

Iterations. One iteration per step as the user counts them:
* a loop over a DataLoader: one iteration per batch of the loader that drives the loop; further
  optimizer steps before the next batch (GANs) extend it; batches without a step after a
  backward() (gradient accumulation) stay in it; other loaders read inside it do not split it;
* a loop without a DataLoader: one iteration per optimizer step;
* a loop with neither (an evaluation script): one iteration per top-level call of the model
  in eval mode or without grad (doctor.py watches the calls), until a DataLoader batch, a step
  or mark_step() appears;
* after the first mark_step(), only mark_step() marks iterations (with the recorder's
  --manual-steps, from the start).
Phase: "train" when it stepped or ran backward(); "eval" under no_grad/inference_mode or after
model.eval(); else "other".

It never raises into the job (every hook is guarded; an internal error disables nothing but is
reported once on stderr and as a marker), keeps no reference to tensors, modules or loaders
(identities only), and does nothing in forked children.
"""

import atexit
import functools
import importlib
import json
import os
import sys
import threading
import time
import weakref

from . import _channel, _trim

VERSION = "0.1.0"

_agent = None  # the running Agent, when this process is recorded


def _now_us():
    return time.time_ns() // 1000


class _Open(object):
    """The iteration in progress, when a DataLoader batch opened it."""

    __slots__ = ("start", "driver", "grad", "stepped", "step_end", "backward", "nograd")

    def __init__(self, start, driver, grad):
        self.start = start
        self.driver = driver
        self.grad = grad
        self.stepped = False
        self.step_end = 0
        self.backward = False
        self.nograd = False


class _Since(object):
    """What happened since the last iteration boundary (step-driven and manual iterations)."""

    __slots__ = ("stepped", "backward", "nograd")

    def __init__(self):
        self.stepped = False
        self.backward = False
        self.nograd = False


class Agent(object):
    def __init__(self, channel, config):
        self.ch = channel
        self.cfg = config
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.main_ident = threading.main_thread().ident
        self.index = 0  # iterations ended so far
        self.rank = None  # (rank, world size) once torch.distributed is initialised
        self.open = None
        self.manual = bool(config.get("manual_steps"))  # only mark_step() marks iterations
        self.boundary_us = _now_us()
        self.first_start_us = None  # optimizer created / model.train() before the first iteration
        self.since = _Since()
        self.model_training = None  # the mode of the last outermost Module.train()/eval() call
        self.torch = None
        self.cuda_recording = False
        self.cuda_note = ""
        self.last_sample = 0.0
        self.last_periodic = time.monotonic()
        self.errors = 0
        self.exited = False
        self.tls = threading.local()
        self.hooks = []
        self.patches = []  # (owner, name, had its own, previous, ours): undone by detach()
        self.step_hook = None  # the handle of the optimizer post-step hook (torch >= 2.0)
        self.attached = bool(config.get("attached"))  # started by memlens-cli attach
        self.session = str(config.get("session") or os.environ.get("MEMLENS_SESSION") or "")
        self.history_ours = False  # the allocator history was turned on by this agent
        self.history_api = None
        self.detaching = False
        # attached mid-run: the first step ends the iteration under way at the attach, which is
        # not recorded (a DataLoader batch opens a whole one; so does the first step after it)
        self.partial = False
        ranges = config.get("snapshot_iterations") or []
        self.snapshot_ranges = [(int(a), int(b)) for a, b in ranges]
        self.snapshot_every = int(config.get("snapshot_every") or 0)
        self.snapshot_period = float(config.get("snapshot_period_s") or 0)
        try:
            self.stack_depth = max(int(config.get("stack_depth") or 0), 0)  # 0: every frame
        except (TypeError, ValueError):
            self.stack_depth = 0
        from . import graphs_agent  # retained-graph scans (README-graphs.md)

        self.graphs = graphs_agent.GraphScans(self, config)
        from . import doctor  # evidence for memlens-cli check (doctor.py)

        self.doctor = doctor.Doctor(self, config)
        # Iterations of a loop without DataLoader, optimizer or mark_step (an evaluation
        # script): one per call of the top-level module, until another source is seen.
        self.fwd_mode = not self.manual
        self.fwd_driver = None  # weakref to the module whose top-level calls open iterations
        self.fwd_emitted = 0

    # -- helpers ---------------------------------------------------------------------------

    def patch(self, owner, name, new):
        """Sets owner.name to new, remembering what was there (undone by unpatch_all)."""
        d = getattr(owner, "__dict__", {})
        had = name in d
        self.patches.append((owner, name, had, d.get(name), new))
        setattr(owner, name, new)

    def unpatch_all(self):
        """Puts back every attribute patch() replaced, newest first. One that somebody replaced
        again after us stays theirs (our wrapper under it does nothing once exited is set)."""
        while self.patches:
            owner, name, had, old, new = self.patches.pop()
            try:
                if getattr(owner, "__dict__", {}).get(name) is not new:
                    continue
                if had:
                    setattr(owner, name, old)
                else:
                    delattr(owner, name)
            except Exception as e:
                self.error("restoring %s" % name, e)

    def alive(self):
        return not self.exited  # set at exit, and in forked children (after_fork_child)

    def error(self, where, exc):
        self.errors += 1
        if self.errors <= 3:
            try:
                sys.stderr.write("memlens: agent: %s: %s: %s\n" % (where, type(exc).__name__, exc))
                self.ch.send({"t": "marker", "time_us": _now_us(), "iteration": self.index + 1,
                              "name": "agent_error", "data": {"where": where, "error": repr(exc)[:500]}})
            except Exception:
                pass

    def wants_snapshot(self, index):
        if self.snapshot_every > 0 and index % self.snapshot_every == 0:
            return True
        for a, b in self.snapshot_ranges:
            if a <= index <= b:
                return True
        return False

    def grad_enabled(self):
        try:
            return self.torch.is_grad_enabled()
        except Exception:
            return True

    # -- iteration events (called from the patched torch functions) -------------------------

    def on_batch(self, it, t0):
        """A DataLoader iterator fetched a batch (main thread); t0: when the fetch started.
        Ends the iteration the previous batch began, if this batch begins another one."""
        if self.manual or self.exited or threading.get_ident() != self.main_ident:
            return
        with self.lock:
            if self.fwd_mode:
                self._leave_forward_mode(t0)
            o = self.open
            if o is not None:
                if o.driver == id(it):
                    if o.stepped:
                        self._close(o.step_end)
                    elif not o.backward:
                        self._close(t0)
                    else:
                        return  # backward without a step yet (gradient accumulation): the same iteration
                elif o.stepped:
                    self._close(o.step_end)  # another loop starts after a finished training step
                else:
                    return  # another loader read inside this iteration
            self.partial = False
            self.open = _Open(t0, id(it), self.grad_enabled())

    def on_loader_end(self, it):
        if self.manual or not self.alive():
            return
        with self.lock:
            o = self.open
            if o is not None and o.driver == id(it):
                self._close(o.step_end if o.stepped else _now_us())

    def on_step(self):
        if not self.alive():
            return
        now = _now_us()
        with self.lock:
            self.since.stepped = True
            if self.manual:
                return
            if self.fwd_mode:
                o = self.open
                if o is not None and o.driver == "forward" and self.fwd_emitted:
                    # a loop of calls had its iterations: this one ends with the step
                    self.fwd_mode = False
                    self.open = None
                    self._emit(o.start, now, "train")
                    return
                self._leave_forward_mode(now)
            o = self.open
            if o is not None:
                o.stepped = True
                o.step_end = now
                return
            if self.partial:
                self.partial = False
                self.boundary_us = now
                self.since = _Since()
                return
            self._emit(self._step_start(), now, "train")

    def on_backward(self):
        if threading.current_thread().name.startswith("memlens-"):
            return  # the graph scans' calibration (graphs_saved.py), not the job's
        self.since.backward = True
        o = self.open
        if o is not None:
            o.backward = True

    def on_no_grad(self):
        self.since.nograd = True
        o = self.open
        if o is not None:
            o.nograd = True

    def on_setup(self):
        """An optimizer was created or model.train() was called: where a first iteration starts."""
        o = self.open
        if self.index == 0 and (o is None or o.driver == "forward"):
            self.first_start_us = _now_us()

    def on_train_mode(self, mode):
        self.model_training = bool(mode)
        if mode:
            self.on_setup()

    def mark_step(self, phase=None):
        if not self.alive():
            return
        now = _now_us()
        with self.lock:
            self.fwd_mode = False
            if not self.manual:
                self.manual = True
                self.open = None  # its time belongs to this first marked iteration
            if phase is None:
                phase = self._phase(self.since.stepped or self.since.backward,
                                    self.since.nograd or not self.grad_enabled())
            self._emit(self._step_start(), now, str(phase))

    def on_forward_top(self, module, t0):
        """A top-level module call starts (doctor.py). While no other source of iterations has
        been seen, each evaluation call of one module (the first called, while it lives) is an
        iteration: a call in eval mode (module.training false) or without grad. A call in
        training mode with grad (a warm-up before a training loop, a training loop without
        optimizer) marks none, as before."""
        if not self.fwd_mode or self.manual or self.exited:
            return
        if module.training and self.grad_enabled():
            return
        with self.lock:
            o = self.open
            if o is not None and o.driver != "forward":
                return
            drv = self.fwd_driver() if self.fwd_driver is not None else None
            if drv is None:
                try:
                    self.fwd_driver = weakref.ref(module)
                except TypeError:
                    return
                drv = module
            if drv is not module:
                return  # another top-level module (a loss) inside the iteration
            if o is not None:
                self._close(t0)
                self.fwd_emitted += 1
            self.open = _Open(t0, "forward", self.grad_enabled())

    def _leave_forward_mode(self, t):
        """Another source of iterations (a DataLoader batch, an optimizer step) appeared: the
        top-level calls stop marking iterations. The iteration a call opened is closed when
        calls had marked iterations before; a lone call before the loop (a warm-up, a shape
        check) is dropped: its time goes to the next iteration, as without it."""
        self.fwd_mode = False
        o = self.open
        if o is not None and o.driver == "forward":
            if self.fwd_emitted:
                self._close(t)
            else:
                self.open = None

    # -- iterations ------------------------------------------------------------------------

    def _step_start(self):
        if self.index == 0 and self.first_start_us is not None:
            return max(self.first_start_us, self.boundary_us)
        return self.boundary_us

    def _phase(self, trained, nograd):
        if trained:
            return "train"
        if nograd or self.model_training is False:
            return "eval"
        return "other"

    def _close(self, end_us):
        o = self.open
        self.open = None
        phase = self._phase(o.stepped or o.backward, o.nograd or not o.grad or not self.grad_enabled())
        self._emit(o.start, end_us, phase)

    def _emit(self, start, end, phase):
        self.index += 1
        index = self.index
        self.boundary_us = end
        self.since = _Since()
        self.ch.send(_channel.iteration_frame(index, phase, start, end, self.rank or self._distributed_rank()))
        self._after_iteration(index)
        try:
            self.graphs.at_boundary(index, phase)
        except Exception as e:
            self.error("graph scan", e)

    def _distributed_rank(self):
        """(rank, world size) of a distributed job, once known: the recorder keeps the records of
        rank 0 (or of a process without a rank) when several processes have the agent."""
        try:
            dist = getattr(self.torch, "distributed", None)
            if dist is not None and dist.is_available() and dist.is_initialized():
                self.rank = (int(dist.get_rank()), int(dist.get_world_size()))
        except Exception:
            pass
        return self.rank

    def _after_iteration(self, index):
        if not self.cuda_recording:
            return
        try:
            now = time.monotonic()
            if now - self.last_sample >= 0.2:
                self.last_sample = now
                self.sample()
            trigger = None
            if self.ch.snapshot_requested:
                self.ch.snapshot_requested = False
                trigger = "request"
            elif self.wants_snapshot(index):
                trigger = "iteration"
            elif self.snapshot_period > 0 and now - self.last_periodic >= self.snapshot_period:
                trigger = "periodic"
            if trigger is not None:
                if trigger == "periodic" or self.snapshot_period > 0:
                    self.last_periodic = now
                self.take_snapshot(trigger, index)
        except Exception as e:
            self.error("after iteration", e)

    def finish_open_iteration(self):
        with self.lock:
            o = self.open
            if o is not None:
                self._close(o.step_end if o.stepped else _now_us())

    # -- CUDA --------------------------------------------------------------------------------

    def sample(self):
        torch = self.torch
        if not torch.cuda.is_initialized():
            return
        t = _now_us()
        for d in range(torch.cuda.device_count()):
            stats = torch.cuda.memory_stats(d)
            reserved = stats.get("reserved_bytes.all.current", 0)
            if not reserved:
                continue
            self.ch.send({"t": "sample", "time_us": t, "device": d, "source": "torch", "reserved": reserved,
                          "allocated": stats.get("allocated_bytes.all.current", 0)})

    def take_snapshot(self, trigger, iteration, keep=False):
        if not self.cuda_recording or os.getpid() != self.pid:
            return False
        t = _now_us()
        try:
            snap = self.torch.cuda.memory._snapshot()
        except Exception as e:
            self.error("snapshot", e)
            return False
        depth = self.stack_depth
        head = {"t": "snapshot", "iteration": iteration, "trigger": trigger, "time_us": t,
                "info": {"torch": self.torch.__version__, "max_entries": self.cfg.get("max_entries"),
                         "stacks": self.cfg.get("stacks"), "stack_depth": depth or None}}
        if self.doctor.enabled:
            try:  # storages of parameters, gradients, optimizer state, inputs (doctor.py)
                head["info"]["categories"] = self.doctor.categories()
            except Exception as e:
                self.error("snapshot categories", e)
        # --stack-depth: trimmed on the sender thread, before pickling (_trim.py).
        prepare = _trim.trimmer(depth) if depth else None
        ok = self.ch.send_pickled(head, snap, keep=keep, prepare=prepare)
        if not ok and not self.ch.dead:
            self.ch.send({"t": "marker", "time_us": t, "iteration": iteration, "name": "snapshot_dropped",
                          "data": {"trigger": trigger, "reason": "the sender is still busy with earlier snapshots"}})
        return ok

    def on_cuda_init(self):
        """Runs when the job initialises CUDA (queued with torch.cuda._lazy_call)."""
        if not self.alive():
            return
        torch = self.torch
        try:
            if self.attached and history_enabled(torch):
                # the job records its own history: used as it is, and left on at detach
                api = "the job's own"
            else:
                api = enable_history(torch, self.cfg.get("stacks") or "python",
                                     int(self.cfg.get("max_entries") or 100000))
                self.history_ours = True
            self.history_api = api
            self.cuda_recording = True
            if self.cfg.get("oom_snapshot", True):
                attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
                if attach is not None:
                    attach(self.on_oom)
            devices = []
            for i in range(torch.cuda.device_count()):
                p = torch.cuda.get_device_properties(i)
                devices.append({"index": i, "name": p.name, "total_bytes": int(p.total_memory)})
            self.ch.send({"t": "process", "allocator_snapshots": True, "snapshots_note": "",
                          "devices": devices, "cuda": torch.version.cuda or getattr(torch.version, "hip", "") or "",
                          "info": {"history_api": api, "oom_observer": attach is not None if self.cfg.get(
                              "oom_snapshot", True) else False}})
        except Exception as e:
            self.cuda_note = "recording the allocator history failed: %s: %s" % (type(e).__name__, e)
            self.ch.send({"t": "process", "allocator_snapshots": False, "snapshots_note": self.cuda_note})
            self.error("enabling the allocator history", e)

    def on_oom(self, device, alloc, device_total, device_free):
        if os.getpid() != self.pid or not self.alive():
            return
        try:
            t = _now_us()
            self.ch.send({"t": "marker", "time_us": t, "iteration": self.index + 1, "name": "out_of_memory",
                          "data": {"device": device, "requested": alloc, "device_total": device_total,
                                   "device_free": device_free}})
            if self.cfg.get("oom_snapshot", True):
                self.take_snapshot("oom", self.index + 1, keep=True)
        except Exception as e:
            self.error("out-of-memory observer", e)

    # -- torch ---------------------------------------------------------------------------------

    def on_torch_imported(self, torch):
        if self.torch is not None or not self.alive():
            return
        self.torch = torch
        cuda = getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)
        msg = {"t": "process", "torch": str(torch.__version__), "cuda": cuda or ""}
        if not cuda:
            self.cuda_note = ("torch %s is a CPU-only build: there is no CUDA allocator, so no allocator "
                              "snapshots" % torch.__version__)
            msg["allocator_snapshots"] = False
            msg["snapshots_note"] = self.cuda_note
        self.ch.send(msg)
        for name, install in (("optimizer", _patch_optimizer), ("dataloader", _patch_dataloader),
                              ("backward", _patch_backward), ("module", _patch_module_train),
                              ("grad mode", _patch_no_grad), ("forward", _patch_forward)):
            try:
                install(self, torch)
                self.hooks.append(name)
            except Exception as e:
                self.error("installing the %s hook" % name, e)
        if cuda:
            try:
                if torch.cuda.is_initialized():
                    self.on_cuda_init()
                else:
                    torch.cuda._lazy_call(self._lazy_cuda_init)
            except Exception as e:
                self.error("waiting for CUDA", e)
        # Registered after torch's own handlers, so it runs before them.
        atexit.register(self.at_exit)

    def _lazy_cuda_init(self):
        if not self.alive():
            return  # detached before the job initialised CUDA
        try:
            self.on_cuda_init()
        except Exception as e:  # an exception here would surface in the job's first CUDA call
            self.error("CUDA initialisation hook", e)

    def at_exit(self):
        if os.getpid() != self.pid or self.exited:
            return
        try:
            self.finish_open_iteration()
            if self.cuda_recording and self.cfg.get("exit_snapshot", True):
                self.take_snapshot("exit", self.index, keep=True)
            elif self.torch is not None and not self.cuda_recording and not self.cuda_note:
                self.ch.send({"t": "process", "allocator_snapshots": False,
                              "snapshots_note": "the job did not use CUDA"})
            try:
                self.graphs.at_exit(self.index, "exit")
            except Exception as e:
                self.error("exit graph scan", e)
            self.ch.send({"t": "bye", "reason": "exit", "dropped": self.ch.dropped})
        except Exception as e:
            self.error("exit", e)
        self.exited = True
        self.ch.flush(600)
        self.ch.close()

    def after_fork_child(self):
        self.exited = True
        self.ch.forget_after_fork()

    # -- detaching (memlens-cli attach) ---------------------------------------------------------

    def detach(self, reason="detach"):
        """Ends an attached recording and leaves the job as it was: the open iteration is closed,
        a snapshot and a graph scan are taken (when configured as at exit), the bye is sent, and
        every hook is removed. reason "gone": the recorder went away, nothing more is sent.
        Runs on a thread of its own (the channel's reader must not wait for itself)."""
        global _agent
        with self.lock:
            if self.exited or os.getpid() != self.pid:
                return
            self.detaching = True
        talk = reason != "gone" and not self.ch.dead
        try:
            if talk:
                self.finish_open_iteration()
                if self.cuda_recording and self.cfg.get("exit_snapshot", True):
                    self.take_snapshot("detach", self.index, keep=True)
                if self.graphs.enabled and not self.graphs.busy:
                    self.graphs.scan(self.index, "detach", "detach")
        except Exception as e:
            self.error("detach", e)
        with self.lock:
            self.exited = True  # the wrappers that stay (replaced again by others) do nothing
            self.unpatch_all()
            try:
                if self.step_hook is not None:
                    self.step_hook.remove()
                    self.step_hook = None
            except Exception as e:
                self.error("removing the optimizer hook", e)
            try:
                atexit.unregister(self.at_exit)
            except Exception:
                pass
            if self.history_ours:
                try:
                    disable_history(self.torch, self.history_api)
                except Exception as e:
                    self.error("restoring the allocator history", e)
                self.history_ours = False
            self.cuda_recording = False
            if _agent is self:
                _agent = None
        if talk:
            self.ch.send({"t": "bye", "reason": "detach", "dropped": self.ch.dropped})
            self.ch.flush(600)
        self.ch.close()


# -- recording the allocator history, per torch version ------------------------------------------

def history_enabled(torch):
    """Whether the allocator records its history now (torch >= 2.1 can say; older: not known,
    taken as off)."""
    f = getattr(torch._C, "_cuda_isHistoryEnabled", None)
    try:
        return bool(f()) if f is not None else False
    except Exception:
        return False


def disable_history(torch, api):
    """Turns off what enable_history turned on."""
    record = torch.cuda.memory._record_memory_history
    if api == "2.1+":
        record(enabled=None)
    else:
        record(False)


def enable_history(torch, stacks, max_entries):
    """Turns on torch.cuda.memory._record_memory_history; returns which form was used."""
    import inspect

    mem = torch.cuda.memory
    record = mem._record_memory_history
    try:
        params = inspect.signature(record).parameters
    except (TypeError, ValueError):
        params = {}
    if hasattr(mem, "_record_memory_history_impl"):
        # torch >= 2.1: (enabled="all", context="all", stacks="all", max_entries, ...)
        extra = {}
        if "global_record_annotations" in params:
            # newer torch (2.11 has it) records record_function annotations through a callback
            # that it adds for the enabling thread alone unless asked for every thread; removing
            # it from another thread (a detach runs on a thread of its own) fails with torch's
            # warning "Requested callback is not found" in the job's output
            extra["global_record_annotations"] = True
        record(enabled="all", context=None if stacks == "none" else "all",
               stacks="all" if stacks == "all" else "python", max_entries=max_entries, **extra)
        return "2.1+"
    if "trace_alloc_max_entries" in params:
        # torch 2.0: (enabled, record_context, trace_alloc_max_entries, trace_alloc_record_context,
        #             device, record_context_cpp)
        kwargs = {"record_context": stacks != "none", "trace_alloc_max_entries": max_entries,
                  "trace_alloc_record_context": stacks != "none"}
        if "record_context_cpp" in params:
            kwargs["record_context_cpp"] = stacks == "all"
        record(True, **kwargs)
        return "2.0"
    record(True)  # torch 1.13: (enabled, device=None); Python stacks, no trace
    return "1.13"


# -- patches ----------------------------------------------------------------------------------------

def _patch_optimizer(agent, torch):
    opt_module = importlib.import_module("torch.optim.optimizer")  # 1.13 deletes the attribute
    Optimizer = opt_module.Optimizer
    register = getattr(opt_module, "register_optimizer_step_post_hook", None)
    orig_init = Optimizer.__init__

    @functools.wraps(orig_init)
    def __init__(self, *args, **kwargs):
        orig_init(self, *args, **kwargs)
        try:
            agent.doctor.add_optimizer(self)
            agent.on_setup()
            if register is None:
                _wrap_step(agent, type(self))
        except Exception as e:
            agent.error("optimizer created", e)

    agent.patch(Optimizer, "__init__", __init__)
    if register is not None:
        def post_hook(optimizer, args, kwargs):
            try:
                agent.on_step()
            except Exception as e:
                agent.error("optimizer step", e)

        agent.step_hook = register(post_hook)


def _wrap_step(agent, cls):
    """torch < 2.0: wrap cls.step once; nested steps (super().step()) count once."""
    if cls.__dict__.get("_memlens_step_wrapped") is agent:
        return
    orig = cls.step
    tls = agent.tls

    @functools.wraps(orig)
    def step(self, *args, **kwargs):
        tls.depth = getattr(tls, "depth", 0) + 1
        try:
            result = orig(self, *args, **kwargs)
        finally:
            tls.depth -= 1
        if tls.depth == 0:
            try:
                agent.on_step()
            except Exception as e:
                agent.error("optimizer step", e)
        return result

    agent.patch(cls, "step", step)
    agent.patch(cls, "_memlens_step_wrapped", agent)


def _patch_forward(agent, torch):
    """Top-level nn.Module calls (doctor.py): iterations of evaluation scripts, forward markers."""
    if agent.doctor.enabled:
        agent.doctor.install(torch)


def _patch_dataloader(agent, torch):
    base = importlib.import_module("torch.utils.data.dataloader")._BaseDataLoaderIter
    orig_next = base.__next__

    @functools.wraps(orig_next)
    def __next__(self):
        t0 = _now_us()
        try:
            data = orig_next(self)
        except StopIteration:
            try:
                agent.on_loader_end(self)
            except Exception as e:
                agent.error("loader end", e)
            raise
        try:
            agent.on_batch(self, t0)
        except Exception as e:
            agent.error("batch", e)
        return data

    agent.patch(base, "__next__", __next__)


def _patch_backward(agent, torch):
    autograd = torch.autograd
    orig = autograd.backward

    @functools.wraps(orig)
    def backward(*args, **kwargs):
        try:
            agent.on_backward()
        except Exception:
            pass
        return orig(*args, **kwargs)

    agent.patch(autograd, "backward", backward)


def _patch_module_train(agent, torch):
    Module = torch.nn.Module
    orig = Module.train
    tls = agent.tls

    @functools.wraps(orig)
    def train(self, mode=True):
        tls.train_depth = getattr(tls, "train_depth", 0) + 1
        try:
            return orig(self, mode)
        finally:
            tls.train_depth -= 1
            if tls.train_depth == 0:
                try:
                    agent.on_train_mode(mode)
                except Exception:
                    pass

    agent.patch(Module, "train", train)


def _patch_no_grad(agent, torch):
    for cls in (getattr(torch, "no_grad", None), getattr(torch, "inference_mode", None)):
        if cls is None or not isinstance(cls, type) or "__enter__" not in cls.__dict__:
            continue
        orig = cls.__enter__

        def __enter__(self, _orig=orig):
            result = _orig(self)
            try:
                agent.on_no_grad()
            except Exception:
                pass
            return result

        functools.update_wrapper(__enter__, orig)
        agent.patch(cls, "__enter__", __enter__)


# -- noticing `import torch` ----------------------------------------------------------------------

class _TorchWatcher(object):
    """A meta path finder that lets `import torch` run as usual and calls back when it is done."""

    def __init__(self, on_loaded):
        self.on_loaded = on_loaded
        self.busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self.busy:
            return None
        self.busy = True
        try:
            spec = None
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _LoaderWrapper(spec.loader, self)
        return spec

    def invalidate_caches(self):
        pass


class _LoaderWrapper(object):
    def __init__(self, loader, watcher):
        self.loader = loader
        self.watcher = watcher

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # torch sees its real loader.
        try:
            module.__loader__ = self.loader
            if module.__spec__ is not None:
                module.__spec__.loader = self.loader
        except Exception:
            pass
        self.loader.exec_module(module)
        try:
            sys.meta_path.remove(self.watcher)
        except ValueError:
            pass
        try:
            self.watcher.on_loaded(module)
        except Exception as e:
            sys.stderr.write("memlens: agent: after import torch: %s: %s\n" % (type(e).__name__, e))

    def __getattr__(self, name):
        return getattr(self.loader, name)


# -- start -------------------------------------------------------------------------------------------

def _cmdline():
    try:
        with open("/proc/self/cmdline", "rb") as f:
            parts = f.read().split(b"\0")
        return [p.decode("utf-8", "replace") for p in parts if p] or list(sys.argv)
    except OSError:
        return list(getattr(sys, "orig_argv", sys.argv))


def _hello(channel, attached=False):
    import platform
    import socket as _socket

    head = {"t": "hello", "v": 1, "agent": "python " + VERSION, "pid": os.getpid(), "ppid": os.getppid(),
            "argv": _cmdline(), "cwd": os.getcwd(), "host": _socket.gethostname(),
            "python": platform.python_version(), "time_us": _now_us()}
    if attached:
        head["attached"] = True
    channel.send(head)


def _after_fork_child():
    a = _agent
    if a is not None:
        a.after_fork_child()


_fork_handler = []


def _register_fork_handler():
    """Once per process (a handler cannot be unregistered: after a detach it finds no agent)."""
    if hasattr(os, "register_at_fork") and not _fork_handler:
        os.register_at_fork(after_in_child=_after_fork_child)
        _fork_handler.append(True)


def parse_config(text):
    """The recorder's capture settings (JSON); {} when they are not an object."""
    try:
        config = json.loads(text)
    except ValueError:
        return {}
    return config if isinstance(config, dict) else {}


def start_from_environment():
    """Connects to the recorder named in the environment. Every Python process of the job does
    (the variables stay for its children: torchrun's and torch.multiprocessing.spawn's workers);
    the recorder keeps one process's records (the first to report an iteration as rank 0, or
    without a rank). Forked children are switched off (after_fork_child)."""
    global _agent
    if _agent is not None:
        return _agent
    path = os.environ.get("MEMLENS_SOCKET")
    config_text = os.environ.get("MEMLENS_AGENT_CONFIG") or "{}"
    if not path:
        return None
    config = parse_config(config_text)
    channel = _channel.Channel(path)
    agent = Agent(channel, config)
    _hello(channel)
    _agent = agent
    _register_fork_handler()
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "cuda"):
        agent.on_torch_imported(torch)
    else:
        sys.meta_path.insert(0, _TorchWatcher(agent.on_torch_imported))
        # Without torch the session still ends cleanly.
        atexit.register(_exit_without_torch)
    return agent


def _exit_without_torch():
    a = _agent
    if a is None or a.torch is not None or os.getpid() != a.pid or a.exited:
        return
    try:
        a.finish_open_iteration()
        a.ch.send({"t": "process", "allocator_snapshots": False,
                   "snapshots_note": "the job did not import torch"})
        a.ch.send({"t": "bye", "reason": "exit"})
    except Exception:
        pass
    a.exited = True
    a.ch.flush(60)
    a.ch.close()
