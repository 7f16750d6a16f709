"""The agent's call of torch.cuda.memory._record_memory_history, per torch version
(capture/python/memlens_agent/_agent.py: enable_history, disable_history).

    test_history_api.py

Each case is a stand-in for torch.cuda.memory with the signature that torch version's function
has (copied from its torch/cuda/memory.py); the test checks the arguments the agent passes, as
written here by hand from those signatures: every thread's annotations where torch can record
them (so a detach on another thread can remove torch's callback), the trace and its stacks
otherwise as asked. It runs without torch and without a GPU. Exit 0: passed, 1: failed.
"""

import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "capture", "python"))

from memlens_agent import _agent  # noqa: E402

calls = []


def v113(enabled, device=None):
    calls.append(((enabled,), {"device": device}))


def v20(enabled, record_context=True, trace_alloc_max_entries=1, trace_alloc_record_context=False,
        device=None, record_context_cpp=False):
    calls.append(((enabled,), dict(record_context=record_context, trace_alloc_max_entries=trace_alloc_max_entries,
                                    trace_alloc_record_context=trace_alloc_record_context,
                                    record_context_cpp=record_context_cpp)))


def v21(enabled="all", context="all", stacks="all", max_entries=9223372036854775807, device=None):
    calls.append(((), dict(enabled=enabled, context=context, stacks=stacks, max_entries=max_entries)))


def v211(enabled="all", context="all", stacks="all", max_entries=9223372036854775807, device=None,
         clear_history=False, compile_context=False, global_record_annotations=False):
    calls.append(((), dict(enabled=enabled, context=context, stacks=stacks, max_entries=max_entries,
                           clear_history=clear_history, compile_context=compile_context,
                           global_record_annotations=global_record_annotations)))


def fake_torch(fn, impl):
    mem = types.SimpleNamespace(_record_memory_history=fn)
    if impl:
        mem._record_memory_history_impl = fn
    return types.SimpleNamespace(cuda=types.SimpleNamespace(memory=mem))


CASES = [
    # (name, function, has _impl, stacks, expected api, expected enabling call, expected disabling call)
    ("1.13", v113, False, "python", "1.13", ((True,), {"device": None}), ((False,), {"device": None})),
    ("2.0", v20, False, "all", "2.0",
     ((True,), dict(record_context=True, trace_alloc_max_entries=5000, trace_alloc_record_context=True,
                    record_context_cpp=True)),
     ((False,), dict(record_context=True, trace_alloc_max_entries=1, trace_alloc_record_context=False,
                     record_context_cpp=False))),
    ("2.1", v21, True, "python", "2.1+",
     ((), dict(enabled="all", context="all", stacks="python", max_entries=5000)),
     ((), dict(enabled=None, context="all", stacks="all", max_entries=9223372036854775807))),
    ("2.11", v211, True, "python", "2.1+",
     ((), dict(enabled="all", context="all", stacks="python", max_entries=5000, clear_history=False,
               compile_context=False, global_record_annotations=True)),
     ((), dict(enabled=None, context="all", stacks="all", max_entries=9223372036854775807, clear_history=False,
               compile_context=False, global_record_annotations=False))),
    ("2.11, no stacks", v211, True, "none", "2.1+",
     ((), dict(enabled="all", context=None, stacks="python", max_entries=5000, clear_history=False,
               compile_context=False, global_record_annotations=True)), None),
]


def main():
    failed = 0
    for name, fn, impl, stacks, api, on, off in CASES:
        torch = fake_torch(fn, impl)
        calls.clear()
        got_api = _agent.enable_history(torch, stacks, 5000)
        problems = []
        if got_api != api:
            problems.append("api %r, expected %r" % (got_api, api))
        if calls != [on]:
            problems.append("enabled with %r, expected %r" % (calls, [on]))
        if off is not None:
            calls.clear()
            _agent.disable_history(torch, got_api)
            if calls != [off]:
                problems.append("disabled with %r, expected %r" % (calls, [off]))
        print("%s: torch %s" % ("FAILED" if problems else "ok", name) + ("".join("; " + p for p in problems)))
        failed += bool(problems)
    print("%d of %d cases failed" % (failed, len(CASES)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
