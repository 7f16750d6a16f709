"""memlens: started by `memlens-cli record`, which puts this directory first on PYTHONPATH.

Starts the memlens agent when the recorder's socket is in the environment, then runs the
sitecustomize module the interpreter would have run without us (Debian's, a virtualenv's...).
Nothing here may raise into the job.
"""


def _memlens_start():
    import os

    if not os.environ.get("MEMLENS_SOCKET"):
        return
    try:
        from memlens_agent import _agent

        _agent.start_from_environment()
    except Exception as e:  # never break the job
        import sys

        sys.stderr.write("memlens: the agent did not start: %s: %s\n" % (type(e).__name__, e))


def _memlens_chain():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    if spec.origin and os.path.abspath(spec.origin) == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module  # what site would have left there
    spec.loader.exec_module(module)


_memlens_start()
_memlens_chain()
