"""Field edges between a set of datasets, as an answer shows them (source field -> target
field), for the runs of a window and the declarations in force at its `as_of` time."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.dialect import id_groups, id_text, text_id_filters
from upstream.store.window import in_force, run_overlaps

#: Made once, like the window's own alias of the runs.
_LINK_RUN = t.runs.alias("link_run")


class FieldEdge(NamedTuple):
    """Data of `source_field` of dataset `source` flowed into `target_field` of `target`
    (ids as their hyphenated text, `upstream.store.dialect.id_text`)."""

    source: str
    source_field: str
    target: str
    target_field: str


class Side(NamedTuple):
    """One answer's datasets (ids as text) and the window its runs and declarations come
    from."""

    datasets: Collection[str]
    window: Window


def field_edges_among(conn: Connection, sides: Sequence[Side]) -> list[set[FieldEdge]]:
    """For each side, every field edge whose two datasets are both in its datasets.

    Sides that read the same edges (the same `as_of`, so the same declarations) share one
    statement per chunk of ids, which flags each edge with the windows it is in."""
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
    conn: Connection, windows: list[Window], datasets: set[str]
) -> list[tuple[FieldEdge, tuple[bool, ...]]]:
    """The distinct field edges into `datasets` in any of `windows` (which share `as_of`),
    each with whether it is in each window.

    Edges are stored once per lineage set and a set is linked to every run that stated it,
    so each set is first flagged with the windows its links' runs fall in, and its edges
    are read once: reading each edge once per link read ten times the rows."""
    found: list[tuple[FieldEdge, tuple[bool, ...]]] = []
    for part in id_groups(conn, datasets):
        for row in conn.execute(_statement(conn, windows, part)):
            found.append((FieldEdge(*row[:4]), tuple(bool(flag) for flag in row[4:])))
    return found


def _statement(
    conn: Connection, windows: list[Window], datasets: Collection[str]
) -> sa.Select[Any]:
    """One statement for the edges into `datasets`: the sets of runs' links (and of the
    current declarations without an `as_of`) flagged per window, their edges, and with an
    `as_of` the edges of the declarations then in force, in every window."""
    dialect = conn.dialect.name
    e, link, run = t.lineage_set_edges.c, t.lineage_links.c, _LINK_RUN
    (into,) = text_id_filters(conn, e.target_dataset_id, datasets)
    as_of = windows[0].as_of
    candidates = sa.select(e.set_id).where(into, *_field_ends(e)).scalar_subquery()
    inside = [sa.or_(link.run_id.is_(None), run_overlaps(run, w)) for w in windows]
    owners = [link.set_id.in_(candidates), sa.or_(*inside)]
    if as_of is not None:
        owners.append(link.scope == "run")
    flagged = (
        sa.select(link.set_id, *(_flag(c).label(f"in_{i}") for i, c in enumerate(inside)))
        .select_from(t.lineage_links.outerjoin(run, run.c.id == link.run_id))
        .where(*owners)
        .group_by(link.set_id)
        .subquery("flagged")
    )
    columns = _edge_columns(e, dialect)
    of_sets = (
        sa.select(*columns, *(flagged.c[f"in_{i}"] for i in range(len(windows))))
        .join_from(t.lineage_set_edges, flagged, flagged.c.set_id == e.set_id)
        .where(into, *_field_ends(e))
    )
    if as_of is not None:
        d = t.declared_edges.c
        (declared_into,) = text_id_filters(conn, d.target_dataset_id, datasets)
        in_every_window = [sa.literal(1).label(f"in_{i}") for i in range(len(windows))]
        declared = (
            sa.select(*_edge_columns(d, dialect), *in_every_window)
            .join(t.declarations, t.declarations.c.id == d.declaration_id)
            .where(declared_into, *_field_ends(d), in_force(as_of))
        )
        rows = sa.union_all(of_sets, declared).subquery("edges")
    else:
        rows = of_sets.subquery("edges")
    ends = [rows.c[c.name] for c in columns]
    return sa.select(
        *ends, *(sa.func.max(rows.c[f"in_{i}"]) for i in range(len(windows)))
    ).group_by(*ends)


def _flag(condition: sa.ColumnElement[bool]) -> sa.ColumnElement[int]:
    return sa.func.max(sa.case((condition, 1), else_=0))


def _field_ends(edges: Any) -> list[sa.ColumnElement[bool]]:
    """Both ends of the edge are a dataset's field."""
    return [
        edges.source_field.is_not(None),
        edges.target_field.is_not(None),
        edges.source_dataset_id.is_not(None),
    ]


def _edge_columns(edges: Any, dialect: str) -> list[sa.ColumnElement[Any]]:
    return [
        id_text(edges.source_dataset_id, dialect).label("source"),
        edges.source_field.label("source_field"),
        id_text(edges.target_dataset_id, dialect).label("target"),
        edges.target_field.label("target_field"),
    ]
