"""A graph kept in an object attribute, in a dict, in a closure, in a reference cycle."""
import gc
import threading

import torch
import torch.nn as nn

import _job

gc.disable()                        # the unreachable cycle must survive until the scan
torch.manual_seed(0)
model = nn.Linear(10, 6)


class Trainer:
    def __init__(self):
        self.history = {"train": [], "val": []}
        self.last = None


trainer = Trainer()
trainer.history["val"].append(model(torch.randn(4, 10)))       # in a dict inside an attribute
trainer.last = model(torch.randn(2, 10))                        # an object attribute
alias = trainer.last                                            # a second name for it


def make_callback():
    kept = model(torch.randn(3, 10))

    def callback():
        return kept.shape
    return callback


on_epoch_end = make_callback()                                  # a closure


class Node:
    pass


ring = Node()
ring.me = ring                                                  # a reachable cycle
ring.out = model(torch.randn(5, 10))

lost = Node()
lost.me = lost                                                  # an unreachable cycle
lost.out = model(torch.randn(7, 10))
del lost

excluded = [model(torch.randn(9, 10))]                          # passed in exclude_ids


ready, done = threading.Event(), threading.Event()


def worker_loop():
    held_by_thread = model(torch.randn(6, 10))                  # a frame local of another thread
    ready.set()
    done.wait()
    return held_by_thread.shape


worker = threading.Thread(target=worker_loop)
worker.start()
ready.wait()


def inner():
    local_out = model(torch.randn(1, 10))
    s = _job.scan(exclude_ids=[id(excluded)])
    import weakref
    ref = weakref.ref(local_out)
    del local_out                                               # the scan kept no reference
    _job.note("local_freed", ref() is None)
    return s


inner()
done.set()
worker.join()
del worker
gc.collect()
_job.scan("after_collect")
_job.write()
