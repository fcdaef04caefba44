"""Who may hold the model worker's connections: a deadline for the request's head, and admission
by token before a connection counts against the worker's cap.

A connection arrives *pending*: it has until `head_timeout_s` after it was accepted to send its
request line and headers (one deadline for all of them, not one per read, so a client that drips
a byte every few seconds is closed when the deadline passes). At most `max_pending` connections
wait at once; one more pushes out the oldest pending one (it has had the longest to speak), so a
flood of silent connections cannot keep a client that sends its request at once from being read.

A connection whose headers carry the token is *admitted*: it takes one of `max_served` slots for
as long as its request is served. A connection without the token never takes a slot (the worker
answers 401 and closes it). `Admission` keeps these counts; `DeadlineReader` is the socket reader
that enforces the deadline.
"""
from __future__ import annotations

import io
import socket
import threading
import time


class DeadlineReader(io.RawIOBase):
    """Reads a socket with two bounds: each read waits at most `idle_s`, and while a deadline is
    set (`until`, a `time.monotonic()` value) no read waits past it. Past the deadline a read
    raises TimeoutError, as a socket timeout does."""

    def __init__(self, sock: socket.socket, idle_s: float, until: float | None = None) -> None:
        super().__init__()
        self._sock, self._idle_s, self.until = sock, idle_s, until

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        wait = self._idle_s
        if self.until is not None:
            left = self.until - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request line and headers did not arrive in time")
            wait = min(wait, left)
        self._sock.settimeout(wait)
        return self._sock.recv_into(buffer)


class Admission:
    """The worker's connection counts: pending (not yet authenticated, oldest pushed out past
    `max_pending`) and admitted (authenticated, at most `max_served`). Thread-safe."""

    def __init__(self, max_pending: int, max_served: int) -> None:
        self.max_pending, self.max_served = max_pending, max_served
        self._lock = threading.Lock()
        self._pending: dict[socket.socket, float] = {}     # insertion order: oldest first
        self._served: set[socket.socket] = set()
        #: how many pending connections were pushed out to make room
        self.pushed_out = 0

    def arrive(self, sock: socket.socket) -> None:
        """A connection was accepted: count it as pending, pushing out the oldest pending one
        (its reads end at once) when `max_pending` already wait."""
        with self._lock:
            oldest = next(iter(self._pending)) if len(self._pending) >= self.max_pending else None
            if oldest is not None:
                del self._pending[oldest]
                self.pushed_out += 1
            self._pending[sock] = time.monotonic()
        if oldest is not None:
            try:
                oldest.shutdown(socket.SHUT_RDWR)    # its thread reads an end of file and ends
            except OSError:
                pass

    def admit(self, sock: socket.socket) -> bool:
        """The connection's token checked: move it from pending to served; False (it stays
        pending) when `max_served` are served already."""
        with self._lock:
            if len(self._served) >= self.max_served:
                return False
            self._pending.pop(sock, None)
            self._served.add(sock)
            return True

    def leave(self, sock: socket.socket) -> None:
        """The connection is closed: forget it, freeing its slot."""
        with self._lock:
            self._pending.pop(sock, None)
            self._served.discard(sock)

    def counts(self) -> tuple[int, int]:
        """(pending, served) right now."""
        with self._lock:
            return len(self._pending), len(self._served)
