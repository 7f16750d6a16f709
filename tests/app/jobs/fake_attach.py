"""A STAND-IN for `memlens-cli attach PID -o FILE` in the window's tests (the window runs
`python3 fake_attach.py attach PID -o FILE`). With MEMLENS_FAKE_ATTACH=fail it prints the CLI's
one-line error and exits 1. Otherwise it prints the CLI's line "memlens: attached to ..." (FILE
is the test's own live session) and waits for SIGINT, the detach: it writes "detached PID" to
MEMLENS_FAKE_ATTACH_LOG when set and exits 0."""
import os
import signal
import sys

args = sys.argv[1:]
if len(args) != 4 or args[0] != "attach" or args[2] != "-o":
    sys.exit(f"fake_attach: expected attach PID -o FILE, got {args}")
pid, out = args[1], args[3]
if os.environ.get("MEMLENS_FAKE_ATTACH") == "fail":
    print("memlens-cli: attaching to it needs a running process", file=sys.stderr)
    print(f"memlens-cli: process {pid} has not imported torch", file=sys.stderr)
    sys.exit(1)


def detach(*_):
    log = os.environ.get("MEMLENS_FAKE_ATTACH_LOG")
    if log:
        with open(log, "a") as f:
            f.write(f"detached {pid}\n")
    sys.exit(0)


signal.signal(signal.SIGINT, detach)
print(f"memlens: attached to process {pid}, recording into {out}", file=sys.stderr, flush=True)
while True:
    signal.pause()
