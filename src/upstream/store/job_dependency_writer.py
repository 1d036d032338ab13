"""Write the control-flow edges a batch's `jobDependencies` facets state (design §3.3).

Called by the writer in the batch's transaction, after its runs are locked: every row belongs
to the run that stated it, so only writers of that run touch it. A statement already stored
is replaced only by one that counts more (`upstream.model.job_dependencies.latest_statement`),
so the rows are the same whatever order a run's events arrive in, and a replay changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.facts import EventFacts
from upstream.model.job_dependencies import DETAILS, JobDependencyFact, latest_statement
from upstream.store import schema as t
from upstream.store.change_log import RUNS, record
from upstream.store.dialect import id_filters, insert_rows_ignoring

Row = Mapping[str, Any]


def store_job_dependencies(conn: Connection, batch: Sequence[EventFacts]) -> None:
    """Insert the batch's new edges and update those it states anew; the runs whose edges
    changed go to the change log."""
    stated: dict[uuid.UUID, Row] = {}
    for facts in batch:
        for fact in facts.job_dependencies:
            row = _row(fact)
            known = stated.get(row["id"])
            stated[row["id"]] = row if known is None else latest_statement(known, row)
    if not stated:
        return
    new = insert_rows_ignoring(conn, t.job_dependencies, list(stated.values()), "id")
    changed = [
        stated[key]
        for key, stored in _stored(conn, set(stated) - new).items()
        if latest_statement(stored, stated[key]) is not stored
    ]
    if changed:
        c = t.job_dependencies.c
        update = (
            t.job_dependencies.update()
            .where(c.id == sa.bindparam("key"))
            .values({name: sa.bindparam(f"new_{name}") for name in ("stated_at", *DETAILS)})
        )
        conn.execute(
            update,
            [
                {"key": row["id"], **{f"new_{n}": row[n] for n in ("stated_at", *DETAILS)}}
                for row in changed
            ],
        )
    record(conn, RUNS, {stated[key]["run_id"] for key in new} | {r["run_id"] for r in changed})


def _row(fact: JobDependencyFact) -> dict[str, Any]:
    return {
        "id": fact.id,
        "run_id": fact.stated_by,
        "upstream_job_id": fact.upstream_job.id,
        "upstream_run_id": fact.upstream_run,
        "downstream_job_id": fact.downstream_job.id,
        "downstream_run_id": fact.downstream_run,
        "stated_at": fact.stated_at,
        **{name: getattr(fact, name) for name in DETAILS},
    }


def _stored(conn: Connection, ids: set[uuid.UUID]) -> dict[uuid.UUID, Row]:
    c = t.job_dependencies.c
    found: dict[uuid.UUID, Row] = {}
    for matches in id_filters(conn, c.id, ids):
        query = sa.select(c.id, c.run_id, c.stated_at, *(c[name] for name in DETAILS))
        found.update({row.id: row._mapping for row in conn.execute(query.where(matches))})
    return found
