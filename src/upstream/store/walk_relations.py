"""Every relation a dataset-lineage walk without a rollup shows, with its level, in one
statement (design §6: a walk only reads, in one round trip).

A node's level is one more than its depth in the walk's reach (`store.walks.reach_walk`), so
the relations each level shows follow from the nodes alone:

- `both`: every relation of a job reached at depth d is shown at level d + 1 (a dataset's
  relations are its jobs': a dataset -> job step adds no level);
- `upstream` (`downstream` mirrors it): from a dataset at depth d, its writers, both ends of
  every flow into it, and the job-end edges' near relations; from a job, the dataset at the
  far end of each of its job-end edges.

A relation keeps its least level, and its components are the ones stored on its (dataset,
job, run, access), or "" when none is stored. Ids come back as their hyphenated text
(`upstream.store.dialect.id_text`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from functools import cache
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import Direction
from upstream.model.window import Window
from upstream.store.deletion import not_deleted
from upstream.store.dialect import constant, frontier, id_text, planned_once
from upstream.store.schema import Timestamp
from upstream.store.walks import flow_in_window, reach_by_row, reach_walk
from upstream.store.window import (
    Bounds,
    edges_as_of,
    flows_as_of,
    relations_as_of,
    run_in_window,
)


class ShownRelation(NamedTuple):
    """A relation as an answer shows it: job `job_id` read or wrote dataset `dataset_id` in
    run `run_id` (None: declared) through `component` ("" when unnamed), ids as their
    hyphenated text."""

    dataset_id: str
    job_id: str
    run_id: str | None
    access: str
    component: str

    @property
    def sort_key(self) -> tuple[str, str, str, str, str]:
        """A stable order: the ids' fixed-width text orders as their numbers do; a
        declared relation (no run) comes first."""
        return (self.dataset_id, self.job_id, self.run_id or "", self.access, self.component)


def walk_relations(
    conn: Connection, seed: uuid.UUID, mode: Direction, levels: int, window: Window
) -> dict[ShownRelation, int]:
    """The relations a walk of `levels` levels from `seed` in `mode` shows, each with the
    level it is shown at, in no particular order."""
    by_row = reach_by_row(mode, levels)
    statement = _statement(conn.dialect.name, mode, window.as_of is not None, by_row)
    values: dict[str, Any] = {
        "walk_seed": seed,
        "walk_levels": levels,
        "window_start": window.start,
        "window_end": window.end,
    }
    if window.as_of is not None:
        values["window_as_of"] = window.as_of
    with planned_once(conn, window.as_of):
        rows = conn.execute(statement, values).all()
    return {
        ShownRelation(dataset, job, run, access, component): level
        for dataset, job, run, access, component, level in rows
    }


class _BoundWindow(NamedTuple):
    """The bounds of a window as parameters of a statement built once."""

    start: sa.BindParameter[datetime]
    end: sa.BindParameter[datetime]
    as_of: sa.BindParameter[datetime] | None


@cache
def _statement(
    dialect: str, mode: Direction, as_of: bool, by_row: bool
) -> sa.Select[Any] | sa.CompoundSelect[Any]:
    """The walk's statement, with the seed, the levels and the window as parameters: built
    once per shape, as building it cost more than the database's work on a short walk."""
    window = _BoundWindow(
        sa.bindparam("window_start", type_=Timestamp),
        sa.bindparam("window_end", type_=Timestamp),
        sa.bindparam("window_as_of", type_=Timestamp) if as_of else None,
    )
    seed = sa.bindparam("walk_seed", type_=sa.Uuid)
    levels = sa.bindparam("walk_levels", type_=sa.Integer)
    walk = reach_walk(dialect, seed, mode, levels, window, by_row=by_row)
    nodes = (
        sa.select(walk.c.kind, walk.c.node, (sa.func.min(walk.c.depth) + 1).label("level"))
        .group_by(walk.c.kind, walk.c.node)
        .cte("walk_nodes")
    )
    if mode == "both":
        return _of_jobs(nodes, window, dialect)
    shown = sa.union_all(*_directed(nodes, mode, window)).subquery("shown")
    keys = (
        sa.select(
            shown.c.dataset_id,
            shown.c.job_id,
            shown.c.run_id,
            shown.c.access,
            sa.func.min(shown.c.level).label("level"),
        )
        .group_by(shown.c.dataset_id, shown.c.job_id, shown.c.run_id, shown.c.access)
        .cte("walk_keys")
    )
    return _with_components(keys, window, dialect)


def _of_jobs(nodes: Any, window: Bounds, dialect: str) -> sa.Select[Any]:
    """`both`: the relations of the jobs reached, each at its job's level."""
    relations = relations_as_of(window)
    r = relations.c
    return (
        sa.select(
            id_text(r.dataset_id, dialect),
            id_text(r.job_id, dialect),
            id_text(r.run_id, dialect),
            r.access,
            r.component,
            sa.func.min(nodes.c.level),
        )
        .select_from(nodes)
        .join(relations, r.job_id == nodes.c.node)
        .where(
            frontier(nodes.c.kind == constant("job"), window.as_of),
            run_in_window(r.run_id, window),
            not_deleted(r.dataset_id, r.job_id),
        )
        .group_by(r.dataset_id, r.job_id, r.run_id, r.access, r.component)
    )


def _directed(nodes: Any, mode: Direction, window: Bounds) -> list[sa.Select[Any]]:
    """`upstream`/`downstream`: what each level's datasets and jobs show."""
    near, far = ("target", "source") if mode == "upstream" else ("source", "target")
    near_access, far_access = ("write", "read") if mode == "upstream" else ("read", "write")
    datasets = frontier(nodes.c.kind == constant("dataset"), window.as_of)
    relations = relations_as_of(window)
    r = relations.c
    flows = flows_as_of(window)
    f = flows.c
    edges = edges_as_of(window)
    e = edges.c

    def end(side: str, column: str) -> Any:
        return getattr(e, f"{side}_{column}")

    def key(dataset: Any, job: Any, run: Any, access: str) -> tuple[Any, ...]:
        return _key(dataset, job, run, sa.literal(access), nodes.c.level)

    near_relations = (
        sa.select(*key(r.dataset_id, r.job_id, r.run_id, near_access))
        .select_from(nodes)
        .join(relations, r.dataset_id == nodes.c.node)
        .where(
            datasets,
            r.access == constant(near_access),
            run_in_window(r.run_id, window),
            not_deleted(r.dataset_id, r.job_id),
        )
    )
    flow_joined = (
        sa.select(nodes.c.level, f.source_dataset_id, f.target_dataset_id, f.job_id, f.run_id)
        .select_from(nodes)
        .join(flows, getattr(f, f"{near}_dataset_id") == nodes.c.node)
        .where(
            datasets,
            f.job_id.is_not(None),
            flow_in_window(f, window),
            not_deleted(f.source_dataset_id, f.target_dataset_id, f.job_id),
        )
        .cte("walk_flows")
    )
    w = flow_joined.c
    flow_reads = sa.select(
        *_key(w.source_dataset_id, w.job_id, w.run_id, sa.literal("read"), w.level)
    )
    flow_writes = sa.select(
        *_key(w.target_dataset_id, w.job_id, w.run_id, sa.literal("write"), w.level)
    )
    in_window = run_in_window(e.run_id, window)
    # A job-end edge whose near end is a dataset of the level: the job at its far end
    # touches that dataset (writes it, upstream).
    fed_datasets = (
        sa.select(
            *key(end(near, "dataset_id"), end(far, "job_id"), end(far, "run_id"), near_access)
        )
        .select_from(nodes)
        .join(edges, end(near, "dataset_id") == nodes.c.node)
        .where(
            datasets,
            end(near, "type") == constant("dataset"),
            end(far, "type") == constant("job"),
            in_window,
            not_deleted(end(far, "job_id")),
        )
    )
    # A job-end edge whose near end is a job of the level and far end a dataset: the job
    # touches that dataset (reads it, upstream).
    fed_jobs = (
        sa.select(
            *key(end(far, "dataset_id"), end(near, "job_id"), end(near, "run_id"), far_access)
        )
        .select_from(nodes)
        .join(edges, end(near, "job_id") == nodes.c.node)
        .where(
            frontier(nodes.c.kind == constant("job"), window.as_of),
            end(near, "type") == constant("job"),
            end(far, "type") == constant("dataset"),
            end(far, "dataset_id").is_not(None),
            in_window,
            not_deleted(end(far, "dataset_id"), end(near, "job_id")),
        )
    )
    return [near_relations, flow_reads, flow_writes, fed_datasets, fed_jobs]


def _key(*columns: Any) -> tuple[Any, ...]:
    """A shown key's columns, named as the union of them is read."""
    return tuple(c.label(n) for c, n in zip(columns, _KEY_COLUMNS, strict=True))


_KEY_COLUMNS = ("dataset_id", "job_id", "run_id", "access", "level")


def _with_components(keys: Any, window: Bounds, dialect: str) -> sa.CompoundSelect[Any]:
    """Each key with every component stored on it, or "" when none is. Named components
    are few and indexed apart (`ix_relations_named_component`, by dataset): those of the
    keys' datasets are read once, and the keys are matched to those alone. A key none
    matches is shown with "" (an anti-join the database can hash), and one that some match
    is shown with "" too only where an unnamed row is stored on it. Reading the named rows
    first keeps that plan whatever the parameters: matched key by key, the keys cost a
    lookup each."""
    stored = relations_as_of(window)
    r = stored.c
    k = keys.c
    # Declared keys have no run; a constant stands for it, so the match stays an equality.
    no_run = sa.literal(uuid.UUID(int=0), sa.Uuid)
    named_rows = (
        sa.select(
            r.dataset_id,
            r.job_id,
            sa.func.coalesce(r.run_id, no_run).label("run"),
            r.access,
            r.component,
        )
        .where(r.component != constant(""), r.dataset_id.in_(sa.select(k.dataset_id)))
        .cte("walk_named")
    )
    n = named_rows.c
    key_run = sa.func.coalesce(k.run_id, no_run)
    named_key = sa.and_(
        n.dataset_id == k.dataset_id, n.job_id == k.job_id, n.access == k.access, n.run == key_run
    )

    def shown(component: Any) -> tuple[Any, ...]:
        ids = (id_text(c, dialect) for c in (k.dataset_id, k.job_id, k.run_id))
        return (*ids, k.access, component, k.level)

    has_named = sa.select(sa.literal(1)).select_from(named_rows).where(named_key).exists()
    has_plain = (
        sa.select(sa.literal(1))
        .select_from(stored)
        .where(
            r.component == constant(""),
            r.dataset_id == k.dataset_id,
            r.job_id == k.job_id,
            r.access == k.access,
            sa.func.coalesce(r.run_id, no_run) == key_run,
        )
        .exists()
    )
    named = sa.select(*shown(n.component)).distinct().select_from(keys).join(named_rows, named_key)
    plain = sa.select(*shown(sa.literal(""))).where(~has_named)
    beside_named = sa.select(*shown(sa.literal(""))).where(has_named, has_plain)
    return sa.union_all(named, plain, beside_named)
