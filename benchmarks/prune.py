"""Retention on a store kept by month (design §5): how long a prune takes.

The workload's history is stretched (`STRETCH` times longer: medium's 10 days become 100),
moved to end the day before the current month (a prune drops only past months), and each
batch is written as received at its events' time, as a server running through those months
would have (the months' partitions made first, as that server would have made them ahead).
The cutoff then leaves the last third: on PostgreSQL the whole months before it are dropped
and the month at the edge loses rows. Two figures come from the same database: a dry run,
which deletes every row it would remove (in a savepoint it rolls back), is what a prune by
rows costs; the prune itself drops whole months and deletes the rest.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.databases import fresh_database
from benchmarks.generator import read_events
from upstream.ingest.service import prepare, store_facts
from upstream.model.events import parse_time
from upstream.retention import prune_store
from upstream.store.engine import Store
from upstream.store.months import month_of, next_month
from upstream.store.partitions import make_partitions

#: How many times longer the stretched history is than the workload's.
STRETCH = 10
#: Events per written batch.
BATCH = 500


@dataclass
class PruneFigures:
    db: str
    events: int
    ingest_s: float
    ingest_cpu_ms_per_event: float
    events_removed: int
    runs_removed: int
    partitions_dropped: int
    by_rows_s: float
    prune_s: float
    load: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def run_prune(kind: str, data_dir: Path, out: Path) -> PruneFigures:
    """Fill a fresh `kind` database with the stretched history, then time a dry run and a
    prune at two thirds of it."""
    documents = [json.loads(line) for line in read_events(data_dir)]
    first = min(parse_time(d["eventTime"]) for d in documents)
    last = max(parse_time(d["eventTime"]) for d in documents)
    # Stretched, and moved to end the day before this month: every month of it is past, as a
    # prune's whole months always are.
    this_month = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    shift = this_month - timedelta(days=1) - (first + (last - first) * STRETCH)
    for document in documents:
        moment = parse_time(document["eventTime"])
        document["eventTime"] = (first + (moment - first) * STRETCH + shift).isoformat()
    start, end = first + shift, last + (last - first) * (STRETCH - 1) + shift
    with fresh_database(kind, f"prune_{kind}", out) as url:
        store = Store(url)
        try:
            store.write(lambda conn: make_partitions(conn, _months(start, end)))
            began, cpu = time.perf_counter(), time.process_time()
            for first in range(0, len(documents), BATCH):
                chunk = documents[first : first + BATCH]
                received = max(parse_time(d["eventTime"]) for d in chunk)
                store_facts(store, prepare(chunk, batch=True), received + timedelta(minutes=1))
            ingest_s = time.perf_counter() - began
            ingest_cpu = time.process_time() - cpu
            if kind == "postgresql":
                # The planner's statistics, as after any bulk load (autovacuum, later).
                store.write(lambda conn: conn.exec_driver_sql("ANALYZE"))
            cutoff = start + (end - start) * 2 / 3
            began = time.perf_counter()
            dry = prune_store(store, cutoff, dry_run=True)
            by_rows_s = time.perf_counter() - began
            began = time.perf_counter()
            done = prune_store(store, cutoff)
            prune_s = time.perf_counter() - began
        finally:
            store.dispose()
    if dry is None or done is None or dry.removed != done.removed:
        raise RuntimeError(f"the dry run counted {dry} and the prune removed {done}")
    return PruneFigures(
        db=kind,
        events=len(documents),
        ingest_s=round(ingest_s, 1),
        ingest_cpu_ms_per_event=round(1000 * ingest_cpu / len(documents), 2),
        events_removed=done.removed.get("events", 0),
        runs_removed=done.runs,
        partitions_dropped=len(done.dropped),
        by_rows_s=round(by_rows_s, 2),
        prune_s=round(prune_s, 2),
        load=" ".join(f"{x:.1f}" for x in os.getloadavg()),
    )


def _months(start: datetime, end: datetime) -> list[int]:
    months = [month_of(start)]
    while months[-1] < month_of(end):
        months.append(next_month(months[-1]))
    return months
