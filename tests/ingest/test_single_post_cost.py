"""What a post of one event costs its transaction: the statements it makes and sends.

A single post pays a transaction's fixed costs alone (docs/performance.md, "Single posts"):
each statement's construction and each round trip counts, where a batch shares them."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from tests.builders import ds, run_event
from upstream.ingest.service import ingest_documents
from upstream.store import schema as t
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
    lookups = [c for c in made if _reads_by_id(c)]
    assert len(lookups) >= 3
    assert [c for c in lookups if id(c) not in first] == []


def _reads_by_id(clause: Any) -> bool:
    """A select of rows of runs or run_months (those every run event looks up), or a union
    of such selects (a read that locks some of the rows)."""
    selects = clause.selects if isinstance(clause, sa.CompoundSelect) else [clause]
    return any(
        isinstance(s, sa.Select)
        and any(getattr(f, "name", None) in ("runs", "run_months") for f in s.get_final_froms())
        for s in selects
    )


DOCUMENTATION = "https://openlineage.io/spec/facets/1-0-0/DocumentationJobFacet.json"
DATASET_DOCUMENTATION = "https://openlineage.io/spec/facets/1-0-0/DocumentationDatasetFacet.json"


def _documentation(schema: str, text: str) -> dict[str, Any]:
    return {"_producer": "tests", "_schemaURL": schema, "description": text}


def _task_run(store: Store, found: list[str]) -> tuple[list[str], list[str]]:
    """A workflow's run with its job's facets, then one of its tasks posted as it happens
    (START, then a COMPLETE that documents its output): the statements of the task's START
    and of its COMPLETE."""
    workflow, run = str(uuid.uuid4()), str(uuid.uuid4())
    start = run_event(
        PARENT,
        run_id=workflow,
        event_type="START",
        job_facets={"documentation": _documentation(DOCUMENTATION, "the daily load")},
    )
    ingest_documents(store, [start], batch=False)
    sent: list[list[str]] = []
    for state, output in (
        ("START", ds("pg://db", "b")),
        ("COMPLETE", ds("pg://db", "b", documentation=_documentation(DATASET_DOCUMENTATION, "b"))),
    ):
        before = len(found)
        event = run_event(
            ("airflow://host", "copy"),
            run_id=run,
            event_type=state,
            parent=(PARENT, workflow),
            inputs=[ds("pg://db", "a")],
            outputs=[output],
        )
        ingest_documents(store, [event], batch=False)
        sent.append(found[before:])
    return sent[0], sent[1]


def _reads_of(sent: list[str], table: str) -> list[str]:
    """The statements that read `table`'s rows (a lock-taking read starts `WITH locked`),
    on one line each."""
    lines = [" ".join(s.split()) for s in sent]
    return [s for s in lines if s.startswith(("SELECT", "WITH locked")) and f" FROM {table} " in s]


def test_a_posts_stored_job_and_datasets_are_read_once(
    statements: tuple[Store, list[str]],
) -> None:
    """The COMPLETE names its workflow's job, whose stored facets the task's parent facet
    does not restate, and an output whose facets it changes: each table is read in one
    statement, the content hashes with the rows (`store.writer._current`), not the hashes
    and then the rows that differ. (On PostgreSQL the output, which changes, is read again
    locked.)"""
    store, found = statements
    _, complete = _task_run(store, found)
    for table in ("jobs", "datasets"):
        assert len([s for s in _reads_of(complete, table) if "FOR NO KEY" not in s]) == 1
    with store.engine.connect() as conn:
        facets = conn.execute(sa.text("SELECT facets FROM datasets WHERE name = 'b'")).scalar_one()
        job_facets = conn.execute(
            sa.text("SELECT facets FROM jobs WHERE name = 'daily'")
        ).scalar_one()
    assert "documentation" in str(facets)  # the output's merge was written
    assert "the daily load" in str(job_facets)  # the workflow's job kept its facets


def test_a_task_runs_parent_is_not_read_again_to_climb(
    statements: tuple[Store, list[str]],
) -> None:
    """The write merged the workflow's run (the task's parent): the climb that keeps parent
    chains from looping starts from its stored parent, without a statement of its own."""
    store, found = statements
    start, complete = _task_run(store, found)
    climbs = [s for s in start + complete if "SELECT runs.id, runs.parent_run_id" in s]
    assert climbs == []


def test_a_completes_run_row_is_read_once(statements: tuple[Store, list[str]]) -> None:
    """A run's later event changes its row (state, end): on PostgreSQL the row is read
    locked at once, in the statement that reads its parent's row unlocked, not read and
    then read again locked."""
    store, found = statements
    _, complete = _task_run(store, found)
    runs = [s for s in _reads_of(complete, "runs") if "runs.state_time" in s]
    assert len(runs) == 1
    locks = "FOR NO KEY UPDATE" in runs[0]
    assert locks is (store.engine.dialect.name == "postgresql")


def test_a_loop_closed_across_posts_is_broken(store: Store) -> None:
    """a's parent is b, b's is c (each its own post); c naming a as its parent would close
    the loop: the climb goes from what the write merged (c, then a) on to what it reads
    (b), and drops c's link."""
    a, b, c = (f"0{n}0{n}0{n}0{n}-0000-4000-8000-00000000000{n}" for n in (1, 2, 3))
    for run, parent in ((a, b), (b, c), (c, a)):
        event = run_event(("w", run[:2]), run_id=run, parent=(("w", parent[:2]), parent))
        ingest_documents(store, [event], batch=False)
    r = t.runs.c
    with store.engine.connect() as conn:
        parents = dict(conn.execute(sa.select(r.id, r.parent_run_id)).tuples().all())
    assert parents == {uuid.UUID(a): uuid.UUID(b), uuid.UUID(b): uuid.UUID(c), uuid.UUID(c): None}
