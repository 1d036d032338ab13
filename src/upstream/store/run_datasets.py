"""The datasets runs listed as inputs or outputs in the events already stored, with their
current fields: what a run's `sql` facet may name (design §3.1, a run accumulates); and
which runs have lineage read from a `sql` facet stored, which new datasets may change."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.store import schema as t
from upstream.store.dialect import ByIds
from upstream.store.edge_rows import EDGES

#: A run's datasets, each with its field names (None when no schema is known).
RunDatasets = dict[DatasetRef, list[str] | None]


_RUN_DATASETS = ByIds(
    t.relations.c.run_id,
    lambda ids: (
        sa.select(
            t.relations.c.run_id, t.datasets.c.namespace, t.datasets.c.name, t.datasets.c.fields
        )
        .join_from(t.relations, t.datasets, t.datasets.c.id == t.relations.c.dataset_id)
        .where(ids, t.relations.c.origin == "io")
        .distinct()
    ),
)
#: A run's edges found by their link's owner, the run (the links' `run_id` has no index).
_WITH_SQL_EDGES = ByIds(
    EDGES.c.owner_id,
    lambda ids: (
        sa.select(EDGES.c.owner_id)
        .where(ids, EDGES.c.scope == "run", EDGES.c.origin == "sql")
        .distinct()
    ),
)


def datasets_of_runs(
    conn: Connection, run_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, RunDatasets]:
    """Per run, every dataset it read or wrote (as listed by its events) and its fields."""
    found: dict[uuid.UUID, RunDatasets] = {}
    for rows in _RUN_DATASETS.run(conn, run_ids):
        for row in rows:
            ref = DatasetRef(row.namespace, row.name)
            found.setdefault(row.run_id, {})[ref] = _names(row.fields)
    return found


def runs_with_sql_edges(conn: Connection, run_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """The runs among `run_ids` that have edges of origin `sql` stored."""
    found: set[uuid.UUID] = set()
    for rows in _WITH_SQL_EDGES.run(conn, run_ids):
        found.update(rows.scalars())
    return found


def _names(fields: Any) -> list[str] | None:
    names = [
        f["name"] for f in fields or [] if isinstance(f, dict) and isinstance(f.get("name"), str)
    ]
    return names or None
