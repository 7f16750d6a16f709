"""A running process for File > Attach's tests: with "torch" it imports torch (Debian's CPU
build), without it stays plain Python; then it prints "ready" once and idles until killed.
Usage: idle_job.py torch|plain"""
import sys
import time

if sys.argv[1] == "torch":
    import torch  # noqa: F401  (loaded: /proc/PID/maps shows libtorch)
print("ready", flush=True)
while True:
    time.sleep(0.1)  # idles in short sleeps, so that an attached agent's hooks get to run
