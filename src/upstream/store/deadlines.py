"""Client-side deadlines for database work, so a hung database cannot hold a request forever.

PostgreSQL's `statement_timeout` and `lock_timeout` are enforced by the server; a server that
is stopped, or a network that stops forwarding, enforces nothing, and the kernel keeps
acknowledging the TCP connection, so neither keepalives nor `tcp_user_timeout` notice. The
`Watchdog` is the client's own bound: while a pooled connection is checked out, each statement
it starts must be answered within a deadline, else one thread shuts the connection's socket
down. The blocked driver call then fails at once with a disconnect error, which SQLAlchemy
answers by discarding the pool's connections, and the request gets a 503 instead of waiting.

SQLite runs in the process, so there a statement over its time is interrupted by a progress
handler (`sqlite3` raises `OperationalError: interrupted`).

A request waits on the database for one operation (a read or a write transaction), and the
`OperationClock` gives that operation as a whole the statement timeout: checking a pooled
connection, opening a new one and every statement share it, so a request that meets a hung
database one step after another still answers in time.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any


class Watchdog:
    """Shuts down the socket of any armed connection whose deadline passed."""

    def __init__(self) -> None:
        self._armed: dict[int, tuple[float, Any]] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._closed = False
        self._thread: threading.Thread | None = None
        #: When the watching thread wakes next by itself (never: nothing is armed).
        self._sleeps_until = math.inf

    def arm(self, dbapi_connection: Any, seconds: float) -> None:
        """`dbapi_connection` must answer within `seconds` from now (replacing any earlier
        deadline for it). The watching thread is woken only for a deadline sooner than the
        one it sleeps until: a read arms its connection for every statement, and waking
        the thread each time cost a one-level read more than its statements."""
        deadline = time.monotonic() + seconds
        with self._lock:
            self._armed[id(dbapi_connection)] = (deadline, dbapi_connection)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._watch, name="upstream-db-watchdog", daemon=True
                )
                self._thread.start()
            if deadline < self._sleeps_until:
                self._wake.notify()

    def disarm(self, dbapi_connection: Any) -> None:
        with self._lock:
            self._armed.pop(id(dbapi_connection), None)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._armed.clear()
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(5)

    def _watch(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                overdue = [key for key, (deadline, _) in self._armed.items() if deadline <= now]
                for key in overdue:
                    _, connection = self._armed.pop(key)
                    _shut_down(connection)
                soonest = min((deadline for deadline, _ in self._armed.values()), default=None)
                pause = None if soonest is None else max(soonest - now, 0.01)
                self._sleeps_until = math.inf if pause is None else now + pause
                self._wake.wait(pause)


def _shut_down(dbapi_connection: Any) -> None:
    """End the connection's TCP stream (not its file descriptor, which the driver owns and
    closes itself), waking any thread blocked reading it."""
    if getattr(dbapi_connection, "closed", True):
        return
    with contextlib.suppress(Exception):
        fd = dbapi_connection.fileno()
        sock = socket.socket(fileno=os.dup(fd))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()


class OperationClock:
    """The deadline of the store operation the calling thread runs (see the module)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._local = threading.local()

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Time the operation in the body; an operation inside another shares its deadline."""
        if getattr(self._local, "deadline", None) is not None:
            yield
            return
        self._local.deadline = time.monotonic() + self.seconds
        try:
            yield
        finally:
            self._local.deadline = None

    def within(self, seconds: float) -> float:
        """`seconds`, or what is left of the running operation's time when that is less."""
        deadline: float | None = getattr(self._local, "deadline", None)
        if deadline is None:
            return seconds
        return min(seconds, max(deadline - time.monotonic(), 0.0))


class SqliteStatementClock:
    """A progress handler that interrupts a SQLite statement running past its deadline."""

    #: SQLite calls the handler every this many virtual-machine instructions (about 1 ms).
    INSTRUCTIONS = 10_000

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline: float | None = None

    def start(self) -> None:
        self._deadline = time.monotonic() + self.seconds

    def stop(self) -> None:
        self._deadline = None

    def __call__(self) -> int:
        """Non-zero aborts the statement."""
        return int(self._deadline is not None and time.monotonic() > self._deadline)
