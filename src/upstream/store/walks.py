"""Reads of the derived flow graph (`flows`, design §6): what walks follow.

The flows were derived when their events were written (`upstream.store.flow_writer`), so a
read only selects rows: no relation is joined to another and nothing is inferred here. The
window is tested on each flow's copy of its run's span.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import Step
from upstream.model.facts import ORIGIN_SHOWN
from upstream.model.flow_rules import Flow, flow_order
from upstream.model.window import Window
from upstream.store.deletion import not_deleted
from upstream.store.dialect import constant, frontier, id_filters, planned_once
from upstream.store.edge_rows import EDGES
from upstream.store.window import (
    Bounds,
    edges_as_of,
    flows_as_of,
    run_in_window,
)


def flow_in_window(flow: Any, window: Bounds | None) -> sa.ColumnElement[bool]:
    """Declared flows (no run) are always in; a run's flow when its run overlaps `window`
    (started before the end, not finished before the start: design §4.1) and had started by
    its `as_of` time (design §4.5). `flow` is the columns of `flows` (or `flows_as_of`)."""
    if window is None:
        return sa.true()
    return sa.or_(
        flow.run_id.is_(None),
        sa.and_(
            flow.started_at < window.end,
            sa.or_(flow.ended_at.is_(None), flow.ended_at >= window.start),
            sa.true() if window.as_of is None else flow.started_at <= window.as_of,
        ),
    )


def flows(
    conn: Connection,
    datasets: Collection[uuid.UUID],
    direction: Step,
    window: Window | None = None,
) -> list[Flow]:
    """Every flow into (`upstream`) or out of (`downstream`) any of `datasets`, sorted."""
    return sorted(flow_set(conn, datasets, direction, window), key=flow_order)


def flow_set(
    conn: Connection,
    datasets: Collection[uuid.UUID],
    direction: Step,
    window: Window | None = None,
) -> set[Flow]:
    """`flows` unsorted, for a walk, which orders nothing by them (sorting a medium walk's
    44,000 flows cost a tenth of its time)."""
    f = flows_as_of(window).c
    anchor = f.target_dataset_id if direction == "upstream" else f.source_dataset_id
    columns = (f.source_dataset_id, f.target_dataset_id, f.job_id, f.run_id, f.inferred)
    found: set[Flow] = set()
    for matches in id_filters(conn, anchor, datasets):
        query = sa.select(*columns).where(
            matches,
            flow_in_window(f, window),
            not_deleted(f.source_dataset_id, f.target_dataset_id, f.job_id),
        )
        found.update(map(Flow._make, conn.execute(query).all()))
    return found


#: A node of the walk: ("dataset", id).
Node = tuple[str, uuid.UUID]


@dataclass(frozen=True)
class _Step:
    """One kind of step a walk takes: from a node of `from_kind` whose id is `from_id` to the
    node of `to_kind` that `to_id` names, `weight` levels deeper, where `where` holds. The
    columns name the table the step reads; `from_id` is one of its indexed columns."""

    from_kind: str
    from_id: Any
    to_kind: str
    to_id: Any
    weight: int
    where: tuple[Any, ...] = ()


def _reach(
    conn: Connection, seeds: Collection[Node], steps: Sequence[_Step], levels: int
) -> dict[Node, int]:
    """The nodes `steps` reach from `seeds` below `levels`, each with its least depth, in one
    recursive statement whatever `levels` is."""
    if not seeds:
        return {}
    return _depths(conn, _walk(conn.dialect.name, seeds, steps, levels))


def _depths(conn: Connection, walk: sa.CTE) -> dict[Node, int]:
    """Each node of `walk` with its least depth."""
    query = sa.select(walk.c.kind, walk.c.node, sa.func.min(walk.c.depth)).group_by(
        walk.c.kind, walk.c.node
    )
    return {(kind, node): depth for kind, node, depth in conn.execute(query)}


def _walk(
    dialect: str,
    seeds: Collection[tuple[str, uuid.UUID]],
    steps: Sequence[_Step],
    levels: int,
) -> sa.CTE:
    """The (kind, node, depth) rows `steps` reach from `seeds` below `levels`, as one
    recursive CTE whatever `levels` is. Each (node, depth) row is kept once, so cycles
    end and the rows stay below nodes x levels.

    Each step is joined to the walk row it extends on its indexed `from_id` column, so the
    database looks up only the rows next to the frontier: SQLite takes one recursive SELECT
    per step, PostgreSQL (one recursive reference only) a LATERAL union of the steps, run
    for each walk row."""
    starts = sa.union_all(
        *(
            sa.select(
                sa.literal(kind).label("kind"),
                sa.literal(node, sa.Uuid).label("node"),
                sa.literal(0).label("depth"),
            )
            # Sorted, so the same seeds make the same statement text (parsed once).
            for kind, node in sorted(seeds, key=lambda seed: (seed[0], str(seed[1])))
        )
    ).subquery("starts")
    walk = sa.select(starts.c.kind, starts.c.node, starts.c.depth).cte("walk", recursive=True)
    branches = [_branch(step, walk, levels) for step in steps]
    if dialect == "postgresql":
        beside = sa.union_all(*(b.correlate(walk) for b in branches)).lateral("step")
        return walk.union(
            sa.select(beside.c.kind, beside.c.node, beside.c.depth)
            .select_from(walk)
            .join(beside, sa.true())
        )
    return walk.union(*branches)


def _branch(step: _Step, walk: sa.CTE, levels: int) -> sa.Select[Any]:
    """The rows `step` adds to the walk from one walk row."""
    depth = walk.c.depth + step.weight
    return sa.select(
        sa.literal(step.to_kind).label("kind"), step.to_id.label("node"), depth.label("depth")
    ).where(
        frontier(walk.c.kind == constant(step.from_kind), None),
        step.from_id == walk.c.node,
        depth < levels,
        step.to_id.is_not(None),
        not_deleted(step.to_id),
        *step.where,
    )


def field_dataset_reach(
    conn: Connection, seeds: Collection[uuid.UUID], direction: Step, depth: int
) -> set[uuid.UUID]:
    """The datasets a field walk of `depth` edges from fields of `seeds` may expand: those
    that field -> field edges connect within `depth - 1` dataset hops (a superset: a dataset
    hop need not pass through the fields the walk follows)."""
    e = EDGES.c
    near, far = ("target", "source") if direction == "upstream" else ("source", "target")
    field_edges = _Step(
        "dataset",
        getattr(e, f"{near}_dataset_id"),
        "dataset",
        getattr(e, f"{far}_dataset_id"),
        1,
        (
            e.source_type == "dataset",
            e.target_type == "dataset",
            e.source_field.is_not(None),
            e.target_field.is_not(None),
        ),
    )
    reached = _reach(conn, [("dataset", s) for s in seeds], [field_edges], depth)
    return {node for _, node in reached}


def field_reach(
    conn: Connection,
    starts: Collection[tuple[uuid.UUID, str]],
    direction: Step,
    levels: int,
    window: Window | None,
) -> dict[tuple[uuid.UUID, str], set[str]]:
    """The fields reached from `starts` against (upstream) or along (downstream) field edges
    in at most `levels` hops, in one recursive statement, each with the origins (as answers
    name them) of the edges that reached it at its nearest hop; the starts themselves are
    never part of the answer, even when a cycle leads back to them."""
    if not starts:
        return {}
    edges = edges_as_of(window)
    e = edges.c
    near, far = ("target", "source") if direction == "upstream" else ("source", "target")
    near_dataset, near_field = getattr(e, f"{near}_dataset_id"), getattr(e, f"{near}_field")
    far_dataset, far_field = getattr(e, f"{far}_dataset_id"), getattr(e, f"{far}_field")
    seeds = [
        sa.select(
            sa.literal(dataset_id, sa.Uuid).label("dataset_id"),
            sa.literal(field, sa.Text).label("field"),
            sa.literal(0).label("depth"),
            sa.null().cast(sa.Text).label("origin"),
        )
        for dataset_id, field in sorted(starts)
    ]
    first = sa.union_all(*seeds).subquery("starts")
    walk = sa.select(first.c.dataset_id, first.c.field, first.c.depth, first.c.origin).cte(
        "field_walk", recursive=True
    )
    walk = walk.union(
        sa.select(far_dataset, far_field, (walk.c.depth + 1).label("depth"), e.origin)
        .select_from(walk)
        .join(edges, sa.and_(near_dataset == walk.c.dataset_id, near_field == walk.c.field))
        .where(
            frontier(walk.c.depth < levels, window.as_of if window else None),
            far_field.is_not(None),
            far_dataset.is_not(None),
            run_in_window(e.run_id, window),
            not_deleted(far_dataset),
        )
    )
    with planned_once(conn, window.as_of if window else None):
        rows = conn.execute(
            sa.select(walk.c.dataset_id, walk.c.field, walk.c.depth, walk.c.origin).distinct()
        ).all()
    begun = set(starts)
    nearest: dict[tuple[uuid.UUID, str], int] = {}
    for dataset_id, field, depth, _ in rows:
        node = (dataset_id, field)
        if node not in begun and depth < nearest.get(node, levels + 1):
            nearest[node] = depth
    reached: dict[tuple[uuid.UUID, str], set[str]] = {node: set() for node in nearest}
    for dataset_id, field, depth, origin in rows:
        node = (dataset_id, field)
        if origin is not None and nearest.get(node) == depth:
            reached[node].add(ORIGIN_SHOWN[origin])
    return reached
