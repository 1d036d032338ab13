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
from upstream.model.flow_rules import Flow, flow_order
from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.deletion import not_deleted
from upstream.store.dialect import constant, frontier, id_filters
from upstream.store.edge_rows import EDGES
from upstream.store.window import (
    Bounds,
    flows_as_of,
)

_F = t.flows.c


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


#: A node of the walk: ("dataset" | "job", id).
Node = tuple[str, uuid.UUID]


def marquez_reach(conn: Connection, seed: Node, direction: Step, depth: int) -> dict[Node, int]:
    """Every node the Marquez graph's walk (`query.marquez.lineage`) expands in
    `direction` within `depth` job levels, over all runs: from a dataset, the jobs that
    wrote (read, downstream) it ("reached": only their job -> job edges are followed) and
    the datasets its flows come from (go to); from a job, the datasets it read (wrote) and
    the jobs its job -> job edges connect it to."""
    return _reach(conn, [seed], _marquez_steps(direction), depth)


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


def _marquez_steps(direction: Step) -> list[_Step]:
    near, far = ("source", "target") if direction == "downstream" else ("target", "source")
    near_access, far_access = ("read", "write") if direction == "downstream" else ("write", "read")
    r, e = t.relations.c, EDGES.c
    flow_near, flow_far = (getattr(_F, f"{side}_dataset_id") for side in (near, far))
    job_near, job_far = (getattr(e, f"{side}_job_id") for side in (near, far))
    job_to_job = (e.source_type == "job", e.target_type == "job")
    return [
        _Step("dataset", flow_near, "dataset", flow_far, 1),
        _Step("dataset", flow_near, "reached", _F.job_id, 0),
        _Step("dataset", r.dataset_id, "reached", r.job_id, 0, (r.access == near_access,)),
        _Step("reached", job_near, "job", job_far, 1, job_to_job),
        _Step("job", job_near, "job", job_far, 1, job_to_job),
        _Step("job", r.job_id, "dataset", r.dataset_id, 1, (r.access == far_access,)),
    ]
