"""Dataset-to-dataset data flow, the one place where precedence becomes a graph (§3.2).

A flow S -> T exists in run r of job J when r stored an explicit dataset-level edge S -> T (a
lineage facet entry, field operations, columnLineage, or one implied by field edges), or, when
nothing explicit describes T for that run, when r read S and wrote T (the inputs x outputs
inference). The inference is never made for a run that carried a lineage facet, nor for a job
whose declaration carried one. It is computed here rather than stored, so a run whose inputs
and outputs arrive in separate events gets the product of all of them.

Each call is one round of set-based queries for a whole frontier of datasets, never one per
dataset, so graph walks cost a constant number of queries per level.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from functools import cache
from typing import Any, Literal, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.window import (
    declared_with_lineage_facet,
    edges_as_of,
    relations_as_of,
    run_in_window,
)

Direction = Literal["upstream", "downstream"]


class Flow(NamedTuple):
    """Data of `source` flowed into `target`, made by `job_id` in `run_id` (None: declared).

    A named tuple: walks make thousands per level, and a frozen dataclass cost several
    times as much to build."""

    source: uuid.UUID
    target: uuid.UUID
    job_id: uuid.UUID | None
    run_id: uuid.UUID | None
    inferred: bool


def flows(
    conn: Connection,
    datasets: Collection[uuid.UUID],
    direction: Direction,
    window: Window | None = None,
) -> list[Flow]:
    """Every flow into (`upstream`) or out of (`downstream`) any of `datasets`."""
    found = _explicit(conn, datasets, direction, window) | _inferred(
        conn, datasets, direction, window
    )
    return sorted(found, key=_order)


def _order(flow: Flow) -> tuple[int, int, int, int]:
    """The dataclass order (source, target, job, run) on the ids' integers: comparing UUID
    objects field by field in Python cost more than the statements on large frontiers.
    Declared flows (no run) come before run flows instead of failing to compare."""
    return (
        flow.source.int,
        flow.target.int,
        flow.job_id.int if flow.job_id else -1,
        flow.run_id.int if flow.run_id else -1,
    )


def _explicit(
    conn: Connection, datasets: Collection[uuid.UUID], direction: Direction, window: Window | None
) -> set[Flow]:
    e = edges_as_of(window)
    anchor = e.c.target_dataset_id if direction == "upstream" else e.c.source_dataset_id
    found: set[Flow] = set()
    for matches in id_filters(conn, anchor, datasets):
        query = sa.select(
            e.c.source_dataset_id, e.c.target_dataset_id, e.c.job_id, e.c.run_id
        ).where(
            matches,
            e.c.source_type == "dataset",
            e.c.target_type == "dataset",
            e.c.source_field.is_(None),
            e.c.target_field.is_(None),
            run_in_window(e.c.run_id, window),
        )
        rows = conn.execute(query).all()
        found.update(Flow(source, target, job, run, False) for source, target, job, run in rows)
    return found


def _inferred(
    conn: Connection, datasets: Collection[uuid.UUID], direction: Direction, window: Window | None
) -> set[Flow]:
    """inputs x outputs per run (or per job declaration), where nothing explicit applies.

    Runs and declarations are two statements: each joins on columns the indexes cover
    (run_id; job_id with no run), where one statement joining on "same run, or both without
    a run" made the database pair every read and write of a job across all its runs."""
    return _inferred_in_runs(conn, datasets, direction, window) | _inferred_declared(
        conn, datasets, direction, window
    )


def _io_pairs(direction: Direction, window: Window | None) -> tuple[sa.Select[Any], Any, Any]:
    """Reads and writes of the same job, as sources and targets; the anchor is the end the
    walk starts from."""
    if window is None or window.as_of is None:
        return _current_io_pairs(direction)
    return _io_pairs_of(direction, relations_as_of(window))


@cache
def _current_io_pairs(direction: Direction) -> tuple[sa.Select[Any], Any, Any]:
    """Built once per direction: statements are immutable, and building them again for
    every chunk showed in profiles."""
    return _io_pairs_of(direction, t.relations)


def _io_pairs_of(direction: Direction, relations: sa.FromClause) -> tuple[sa.Select[Any], Any, Any]:
    reads = relations.alias("reads")
    writes = relations.alias("writes")
    anchor = writes.c.dataset_id if direction == "upstream" else reads.c.dataset_id
    query = sa.select(
        reads.c.dataset_id.label("source"),
        writes.c.dataset_id.label("target"),
        writes.c.job_id,
        writes.c.run_id,
    ).where(
        reads.c.job_id == writes.c.job_id,
        reads.c.access == "read",
        writes.c.access == "write",
        reads.c.origin == "io",
        writes.c.origin == "io",
        reads.c.dataset_id != writes.c.dataset_id,
    )
    return query, (reads, writes), anchor


def _inferred_in_runs(
    conn: Connection, datasets: Collection[uuid.UUID], direction: Direction, window: Window | None
) -> set[Flow]:
    query, (reads, writes), anchor = _io_pairs(direction, window)
    explicit_for_output = (
        sa.select(sa.literal(1))
        .select_from(t.edges)
        .where(
            t.edges.c.run_id == writes.c.run_id,
            t.edges.c.target_dataset_id == writes.c.dataset_id,
            t.edges.c.scope == "run",
        )
        .exists()
    )
    run_has_facet = (
        sa.select(sa.literal(1))
        .select_from(t.runs)
        .where(t.runs.c.id == writes.c.run_id, t.runs.c.has_lineage_facet)
        .exists()
    )
    query = query.where(
        reads.c.run_id == writes.c.run_id,
        run_in_window(writes.c.run_id, window),
        ~explicit_for_output,
        ~run_has_facet,
    ).distinct()
    found: set[Flow] = set()
    for matches in id_filters(conn, anchor, datasets):
        rows = conn.execute(query.where(matches)).all()
        found.update(Flow(source, target, job, run, True) for source, target, job, run in rows)
    return found


def _inferred_declared(
    conn: Connection, datasets: Collection[uuid.UUID], direction: Direction, window: Window | None
) -> set[Flow]:
    query, (reads, writes), anchor = _io_pairs(direction, window)
    edges = edges_as_of(window)
    explicit_for_output = (
        sa.select(sa.literal(1))
        .select_from(edges)
        .where(
            edges.c.job_id == writes.c.job_id,
            edges.c.target_dataset_id == writes.c.dataset_id,
            edges.c.scope == "job",
        )
        .exists()
    )
    job_declared_facet = declared_with_lineage_facet(writes.c.job_id, window)
    query = query.where(
        reads.c.run_id.is_(None),
        writes.c.run_id.is_(None),
        ~explicit_for_output,
        ~job_declared_facet,
    ).distinct()
    found: set[Flow] = set()
    for matches in id_filters(conn, anchor, datasets):
        rows = conn.execute(query.where(matches)).all()
        found.update(Flow(source, target, job, None, True) for source, target, job, _ in rows)
    return found
