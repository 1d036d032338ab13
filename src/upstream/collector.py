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
"""

from __future__ import annotations

import gc
import threading

#: Allocations between two collections of the youngest generation (Python's default: 700).
YOUNG_THRESHOLD = 10_000
#: Young collections between two collections of the middle generation (Python's default: 10).
MIDDLE_THRESHOLD = 100

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
