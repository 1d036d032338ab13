"""The datasets runs listed as inputs or outputs in the events already stored, with their
current fields: what a run's later `sql` facet may name (design §3.1, a run accumulates)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.store import schema as t
from upstream.store.dialect import id_filters


def datasets_of_runs(
    conn: Connection, run_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, dict[DatasetRef, list[str] | None]]:
    """Per run, every dataset it read or wrote (as listed by its events) and its fields."""
    found: dict[uuid.UUID, dict[DatasetRef, list[str] | None]] = {}
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


def _names(fields: Any) -> list[str] | None:
    names = [
        f["name"] for f in fields or [] if isinstance(f, dict) and isinstance(f.get("name"), str)
    ]
    return names or None
