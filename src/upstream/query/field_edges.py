"""Field edges between a set of datasets, as an answer shows them (source field -> target
field), for the runs of a window and the declarations in force at its `as_of` time."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.window import edges_as_of, run_overlaps

#: Made once, like the window's own alias of the runs.
_EDGE_RUN = t.runs.alias("edge_run")


class FieldEdge(NamedTuple):
    """Data of `source_field` of dataset `source` flowed into `target_field` of `target`."""

    source: uuid.UUID
    source_field: str
    target: uuid.UUID
    target_field: str


class Side(NamedTuple):
    """One answer's datasets and the window its runs and declarations come from."""

    datasets: Collection[uuid.UUID]
    window: Window


def field_edges_among(conn: Connection, sides: Sequence[Side]) -> list[set[FieldEdge]]:
    """For each side, every field edge whose two datasets are both in its datasets.

    Sides that read the same edges (the same `as_of`, so the same declarations) share one
    statement per chunk of ids: each edge row is read once, joined to its run once, and
    grouped with a flag per side's window. Field edges are stored per run, so the rows read
    are many times the edges answered; reading them once for both sides of a diff halves
    what the diff spends on them."""
    found: list[set[FieldEdge]] = [set() for _ in sides]
    by_as_of: dict[datetime | None, list[int]] = {}
    for index, side in enumerate(sides):
        by_as_of.setdefault(side.window.as_of, []).append(index)
    for indexes in by_as_of.values():
        wanted = [set(sides[i].datasets) for i in indexes]
        for edge, flags in _flagged(conn, [sides[i].window for i in indexes], set().union(*wanted)):
            for index, among, flag in zip(indexes, wanted, flags, strict=True):
                if flag and edge.source in among and edge.target in among:
                    found[index].add(edge)
    return found


def _flagged(
    conn: Connection, windows: list[Window], datasets: set[uuid.UUID]
) -> list[tuple[FieldEdge, tuple[bool, ...]]]:
    """The distinct field edges into `datasets` in any of `windows` (which share `as_of`),
    each with whether it is in each window."""
    edges = edges_as_of(windows[0])
    e, run = edges.c, _EDGE_RUN
    inside = [sa.or_(e.run_id.is_(None), run_overlaps(run, w)) for w in windows]
    flags = [sa.func.max(sa.case((condition, 1), else_=0)) for condition in inside]
    columns = (e.source_dataset_id, e.source_field, e.target_dataset_id, e.target_field)
    found: list[tuple[FieldEdge, tuple[bool, ...]]] = []
    for matches in id_filters(conn, e.target_dataset_id, datasets):
        query = (
            sa.select(*columns, *flags)
            .select_from(edges.outerjoin(run, run.c.id == e.run_id))
            .where(
                matches,
                e.source_field.is_not(None),
                e.target_field.is_not(None),
                e.source_dataset_id.is_not(None),
                sa.or_(*inside),
            )
            .group_by(*columns)
        )
        for row in conn.execute(query):
            found.append((FieldEdge(*row[:4]), tuple(bool(flag) for flag in row[4:])))
    return found
