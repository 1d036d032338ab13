"""Run lineage (design §4.5): which run of which job made the data a run read, and which runs
read what it wrote — the service behind `GET /v3/runs/{runId}/lineage`.

A run R that read dataset D read the version of D that one run W wrote: the version the
producer named in R's input `version` facet (the write whose own `version` facet names the
same one), else the latest run that wrote D and completed (state COMPLETE) no later than R
started. A run still writing D when R started, or one that failed, made no version R could
read: the earlier complete version counts. Downstream is the same rule read the other way:
the readers of W's outputs are the runs whose read resolves to W.

The walk runs on the graph index (`upstream.query.graph_index.run_walk`); the runs' and
datasets' details are read by id, a fixed number of statements.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple, cast

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.direction import DIRECTIONS, Direction, Step
from upstream.model.errors import InvalidParameter, NotFound, Problem, shown
from upstream.model.identity import stable_id
from upstream.model.nodeid import dataset_node_id
from upstream.query.answers import DatasetVersion, RunLineageAnswer, RunOfRunLineage
from upstream.query.graph_index.dataset_walk import instant, microseconds
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import dataset_names_by_id, graph_of
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.run_walk import run_links
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.job_dependencies import run_dependencies
from upstream.query.lineage_params import as_of_time, parse_levels
from upstream.query.lineage_query import RunQuery
from upstream.store import schema as t
from upstream.store.dialect import id_filters

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


def run_lineage(
    conn: Connection,
    params: RunLineageParams,
    *,
    max_nodes: int,
    visibility: Visibility = EVERYTHING,
) -> RunLineageAnswer:
    """Runs and the dataset versions between them around one run; NotFound for a
    run that is not stored (or had not started by `as_of`). At most `max_nodes` runs and
    versions: a larger answer keeps the nearest levels and says `"truncated": true`. With
    a `visibility` that does not show every namespace, a run of a hidden job is NotFound as
    a missing one is, the walk neither shows nor passes through what it hides
    (`upstream.query.graph_index.run_walk`), and the answer says how much it met
    (`hiddenNodes`, `hiddenRelations`)."""
    _existing_run(conn, params, visibility)
    graph = graph_of(conn)
    visible = VisibleNodes.of(conn, graph, visibility)
    links: set[Link] = set()
    if params.direction in ("upstream", "both"):
        links |= _walk(graph, params, "upstream", visible)
    if params.direction in ("downstream", "both"):
        links |= _walk(graph, params, "downstream", visible)
    kept, truncated = _nearest(links, params.run_id, max_nodes)
    answer = _render(conn, params, kept, truncated)
    if visible is not None:
        answer["jobDependencies"] = [
            entry
            for entry in answer["jobDependencies"]
            if all(visibility.shows(entry[end]["namespace"]) for end in ("upstream", "downstream"))
        ]
        answer["hiddenNodes"] = visible.hidden_nodes
        answer["hiddenRelations"] = visible.hidden_relations
    return answer


def _existing_run(conn: Connection, params: RunLineageParams, visibility: Visibility) -> None:
    runs = t.runs
    found = conn.execute(
        sa.select(runs.c.id, runs.c.started_at, t.jobs.c.namespace)
        .join(t.jobs, t.jobs.c.id == runs.c.job_id)
        .where(runs.c.id == params.run_id)
    ).first()
    if found is None or not visibility.shows(found.namespace):
        raise NotFound(f"run {params.run_id} not found")
    if params.as_of is not None and (found.started_at is None or found.started_at > params.as_of):
        raise NotFound(f"run {params.run_id} had not started by {params.as_of.isoformat()} (asOf)")


# -- the walk ------------------------------------------------------------------------------


def _walk(
    graph: Graph, params: RunLineageParams, direction: Step, visible: VisibleNodes | None
) -> set[Link]:
    as_of = None if params.as_of is None else microseconds(params.as_of)
    found = run_links(graph, str(params.run_id), direction, params.levels, as_of, visible)
    return {
        Link(
            uuid.UUID(link.reader),
            uuid.UUID(link.dataset),
            None if link.writer is None else uuid.UUID(link.writer),
            link.level,
        )
        for link in found
    }


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
    names = dataset_names_by_id(conn, {link.dataset for link in links})
    since, named = _stated(graph_of(conn), links)
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


def _stated(
    graph: Graph, links: list[Link]
) -> tuple[
    dict[tuple[uuid.UUID, uuid.UUID, str], datetime],
    dict[tuple[uuid.UUID | None, uuid.UUID], str],
]:
    """From the runs' current relations in the index: when each run's read or write of a
    dataset appeared, by (run, dataset, access) — the earliest event that stated it, or for
    a streaming run the first since a snapshot last left it out (design §4.5) — and the
    version names producers gave, by (run, dataset): the writer's for its write, the
    reader's for its read."""
    runs = {link.reader for link in links} | {link.writer for link in links if link.writer}
    known = (graph.ids.runs.known(str(run)) for run in runs)
    numbers = np.array([n for n in known if n is not None], dtype=np.int64)
    rows, _ = graph.by_run.rows_of(numbers)
    r = graph.relations
    rows = rows[r["current"][rows]]
    run_texts, dataset_texts = graph.ids.runs.texts, graph.ids.datasets.texts
    version_texts = graph.ids.versions.texts
    since: dict[tuple[uuid.UUID, uuid.UUID, str], datetime] = {}
    named: dict[tuple[uuid.UUID | None, uuid.UUID], str] = {}
    columns = (r[c][rows].tolist() for c in ("run", "dataset", "write", "event_time", "version"))
    for run, dataset, write, at, version in zip(*columns, strict=True):
        run_id, dataset_id = uuid.UUID(run_texts[run]), uuid.UUID(dataset_texts[dataset])
        key = (run_id, dataset_id, "write" if write else "read")
        first = instant(at)
        if key not in since or first < since[key]:
            since[key] = first
        if version != NONE:
            named[(run_id, dataset_id)] = version_texts[version]
    return since, named
