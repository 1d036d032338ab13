"""Run lineage (design §4.5): which run of which job made the data a run read, and which runs
read what it wrote — the service behind `GET /v3/runs/{runId}/lineage`.

A run R that read dataset D read the version of D that one run W wrote: the version the
producer named in R's input `version` facet (the write whose own `version` facet names the
same one), else the latest run that wrote D and completed (state COMPLETE) no later than R
started. A run still writing D when R started, or one that failed, made no version R could
read: the earlier complete version counts. Downstream is the same rule read the other way:
the readers of W's outputs are the runs whose read resolves to W.

Each direction is one recursive statement (both dialects): a link (reader, dataset, writer)
per step, `levels` steps at most, so a walk of any depth is one round trip; the runs' and
datasets' details are a fixed number more.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any, Literal, NamedTuple, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import DIRECTIONS, Direction, Step
from upstream.model.errors import InvalidParameter, NotFound, Problem, shown
from upstream.model.identity import stable_id
from upstream.model.nodeid import dataset_node_id
from upstream.query.answers import DatasetVersion, RunLineageAnswer, RunOfRunLineage
from upstream.query.job_dependencies import run_dependencies
from upstream.query.lineage_params import as_of_time, parse_levels
from upstream.query.lineage_query import RunQuery
from upstream.store import schema as t
from upstream.store.dialect import few_rows, frontier, id_filters, planned_once
from upstream.store.window import run_started_by

DEFAULT_RUN_LEVELS = 5
_UUID = re.compile(r"[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class RunLineageParams:
    """What a run-lineage query asks for; `parse` turns query-string values into it."""

    run_id: uuid.UUID
    direction: Direction = "both"
    levels: int = DEFAULT_RUN_LEVELS
    as_of: datetime | None = None

    @classmethod
    def parse(
        cls, run_id: str, query: RunQuery, *, max_levels: int, now: datetime | None = None
    ) -> RunLineageParams:
        """Validate every parameter; InvalidParameter lists each bad one by its name."""
        direction = query.direction
        problems: list[Problem] = []
        parsed_id: uuid.UUID | None = None
        if _UUID.fullmatch(run_id.strip()):
            parsed_id = uuid.UUID(run_id.strip())
        else:
            problems.append(Problem("runId", f"{shown(run_id)} is not a UUID"))
        if direction is not None and direction not in DIRECTIONS:
            problems.append(
                Problem("direction", f"{shown(direction)} is not one of both, upstream, downstream")
            )
        depth = parse_levels(query.levels, max_levels, problems, default=DEFAULT_RUN_LEVELS)
        at, _ = as_of_time(query.as_of, now, problems)
        if problems or parsed_id is None:
            raise InvalidParameter(problems)
        return cls(parsed_id, DIRECTIONS.get(direction or "both", "both"), depth, at)


class Link(NamedTuple):
    """`reader` read the version of `dataset` that `writer` wrote (None: no run we know of
    wrote the version it read); `level` steps away from the queried run."""

    reader: uuid.UUID
    dataset: uuid.UUID
    writer: uuid.UUID | None
    level: int


def run_lineage(conn: Connection, params: RunLineageParams, *, max_nodes: int) -> RunLineageAnswer:
    """Runs and the dataset versions between them around one run; NotFound for a
    run that is not stored (or had not started by `as_of`). At most `max_nodes` runs and
    versions: a larger answer keeps the nearest levels and says `"truncated": true`."""
    _existing_run(conn, params)
    links: set[Link] = set()
    if params.direction in ("upstream", "both"):
        links |= _walk(conn, params, "upstream")
    if params.direction in ("downstream", "both"):
        links |= _walk(conn, params, "downstream")
    kept, truncated = _nearest(links, params.run_id, max_nodes)
    return _render(conn, params, kept, truncated)


def _existing_run(conn: Connection, params: RunLineageParams) -> None:
    runs = t.runs
    found = conn.execute(
        sa.select(runs.c.id, runs.c.started_at).where(runs.c.id == params.run_id)
    ).first()
    if found is None:
        raise NotFound(f"run {params.run_id} not found")
    if params.as_of is not None and (found.started_at is None or found.started_at > params.as_of):
        raise NotFound(f"run {params.run_id} had not started by {params.as_of.isoformat()} (asOf)")


# -- the walk -------------------------------------------------------------------------------


def _walk(conn: Connection, params: RunLineageParams, direction: Step) -> set[Link]:
    statement = _statement(direction, params.as_of is not None)
    bound: dict[str, Any] = {"seed": params.run_id, "levels": params.levels}
    if params.as_of is not None:
        bound["as_of"] = params.as_of
    with planned_once(conn, params.as_of):
        rows = conn.execute(statement, bound).all()
    if direction == "upstream":
        return {Link(reader, dataset, writer, level) for reader, dataset, writer, level in rows}
    return {Link(reader, dataset, writer, level) for writer, dataset, reader, level in rows}


def _writer_of(read: sa.FromClause, reader: sa.FromClause) -> sa.ColumnElement[Any]:
    """The run that wrote the version of `read.dataset_id` that the `read` (a relations row
    of run `reader`) read: the rule in the module docstring, ties by the later run id."""
    named_write = t.relations.alias("named_write")
    named = (
        sa.select(named_write.c.run_id)
        .where(
            named_write.c.dataset_id == read.c.dataset_id,
            named_write.c.access == "write",
            named_write.c.run_id.is_not(None),
            named_write.c.run_id != read.c.run_id,
            named_write.c.version == read.c.version,
        )
        .order_by(named_write.c.event_time.desc(), named_write.c.run_id.desc())
        .limit(1)
        .scalar_subquery()
    )
    write = t.relations.alias("latest_write")
    writer = t.runs.alias("writer_run")
    latest = (
        sa.select(write.c.run_id)
        .join(writer, writer.c.id == write.c.run_id)
        .where(
            write.c.dataset_id == read.c.dataset_id,
            write.c.access == "write",
            write.c.run_id != read.c.run_id,
            writer.c.state == "COMPLETE",
            writer.c.ended_at <= reader.c.started_at,
        )
        .order_by(writer.c.ended_at.desc(), writer.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    return sa.func.coalesce(named, latest)


@cache
def _statement(direction: Step, as_of: bool) -> sa.Select[Any]:
    """The recursive walk; built once per direction and kind of bound (statements are
    immutable), its parameters bound per query."""
    if direction == "upstream":
        return _upstream()
    return _downstream(sa.bindparam("as_of", type_=t.runs.c.started_at.type) if as_of else None)


def _upstream() -> sa.Select[Any]:
    """Links (reader, dataset, writer, level): the queried run's reads, then its writers'
    reads, one level further each step. No `as_of` bound is needed: each writer completed
    before its reader started, and the queried run had started by `as_of`."""
    read, reader = t.relations.alias("read"), t.runs.alias("reader")
    start = (
        sa.select(
            read.c.run_id.label("reader"),
            read.c.dataset_id.label("dataset"),
            _writer_of(read, reader).label("writer"),
            sa.literal(1).label("level"),
        )
        .join(reader, reader.c.id == read.c.run_id)
        .where(read.c.run_id == sa.bindparam("seed"), read.c.access == "read")
        .cte("run_links", recursive=True)
    )
    step_read, step_reader = t.relations.alias("step_read"), t.runs.alias("step_reader")
    step = (
        sa.select(
            step_read.c.run_id,
            step_read.c.dataset_id,
            _writer_of(step_read, step_reader),
            start.c.level + 1,
        )
        .select_from(start)
        .join(step_read, step_read.c.run_id == start.c.writer)
        .join(step_reader, step_reader.c.id == step_read.c.run_id)
        .where(step_read.c.access == "read", few_rows(start.c.level < sa.bindparam("levels")))
    )
    links = start.union(step)
    return sa.select(links.c.reader, links.c.dataset, links.c.writer, links.c.level)


def _downstream(as_of: sa.BindParameter[Any] | None) -> sa.Select[Any]:
    """Links (writer, dataset, reader, level): the runs whose reads resolve to the queried
    run's writes, then to theirs, one level further each step."""

    def readers_of(suffix: str) -> tuple[sa.FromClause, ...]:
        read = t.relations.alias(f"read_{suffix}")
        reader = t.runs.alias(f"reader_{suffix}")
        writer = t.runs.alias(f"writer_{suffix}")
        return read, reader, writer

    def linked(
        write: sa.FromClause, read: sa.FromClause, reader: sa.FromClause, writer: sa.FromClause
    ) -> list[sa.ColumnElement[bool]]:
        return [
            write.c.access == "write",
            read.c.dataset_id == write.c.dataset_id,
            read.c.access == "read",
            read.c.run_id != write.c.run_id,
            reader.c.id == read.c.run_id,
            writer.c.id == write.c.run_id,
            # A cheap bound first: the time rule needs the write done before the read began.
            sa.or_(read.c.version.is_not(None), writer.c.ended_at <= reader.c.started_at),
            run_started_by(reader, as_of),
            _writer_of(read, reader) == write.c.run_id,
        ]

    write = t.relations.alias("write")
    read, reader, writer = readers_of("start")
    start = (
        sa.select(
            write.c.run_id.label("writer"),
            write.c.dataset_id.label("dataset"),
            read.c.run_id.label("reader"),
            sa.literal(1).label("level"),
        )
        .select_from(write)
        .join(read, read.c.dataset_id == write.c.dataset_id)
        .join(reader, reader.c.id == read.c.run_id)
        .join(writer, writer.c.id == write.c.run_id)
        .where(write.c.run_id == sa.bindparam("seed"), *linked(write, read, reader, writer))
        .cte("run_links", recursive=True)
    )
    step_write = t.relations.alias("step_write")
    step_read, step_reader, step_writer = readers_of("step")
    step = (
        sa.select(
            step_write.c.run_id, step_write.c.dataset_id, step_read.c.run_id, start.c.level + 1
        )
        .select_from(start)
        .join(step_write, step_write.c.run_id == start.c.reader)
        .join(step_read, step_read.c.dataset_id == step_write.c.dataset_id)
        .join(step_reader, step_reader.c.id == step_read.c.run_id)
        .join(step_writer, step_writer.c.id == step_write.c.run_id)
        .where(
            frontier(start.c.level < sa.bindparam("levels"), as_of),
            *linked(step_write, step_read, step_reader, step_writer),
        )
    )
    links = start.union(step)
    return sa.select(links.c.writer, links.c.dataset, links.c.reader, links.c.level)


def _nearest(links: Iterable[Link], seed: uuid.UUID, max_nodes: int) -> tuple[list[Link], bool]:
    """Each link at its nearest level, kept nearest first while the runs and versions they
    bring fit in `max_nodes`; a stable order, so a cut answer is the same on every call."""
    nearest: dict[tuple[uuid.UUID, uuid.UUID, uuid.UUID | None], int] = {}
    for link in links:
        key = (link.reader, link.dataset, link.writer)
        nearest[key] = min(link.level, nearest.get(key, link.level))
    ordered = sorted(
        (Link(*key, level) for key, level in nearest.items()),
        key=lambda k: (k.level, k.reader.int, k.dataset.int, k.writer.int if k.writer else -1),
    )
    nodes: set[object] = {seed}
    kept: list[Link] = []
    truncated = False
    for link in ordered:
        new = {link.reader, (link.dataset, link.writer)} | ({link.writer} if link.writer else set())
        if len(nodes | new) > max_nodes:
            truncated = True
            continue
        nodes |= new
        kept.append(link)
    return kept, truncated


# -- rendering ------------------------------------------------------------------------------


def state_as_of(
    state: str | None, ended_at: datetime | None, as_of: datetime | None
) -> tuple[str | None, datetime | None]:
    """A run's state and end as they stood at `as_of`: a run that ended later was running
    then (the last state before its end is not kept; RUNNING is what it was doing)."""
    if as_of is None or ended_at is None or ended_at <= as_of:
        return state, ended_at
    return "RUNNING", None


def version_id(dataset: uuid.UUID, writer: uuid.UUID | None, node_id: str) -> str:
    """A version node's id: the version's (Marquez's dataset version, one per dataset and
    writing run); for a read whose writer is unknown, the dataset's node id."""
    return str(stable_id("dataset_version", dataset, writer)) if writer else node_id


def _render(
    conn: Connection, params: RunLineageParams, links: list[Link], truncated: bool
) -> RunLineageAnswer:
    run_ids = {params.run_id} | {link.reader for link in links}
    run_ids |= {link.writer for link in links if link.writer is not None}
    runs = _runs(conn, run_ids, params.as_of)
    names = _dataset_names(conn, {link.dataset for link in links})
    named = _named_versions(conn, links)
    since = _since(conn, links)
    levels = {params.run_id: 0}
    for link in links:  # a run's level: the nearest link it is part of
        for run in (link.reader, link.writer):
            if run is not None and run != params.run_id:
                levels[run] = min(levels.get(run, link.level), link.level)
    versions: dict[str, DatasetVersion] = {}
    edges: dict[tuple[Literal["read", "write"], str, str], datetime | None] = {}
    for link in links:
        namespace, name = names[link.dataset]
        key = version_id(link.dataset, link.writer, dataset_node_id(namespace, name))
        versions[key] = {
            "id": key,
            "dataset": {"namespace": namespace, "name": name},
            "version": key if link.writer else None,
            "producerVersion": named.get((link.writer, link.dataset))
            or named.get((link.reader, link.dataset)),
            "writtenBy": str(link.writer) if link.writer else None,
        }
        edges[("read", str(link.reader), key)] = since.get((link.reader, link.dataset, "read"))
        if link.writer is not None:
            write = since.get((link.writer, link.dataset, "write"))
            edges[("write", str(link.writer), key)] = write
    run_docs = [
        cast(RunOfRunLineage, {**runs[run], "level": levels.get(run, 0)})
        for run in run_ids
        if run in runs
    ]
    run_docs.sort(key=lambda doc: (doc["level"], doc["startedAt"] or "", doc["runId"]))
    response = cast(
        RunLineageAnswer,
        {
            "runId": str(params.run_id),
            "direction": params.direction,
            "levels": params.levels,
            **({"asOf": params.as_of.isoformat()} if params.as_of else {}),
            "runs": run_docs,
            "datasetVersions": [versions[k] for k in sorted(versions)],
            "edges": [
                {
                    "type": kind,
                    "run": run,
                    "datasetVersion": version,
                    "since": _iso(edges[(kind, run, version)]),
                }
                for kind, run, version in sorted(edges)
            ],
            "jobDependencies": run_dependencies(conn, params.run_id, params.direction),
        },
    )
    if truncated:
        response["truncated"] = True
    return response


def _runs(
    conn: Connection, run_ids: set[uuid.UUID], as_of: datetime | None
) -> dict[uuid.UUID, dict[str, Any]]:
    r, j = t.runs.c, t.jobs.c
    found: dict[uuid.UUID, dict[str, Any]] = {}
    for matches in id_filters(conn, r.id, run_ids):
        query = (
            sa.select(r.id, j.namespace, j.name, r.state, r.started_at, r.ended_at)
            .join(t.jobs, t.jobs.c.id == r.job_id)
            .where(matches)
        )
        for row in conn.execute(query):
            state, ended = state_as_of(row.state, row.ended_at, as_of)
            found[row.id] = {
                "runId": str(row.id),
                "job": {"namespace": row.namespace, "name": row.name},
                "state": state,
                "startedAt": _iso(row.started_at),
                "endedAt": _iso(ended),
            }
    return found


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _dataset_names(conn: Connection, ids: set[uuid.UUID]) -> dict[uuid.UUID, tuple[str, str]]:
    d = t.datasets.c
    found: dict[uuid.UUID, tuple[str, str]] = {}
    for matches in id_filters(conn, d.id, ids):
        for row in conn.execute(sa.select(d.id, d.namespace, d.name).where(matches)):
            found[row.id] = (row.namespace, row.name)
    return found


def _since(conn: Connection, links: list[Link]) -> dict[tuple[uuid.UUID, uuid.UUID, str], datetime]:
    """When each run's read or write of a dataset appeared, by (run, dataset, access): the
    earliest event that stated it, or for a streaming run the first since a snapshot last
    left it out (design §4.5)."""
    r = t.relations.c
    runs = {link.reader for link in links} | {link.writer for link in links if link.writer}
    found: dict[tuple[uuid.UUID, uuid.UUID, str], datetime] = {}
    for matches in id_filters(conn, r.run_id, runs):
        query = (
            sa.select(r.run_id, r.dataset_id, r.access, sa.func.min(r.event_time))
            .where(matches)
            .group_by(r.run_id, r.dataset_id, r.access)
        )
        for run_id, dataset_id, access, first in conn.execute(query):
            found[(run_id, dataset_id, access)] = first
    return found


def _named_versions(
    conn: Connection, links: list[Link]
) -> dict[tuple[uuid.UUID | None, uuid.UUID], str]:
    """The version names producers gave, by (run, dataset): the writer's for its write, the
    reader's for its read."""
    r = t.relations.c
    runs = {link.reader for link in links} | {link.writer for link in links if link.writer}
    found: dict[tuple[uuid.UUID | None, uuid.UUID], str] = {}
    for matches in id_filters(conn, r.run_id, runs):
        query = sa.select(r.run_id, r.dataset_id, r.version).where(matches, r.version.is_not(None))
        for run_id, dataset_id, version in conn.execute(query):
            found[(run_id, dataset_id)] = version
    return found
