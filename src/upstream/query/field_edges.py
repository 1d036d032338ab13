"""Field edges between a set of datasets, as an answer shows them (source field -> target
field), for the runs of a window and the declarations in force at its `as_of` time."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.store.dialect import id_filters
from upstream.store.window import edges_as_of, run_in_window


class FieldEdge(NamedTuple):
    """Data of `source_field` of dataset `source` flowed into `target_field` of `target`."""

    source: uuid.UUID
    source_field: str
    target: uuid.UUID
    target_field: str


def field_edges_among(
    conn: Connection, datasets: Collection[uuid.UUID], window: Window | None
) -> set[FieldEdge]:
    """Every field edge whose two datasets are both in `datasets` (a lineage answer's)."""
    e = edges_as_of(window).c
    wanted = set(datasets)
    found: set[FieldEdge] = set()
    for matches in id_filters(conn, e.target_dataset_id, wanted):
        query = (
            sa.select(e.source_dataset_id, e.source_field, e.target_dataset_id, e.target_field)
            .where(
                matches,
                e.source_field.is_not(None),
                e.target_field.is_not(None),
                e.source_dataset_id.is_not(None),
                run_in_window(e.run_id, window),
            )
            .distinct()
        )
        found.update(FieldEdge(*row) for row in conn.execute(query) if row[0] in wanted)
    return found
