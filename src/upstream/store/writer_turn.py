"""Whose turn it is to write an SQLite file, among every process and thread writing it.

SQLite lets one transaction write at a time; a writer that finds the file locked sleeps
and tries again, sleeping longer each time (1, 2, 5, 10, 15, 20, 25, … up to 100 ms), so
it wakes well after the lock is free, and a busy writer, back for its next transaction
meanwhile, takes the lock again before it: with two API workers, a post could wait for
several of the other worker's transactions. Writers therefore queue on an advisory file
lock beside the database first (`flock`), which is free again the moment a writer's
transaction ends, and which a waiting writer checks every `POLL` seconds; only then do
they begin (IMMEDIATE), finding the database's own lock free.

A writer that waits longer than its lock timeout for its turn begins anyway: SQLite's own
wait, bounded by the same timeout, then decides, as it did before turns were taken.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Seconds between a waiting writer's looks at the turn.
POLL = 0.001


def turn_file(database: Path) -> Path:
    """The file whose lock is the turn to write `database`."""
    return database.with_name(database.name + "-writer")


@contextmanager
def writer_turn(database: Path | None, wait: float) -> Iterator[None]:
    """Hold the turn to write the SQLite file `database` (None: nothing to take), waiting
    at most `wait` seconds for it."""
    if database is None:
        yield
        return
    # A descriptor per turn: locks of two descriptors exclude each other, even in one
    # process, and closing it gives the turn back.
    handle = os.open(turn_file(database), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    break
                time.sleep(POLL)
        yield
    finally:
        os.close(handle)
