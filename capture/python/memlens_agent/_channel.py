"""The job's end of the recorder socket (protocol: capture/include/memlens/capture/Protocol.h).

Frames: b"MLS1", u32 JSON length, u64 blob length (little-endian), the JSON, the blob.

Sending never blocks the caller. A small message goes out at once from the calling thread when
nothing is waiting (a non-blocking send: once the call returns, the message survives the process
being killed), except in loops faster than one step per millisecond, whose messages are sent
together once a millisecond (at most 10 ms later when the loop stops): a kill there loses at most
the last millisecond. Everything else waits in a bounded queue for the sender thread, which also pickles
snapshots, so that a snapshot of hundreds of MB costs the training loop only the _snapshot() call.
"""

import collections
import json
import os
import pickle
import socket
import struct
import threading
import time

_HEADER = struct.Struct("<4sIQ")
_monotonic = time.monotonic
_MAGIC = b"MLS1"


def encode(head, blob_len=0):
    js = json.dumps(head, separators=(",", ":"), default=str).encode("utf-8", "replace")
    return _HEADER.pack(_MAGIC, len(js), blob_len) + js


_PHASES = {}


def iteration_frame(index, phase, start_us, end_us, rank=None):
    """encode() of an iteration message, a few times faster (it is sent at every step). rank:
    (rank, world size) in a distributed job."""
    p = _PHASES.get(phase)
    if p is None:
        p = _PHASES[phase] = json.dumps(str(phase)).encode("utf-8", "replace")
    js = b'{"t":"iteration","index":%d,"phase":%s,"start_us":%d,"end_us":%d' % (index, p, start_us, end_us)
    if rank is not None:
        js += b',"rank":%d,"world_size":%d' % rank
    js += b"}"
    return _HEADER.pack(_MAGIC, len(js), 0) + js


class Channel(object):
    COALESCE_S = 0.001  # at most one send() per millisecond from the training loop
    IDLE_FLUSH_S = 0.01  # gathered messages wait at most this long when the loop goes quiet

    def __init__(self, path, max_items=10000, max_bytes=512 << 20, max_pending_snapshots=2):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            cred = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", cred)
            if uid != os.getuid():
                raise PermissionError("the recorder at %s runs as another user" % path)
        except Exception:
            s.close()
            raise
        self._sock = s
        self._pid = os.getpid()
        self._cv = threading.Condition(threading.Lock())
        self._queue = collections.deque()
        self._queued_bytes = 0
        self._pending_snapshots = 0
        self._busy = False
        self._closing = False
        self._pending = bytearray()  # small messages gathered between sends
        self._deferred = []  # messages the sender thread encodes (send_deferred)
        self._last_flush = 0.0
        self.dead = False
        self.dropped = 0
        self.snapshot_requested = False
        self.graph_scan_requested = False
        # memlens-cli attach: called on the reader thread when the recorder asks to detach, and
        # when it goes away (the attached agent then removes itself from the job)
        self.on_detach = None
        self.on_gone = None
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.max_pending_snapshots = max_pending_snapshots
        self._sender = threading.Thread(target=self._send_loop, name="memlens-sender", daemon=True)
        self._reader = threading.Thread(target=self._read_loop, name="memlens-reader", daemon=True)
        self._sender.start()
        self._reader.start()

    # -- sending ---------------------------------------------------------------------------

    def send(self, head):
        """A small message (a dict, or a frame from encode()/iteration_frame()). False when
        dropped (queue full) or the recorder is gone.

        Sent at once (a non-blocking send from the calling thread) when nothing else waits and
        the previous send is COALESCE_S old; a faster loop's messages are gathered and go out
        together with the first one after that (or from the sender thread after IDLE_FLUSH_S),
        which keeps the cost of very short steps down to a fraction of a syscall."""
        data = head if isinstance(head, bytes) else encode(head)
        cv = self._cv
        with cv:
            if self.dead:
                return False
            if self._queue or self._busy:
                if len(self._queue) >= self.max_items:
                    self.dropped += 1
                    return False
                self._queue.append(("raw", data))
                self._queued_bytes += len(data)
                cv.notify()
                return True
            pending = self._pending
            pending += data
            now = _monotonic()
            if now - self._last_flush < self.COALESCE_S and len(pending) < 65536:
                # No notify(): waking the sender thread would cost the loop a GIL hand-over.
                # The sender looks every IDLE_FLUSH_S anyway.
                return True
            self._last_flush = now
            data = bytes(pending)
            del pending[:]
            try:
                n = self._sock.send(data, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                n = 0
            except OSError:
                self.dead = True
                return False
            if n < len(data):
                self._queue.appendleft(("raw", data[n:]))  # the rest goes first
                self._queued_bytes += len(data) - n
                cv.notify()
            return True

    def send_deferred(self, head):
        """A small message (a dict) that the sender thread encodes and sends within
        IDLE_FLUSH_S (or at the next flush): the training thread neither encodes it nor uses up
        send()'s once-a-millisecond send, so the record that follows it (an iteration's end)
        still leaves at once. For the doctor's markers (doctor.py), sent right before an
        iteration record or a scan; a process killed within IDLE_FLUSH_S loses the last one."""
        with self._cv:
            if self.dead:
                return False
            if len(self._deferred) >= self.max_items:
                self.dropped += 1
                return False
            self._deferred.append(head)
            return True

    def _queue_deferred(self):
        """Under the lock: the deferred messages, encoded, go to the queue."""
        items = self._deferred
        self._deferred = []
        data = b"".join(encode(h) for h in items)
        if data:
            self._queue.append(("raw", data))
            self._queued_bytes += len(data)

    def _queue_pending(self):
        """Under the lock: gathered small messages go before what is queued next."""
        if self._pending:
            data = bytes(self._pending)
            del self._pending[:]
            self._queue.append(("raw", data))
            self._queued_bytes += len(data)
            self._last_flush = _monotonic()
        if self._deferred:
            self._queue_deferred()

    def send_pickled(self, head, obj, keep=False, prepare=None):
        """head plus pickle.dumps(obj) as the blob, pickled on the sender thread. keep: ignore
        the bounds (out-of-memory and exit snapshots). prepare(obj, head) -> obj, when given,
        runs on the sender thread before pickling (trimming stacks; it may add to head)."""
        with self._cv:
            if self.dead:
                return False
            if not keep and (self._pending_snapshots >= self.max_pending_snapshots
                             or self._queued_bytes > self.max_bytes):
                self.dropped += 1
                return False
            self._queue_pending()
            self._pending_snapshots += 1
            self._queue.append(("pickle", head, obj, prepare))
            self._cv.notify()
            return True

    def _send_loop(self):
        cv = self._cv
        while True:
            with cv:
                while not self._queue and not self._closing:
                    if self._deferred:
                        self._queue_deferred()
                        break
                    if self._pending and _monotonic() - self._last_flush >= self.IDLE_FLUSH_S:
                        self._queue_pending()
                        break
                    cv.wait(self.IDLE_FLUSH_S)
                if self._closing:
                    self._queue_pending()
                if not self._queue:
                    return
                item = self._queue.popleft()
                self._busy = True
            size = 0
            try:
                if item[0] == "raw":
                    size = len(item[1])
                    if not self.dead:
                        self._sock.sendall(item[1])
                else:
                    head, obj, prepare = item[1], item[2], item[3]
                    item = None
                    if prepare is not None:
                        obj = prepare(obj, head)
                    blob = pickle.dumps(obj)  # exactly what torch.cuda.memory._dump_snapshot writes
                    obj = None
                    if not self.dead:
                        self._sock.sendall(encode(head, len(blob)))
                        self._sock.sendall(blob)
                    blob = None
            except Exception:
                self.dead = True
            finally:
                with cv:
                    self._busy = False
                    if size:
                        self._queued_bytes -= size
                    else:
                        self._pending_snapshots -= 1
                    if self.dead:
                        self._queue.clear()
                        del self._pending[:]
                        del self._deferred[:]
                        self._queued_bytes = 0
                        self._pending_snapshots = 0
                    cv.notify_all()

    def flush(self, timeout):
        """Waits until everything queued was handed to the socket; False on timeout."""
        with self._cv:
            self._queue_pending()
            self._cv.notify_all()
            return self._cv.wait_for(lambda: (not self._queue and not self._busy) or self.dead, timeout) \
                and not self.dead

    def close(self):
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def forget_after_fork(self):
        """In a forked child: drop the inherited socket without touching the parent's stream
        (and without the locks, which another thread may have held at the fork)."""
        self.dead = True
        try:
            fd = self._sock.detach()
            os.close(fd)
        except Exception:
            pass

    # -- receiving -------------------------------------------------------------------------

    def _read_loop(self):
        buf = b""
        while True:
            try:
                data = self._sock.recv(65536)
            except InterruptedError:
                continue
            except OSError:
                break
            if not data:
                break
            buf += data
            while len(buf) >= _HEADER.size:
                magic, jlen, blen = _HEADER.unpack_from(buf)
                if magic != _MAGIC:
                    buf = b""
                    break
                end = _HEADER.size + jlen + blen
                if len(buf) < end:
                    break
                try:
                    head = json.loads(buf[_HEADER.size:_HEADER.size + jlen].decode("utf-8"))
                except ValueError:
                    head = {}
                buf = buf[end:]
                if isinstance(head, dict) and head.get("t") == "snapshot_request":
                    self.snapshot_requested = True
                if isinstance(head, dict) and head.get("t") in ("snapshot_request", "graph_scan_request"):
                    self.graph_scan_requested = True
                if isinstance(head, dict) and head.get("t") == "detach" and self.on_detach is not None:
                    self._call(self.on_detach)
        # The recorder went away: stop sending (in this process only).
        if os.getpid() == self._pid:
            self.dead = True
            if self.on_gone is not None and not self._closing:
                self._call(self.on_gone)

    @staticmethod
    def _call(fn):
        try:
            fn()
        except Exception:
            pass
