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
from upstream.store.dialect import id_filters
from upstream.store.edge_rows import EDGES

#: A run's datasets, each with its field names (None when no schema is known).
RunDatasets = dict[DatasetRef, list[str] | None]


def datasets_of_runs(
    conn: Connection, run_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, RunDatasets]:
    """Per run, every dataset it read or wrote (as listed by its events) and its fields."""
    found: dict[uuid.UUID, RunDatasets] = {}
    r, d = t.relations, t.datasets
    for matches in id_filters(conn, r.c.run_id, run_ids):
        query = (
            sa.select(r.c.run_id, d.c.namespace, d.c.name, d.c.fields)
            .join_from(r, d, d.c.id == r.c.dataset_id)
            .where(matches, r.c.origin == "io")
            .distinct()
        )
        for row in conn.execute(query):
            ref = DatasetRef(row.namespace, row.name)
            found.setdefault(row.run_id, {})[ref] = _names(row.fields)
    return found


def runs_with_sql_edges(conn: Connection, run_ids: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """The runs among `run_ids` that have edges of origin `sql` stored."""
    e = EDGES.c
    found: set[uuid.UUID] = set()
    for matches in id_filters(conn, e.run_id, run_ids):
        query = sa.select(e.run_id).where(matches, e.scope == "run", e.origin == "sql").distinct()
        found.update(conn.execute(query).scalars())
    return found


def _names(fields: Any) -> list[str] | None:
    names = [
        f["name"] for f in fields or [] if isinstance(f, dict) and isinstance(f.get("name"), str)
    ]
    return names or None
