"""The agent started inside a running process by `memlens-cli attach` (capture/README.md).

memlens-cli injects a small bootstrap (built in capture/src/Attach.cpp) that runs on the job's
main thread at a safe point with the GIL held: through sys.remote_exec on Python 3.14 and later,
through a pending call queued by the debugger (gdb) on 3.8 to 3.13. The bootstrap puts this
package on sys.path for as long as the import takes and calls attach().

attach() connects to the socket memlens-cli listens on and then records as under
`memlens-cli record` from that moment on: the same hooks (class-level, so they reach the live
optimizers, DataLoader iterators and modules), optimizers already made (found once with the
garbage collector: on torch 1.13 their classes' step() is wrapped, and the doctor needs them),
the allocator history on CUDA jobs (unless the job records its own), snapshots and graph scans.

A detach (the recorder's "detach" message: Ctrl-C, --duration, the window's Detach) ends the
recording with a snapshot and a graph scan, then removes every hook and turns the history off
again (Agent.detach). When memlens-cli goes away without a word the agent removes itself too.
What cannot be taken back stays inert: torch keeps out-of-memory observers and fork handlers
for the life of the process; ours do nothing once the agent is gone.

Refusals (the recorder reports them in one line): another agent in the process (it names the
session it writes to), torch not imported.
"""

import gc
import sys
import threading

from . import _agent, _channel


def attach(socket_path, config_text):
    """Runs on the job's main thread (the bootstrap). Never raises into the job."""
    try:
        channel = _channel.Channel(socket_path)
    except Exception:
        return  # memlens-cli gave up waiting (its socket is gone): nothing to do
    try:
        _start(channel, config_text)
    except Exception as e:
        try:
            channel.send({"t": "attach_refused", "reason": "error",
                          "message": "the agent failed to start: %s: %s" % (type(e).__name__, e)})
            channel.flush(10)
        finally:
            channel.close()


def _refuse(channel, reason, **data):
    head = {"t": "attach_refused", "reason": reason}
    head.update(data)
    channel.send(head)
    channel.flush(10)
    channel.close()


def _start(channel, config_text):
    current = _agent._agent
    if current is not None and not current.exited:
        _refuse(channel, "agent", session=current.session,
                how="memlens-cli attach" if current.attached else "memlens-cli record")
        return
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "cuda"):
        _refuse(channel, "torch")
        return
    config = _agent.parse_config(config_text)
    config["attached"] = True
    agent = _agent.Agent(channel, config)
    agent.partial = True  # the iteration under way at the attach is not one of ours
    with agent.lock:  # a detach that comes at once waits until everything is in place
        _agent._hello(channel, attached=True)
        _agent._agent = agent
        _agent._register_fork_handler()
        agent.on_torch_imported(torch)
        _adopt_optimizers(agent, torch)
        channel.on_detach = lambda: _in_thread(agent.detach, "detach")
        channel.on_gone = lambda: _in_thread(agent.detach, "gone")
        channel.send({"t": "attached", "time_us": _agent._now_us(), "hooks": list(agent.hooks),
                      "optimizers": len(agent.doctor.optimizers) if agent.doctor.enabled else None})
    if channel.dead:  # the recorder went away while we started
        _in_thread(agent.detach, "gone")


def _in_thread(fn, reason):
    threading.Thread(target=fn, args=(reason,), name="memlens-detach", daemon=True).start()


def _adopt_optimizers(agent, torch):
    """The optimizers the job made before the attach: the doctor's parameter and state
    categories need them, and torch < 2.0 has no global step hook (their classes' step() is
    wrapped, as Optimizer.__init__ does for later ones)."""
    import importlib

    optimizer_module = importlib.import_module("torch.optim.optimizer")  # (1.13 deletes the torch.optim attribute)
    Optimizer = optimizer_module.Optimizer
    wrap = not hasattr(optimizer_module, "register_optimizer_step_post_hook")
    for o in gc.get_objects():
        if not issubclass(type(o), Optimizer):  # type(), not isinstance: no __class__ lookups
            continue                             # (some objects warn when touched)
        try:
            agent.doctor.add_optimizer(o)
            if wrap:
                _agent._wrap_step(agent, type(o))
        except Exception as e:
            agent.error("adopting an optimizer", e)
