"""FAKE AGENT: a stand-in for the memlens Python agent in a CUDA job, for tests without a GPU.

It speaks the recorder's socket protocol (capture/include/memlens/capture/Protocol.h) directly,
as fast as it can, to load the recorder: hello, a process record claiming allocator snapshots,
iterations, markers, samples, and snapshots of given sizes (synthetic bytes, or a real snapshot
pickle). Run under `memlens-cli record -- python3 fake_agent.py ...`.

  fake_agent.py flood --iterations N --markers N --samples N --snapshots 50,100,150 [--pickle F]
      prints one JSON line: what it sent and how long sending took
  fake_agent.py request [--pickle F] [--iterations N] [--connect-delay S]
      waits for the recorder's snapshot_request (SIGUSR1 to the recorder), answers with a
      snapshot (trigger "request"; F replayed when given, else synthetic bytes), then exits;
      with --iterations N it sends N train iterations (0.1 s apart) first, so that a window
      following the session sees it grow; --connect-delay S waits S seconds before connecting
"""

import argparse
import json
import os
import socket
import struct
import sys
import time
import zlib

HEADER = struct.Struct("<4sIQ")


def frame(head, blob=b""):
    js = json.dumps(head, separators=(",", ":")).encode()
    return HEADER.pack(b"MLS1", len(js), len(blob)) + js


def now_us():
    return time.time_ns() // 1000


def synthetic(mb, seed):
    """MB megabytes, different for each seed (so that a mix-up shows in the checksum)."""
    block = bytes((i * 131 + seed * 7) & 0xFF for i in range(65536))
    n = mb * 1000 * 1000
    data = bytearray(block * (n // len(block) + 1))[:n]
    data[:32] = ("FAKE-SNAPSHOT-%d-%d" % (seed, mb)).encode().ljust(32, b".")
    return bytes(data)


def connect():
    path = os.environ.pop("MEMLENS_SOCKET")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(frame({"t": "hello", "v": 1, "agent": "FAKE AGENT (tests/capture/fake_agent.py)",
                     "pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv, "cwd": os.getcwd(),
                     "python": "fake", "time_us": now_us()}))
    s.sendall(frame({"t": "process", "torch": "fake", "cuda": "fake", "allocator_snapshots": True,
                     "devices": [{"index": 0, "name": "FAKE GPU", "total_bytes": 80 << 30}],
                     "info": {"fake_agent": True}}))
    return s


def flood(args):
    s = connect()
    sizes = [int(x) for x in args.snapshots.split(",") if x]
    blobs = [synthetic(mb, i + 1) for i, mb in enumerate(sizes)]
    if args.pickle:
        with open(args.pickle, "rb") as f:
            blobs.append(f.read())
    crcs = [zlib.crc32(b) & 0xFFFFFFFF for b in blobs]
    t0 = time.monotonic()
    small = 0
    per_iteration = max(1, args.markers // max(1, args.iterations))
    snapshot_at = {max(1, (k + 1) * args.iterations // (len(blobs) + 1)): k for k in range(len(blobs))}
    markers = samples = 0
    for i in range(1, args.iterations + 1):
        start = now_us()
        chunk = []
        for _ in range(per_iteration):
            if markers < args.markers:
                chunk.append(frame({"t": "marker", "time_us": now_us(), "iteration": i, "name": "m",
                                    "data": {"k": markers}}))
                markers += 1
            if samples < args.samples:
                chunk.append(frame({"t": "sample", "time_us": now_us(), "device": 0, "reserved": samples * 4096,
                                    "allocated": samples * 2048}))
                samples += 1
        s.sendall(b"".join(chunk))
        small += len(chunk)
        s.sendall(frame({"t": "iteration", "index": i, "phase": "train", "start_us": start, "end_us": now_us()}))
        if i in snapshot_at:
            k = snapshot_at[i]
            s.sendall(frame({"t": "snapshot", "iteration": i, "trigger": "iteration", "time_us": now_us(),
                             "info": {"fake": True}}, blobs[k]))
            s.sendall(blobs[k])
    while markers < args.markers or samples < args.samples:
        if markers < args.markers:
            s.sendall(frame({"t": "marker", "time_us": now_us(), "iteration": args.iterations, "name": "m"}))
            markers += 1
        if samples < args.samples:
            s.sendall(frame({"t": "sample", "time_us": now_us(), "device": 0, "reserved": 1, "allocated": 1}))
            samples += 1
    s.sendall(frame({"t": "bye", "reason": "exit"}))
    sent = time.monotonic() - t0
    s.close()
    print(json.dumps({"snapshot_bytes": [len(b) for b in blobs], "crc32": crcs, "markers": markers,
                      "samples": samples, "iterations": args.iterations, "send_seconds": round(sent, 3)}),
          flush=True)


def request(args):
    time.sleep(args.connect_delay)
    s = connect()
    for i in range(1, args.iterations + 1):
        start = now_us()
        time.sleep(0.1)
        s.sendall(frame({"t": "sample", "time_us": now_us(), "device": 0, "reserved": i << 20, "allocated": i << 19}))
        s.sendall(frame({"t": "iteration", "index": i, "phase": "train", "start_us": start, "end_us": now_us()}))
    print("waiting", flush=True)
    buf = b""
    s.settimeout(30)
    while True:
        data = s.recv(4096)
        if not data:
            sys.exit("the recorder closed the socket")
        buf += data
        if len(buf) >= HEADER.size:
            magic, jlen, blen = HEADER.unpack_from(buf)
            if len(buf) >= HEADER.size + jlen + blen:
                head = json.loads(buf[HEADER.size:HEADER.size + jlen])
                if head.get("t") == "snapshot_request":
                    break
                buf = buf[HEADER.size + jlen + blen:]
    if args.pickle:
        with open(args.pickle, "rb") as f:
            blob = f.read()
    else:
        blob = synthetic(1, 99)
    s.sendall(frame({"t": "snapshot", "iteration": args.iterations, "trigger": "request", "time_us": now_us()}, blob) + blob)
    s.close()
    print("answered", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["flood", "request"])
    p.add_argument("--iterations", type=int, default=None)
    p.add_argument("--markers", type=int, default=20000)
    p.add_argument("--samples", type=int, default=20000)
    p.add_argument("--snapshots", default="50,100,150")
    p.add_argument("--pickle")
    p.add_argument("--connect-delay", type=float, default=0.0)
    args = p.parse_args()
    if args.iterations is None:
        args.iterations = 100 if args.mode == "flood" else 0
    flood(args) if args.mode == "flood" else request(args)


if __name__ == "__main__":
    main()
