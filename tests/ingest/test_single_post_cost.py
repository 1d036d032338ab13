"""What a post of one event costs its transaction: the statements it makes and sends.

A single post pays a transaction's fixed costs alone (docs/performance.md, "Single posts"):
each statement's construction and each round trip counts, where a batch shares them."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from tests.builders import ds, run_event
from upstream.ingest.service import ingest_documents
from upstream.store.engine import Store

PARENT = ("airflow://host", "daily")


def _run(store: Store, n: int) -> None:
    """One task run of the daily workflow, posted as it happens: START, then COMPLETE."""
    run_id, parent = str(uuid.uuid4()), (PARENT, str(uuid.uuid4()))
    job = ("airflow://host", f"copy_{n}")
    io = {"inputs": [ds("pg://db", f"a{n}")], "outputs": [ds("pg://db", f"b{n}")]}
    for state in ("START", "COMPLETE"):
        event = run_event(job, run_id=run_id, event_type=state, parent=parent, **io)
        ingest_documents(store, [event], batch=False)


def test_a_writes_lookups_by_id_are_statements_made_once(store: Store) -> None:
    """The lookups a write makes by id (its runs, their parents and spans, the stored rows
    it merges into, the months runs are filed under) are the same statement objects from
    one write to the next (`store.dialect.ByIds`): none is built, nor its cache key
    worked out, again."""
    made: list[Any] = []

    def note(_conn: Any, clause: Any, *_: Any) -> None:
        made.append(clause)

    _run(store, 0)  # the first write of each lookup makes it
    sa.event.listen(store.engine, "before_execute", note)
    _run(store, 1)
    first = {id(c) for c in made}
    made.clear()
    _run(store, 2)
    lookups = [c for c in made if isinstance(c, sa.Select) and _reads_by_id(c)]
    assert len(lookups) >= 5
    assert [c for c in lookups if id(c) not in first] == []


def _reads_by_id(select: sa.Select[Any]) -> bool:
    """A select of rows of runs or run_months (those every run event looks up)."""
    return any(getattr(f, "name", None) in ("runs", "run_months") for f in select.get_final_froms())
