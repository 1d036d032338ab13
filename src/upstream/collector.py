"""How a long-running Upstream process sets Python's garbage collector.

A lineage answer is built from tens of thousands of small tuples that all live until it is
rendered. With the collector's default threshold (a collection every 700 allocations) a walk
of 18,000 relations spends more CPU in collections, each scanning every tuple made so far,
than in the walk itself (528 ms against 320 ms on a medium store). Collecting every 10,000
allocations keeps cycles collected, at a few megabytes of garbage at most.

A batch of events is the same, larger: 500 parsed events and their facts are about 150,000
objects the collector tracks, living until the batch is stored. Every one that outlives a
collection of the youngest generation moves to the middle one, which Python collects after
every 10 young collections (every 100,000 allocations here): each was scanned twice, and the
middle generation's scans were half of the collector's 9 % of ingest's CPU. Collected after
every 100 young collections instead, the middle generation is scanned once per million
allocations, by which time a batch's objects are freed (by reference counting: parsed JSON
holds no cycles).

While a batch is read and stored (`batch_in_flight`) the youngest generation is collected
only every 300,000 allocations: the batch's objects then live through no collection at all
(a batch of 500 medium events holds about 100,000 at its peak) and die by reference counting
when it is done. Ten young collections a batch, each scanning the batch's live objects, were
9 % of reading and translating it. The threshold stays raised while any batch is in flight,
so writers that overlap for ever still collect, every 300,000 allocations.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

#: Allocations between two collections of the youngest generation (Python's default: 700).
YOUNG_THRESHOLD = 10_000
#: Young collections between two collections of the middle generation (Python's default: 10).
MIDDLE_THRESHOLD = 100

#: Allocations between two collections of the youngest generation while a batch is in flight.
BATCH_YOUNG_THRESHOLD = 300_000

_app_started = threading.Event()


def tune_collector() -> None:
    """Collect less often, and freeze what start-up made (modules, the app, SQLAlchemy's
    caches), which lives as long as the process, so full collections stop scanning it."""
    gc.collect()
    gc.freeze()
    old = gc.get_threshold()[2]
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, old)


def tune_collector_for_app() -> None:
    """`tune_collector` at the start of the process's first app only. A process that starts
    app after app (the test suite, over a thousand) collected everything it held at each
    start, 25 ms apiece, and froze what the apps before had left."""
    if not _app_started.is_set():
        _app_started.set()
        tune_collector()


class _BatchesInFlight:
    """The batches in flight, and the thresholds to restore when the last is done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._restore: tuple[int, ...] = ()

    @contextmanager
    def one(self) -> Iterator[None]:
        with self._lock:
            if self._count == 0:
                self._restore = gc.get_threshold()
                young, *older = self._restore
                gc.set_threshold(max(young, BATCH_YOUNG_THRESHOLD), *older)
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
                if self._count == 0:
                    gc.set_threshold(*self._restore)


_IN_FLIGHT = _BatchesInFlight()


def batch_in_flight() -> AbstractContextManager[None]:
    """Collect the youngest generation rarely while a batch of events is read and stored
    (see the module): from the first batch in flight to the end of the last."""
    return _IN_FLIGHT.one()
