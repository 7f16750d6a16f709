"""A scan from inside a Python trace function (as from a debugger's prompt): the traced frame's
variables must survive (the interpreter writes f_locals back into the frame afterwards)."""
import sys

import torch

import _job

lin = torch.nn.Linear(3, 2)
LINE = None


def work():
    out = lin(torch.randn(2, 3))
    marker = "still here"      # the scan runs when this line is traced
    return out, marker


LINE = work.__code__.co_firstlineno + 2
done = []


def tracer(frame, event, arg):
    if event == "line" and frame.f_code is work.__code__ and frame.f_lineno == LINE and not done:
        done.append(True)
        _job.scan()
    return tracer


sys.settrace(tracer)
try:
    result = work()
    _job.note("variables_kept", result[1] == "still here")
except NameError as e:          # UnboundLocalError: the scan emptied the frame's variables
    _job.note("variables_kept", False)
    _job.note("error", repr(e))
finally:
    sys.settrace(None)
_job.write()
