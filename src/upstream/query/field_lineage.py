"""Field lineage from recorded operations (design §4.3, seed 000): how a field was made, which
fields have lineage, and the operations a field went through.

A path is the operations a destination field depends on, trimmed from one stored operation
set and renumbered: a field input's `origin` is the position, in the path's own `operations`,
of the operation that output it. Identical trimmed paths — from different runs, operation sets
or jobs — are one path listing every run in the window, newest first.

A reader limited to some namespaces finds a dataset it may not see missing, and sees only
the paths of jobs and datasets it may see (`query.recorded_paths`), told how many hidden
ones they met (`hiddenNodes`, `hiddenRelations`); a field counts as having lineage only by
an edge to a field it may see.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidParameter, Problem, shown
from upstream.model.field_operations import SourceRef, Step, step_json
from upstream.model.identity import DatasetRef
from upstream.model.window import Window
from upstream.query.answers import (
    FieldOperationsAnswer,
    FieldPathsAnswer,
    FieldsAnswer,
    FieldWithLineage,
)
from upstream.query.field_operation_sets import (
    Recorded,
    RunOf,
    current_fields,
    dataset_names,
    operation_sets,
    reading_destinations,
    require_field,
)
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import FieldLineageQuery, LineageQuery
from upstream.query.lookup import existing_dataset
from upstream.query.recorded_paths import RecordedPaths

#: Which sides of a field an answer shows: what it came from, what it went to, or both. Not a
#: `model.direction.Direction`: a field's sides are named as CDAP names them.
Sides = Literal["incoming", "outgoing", "both"]
SIDES: tuple[Sides, ...] = ("incoming", "outgoing", "both")

__all__ = [
    "FieldQuery",
    "field_operations",
    "field_paths",
    "fields_with_lineage",
    "render_path",
]


@dataclass(frozen=True)
class FieldQuery:
    """The window, depth and direction of a field-lineage query."""

    window: Window
    levels: int = 1
    direction: Sides = "both"

    @classmethod
    def parse(
        cls, query: FieldLineageQuery, *, max_levels: int, now: datetime | None = None
    ) -> FieldQuery:
        """Times and levels as the dataset lineage reads them (design §4.1), `levels`
        defaulting to 1 (CDAP's summaries); InvalidParameter names each bad parameter."""
        problems: list[Problem] = []
        base: LineageParams | None = None
        levels = "1" if query.levels is None else query.levels
        asked = LineageQuery(start=query.start, end=query.end, levels=levels, as_of=query.as_of)
        try:
            base = LineageParams.parse(asked, max_levels=max_levels, now=now)
        except InvalidParameter as exc:
            problems.extend(exc.problems)
        direction = query.direction
        if direction is not None and direction not in SIDES:
            problems.append(
                Problem("direction", f"{shown(direction)} is not one of incoming, outgoing, both")
            )
        if problems or base is None:
            raise InvalidParameter(problems)
        chosen: Sides = "both"
        for known in SIDES:
            if direction == known:
                chosen = known
        return cls(base.window, base.levels, chosen)


def render_path(steps: Sequence[Step]) -> list[dict[str, Any]]:
    """Operations of a path as JSON, field origins renumbered to positions in the path."""
    positions = {step.index: position for position, step in enumerate(steps)}
    return [step_json(step, positions) for step in steps]


@dataclass
class _Group:
    """Identical trimmed paths, with the runs that recorded them."""

    operations: list[dict[str, Any]]
    runs: dict[uuid.UUID, RunOf] = field(default_factory=dict)

    def newest_first(self) -> list[RunOf]:
        return sorted(self.runs.values(), key=lambda r: r.recency, reverse=True)


def _grouped(pairs: Iterable[tuple[Sequence[Step], RunOf]], **extra: Any) -> dict[str, _Group]:
    groups: dict[str, _Group] = {}
    for steps, run in pairs:
        if not steps:
            continue
        rendered = render_path(steps)
        key = json.dumps([extra, rendered], sort_keys=True, default=str)
        groups.setdefault(key, _Group(rendered)).runs[run.run_id] = run
    return groups


def _by_recency(groups: Iterable[_Group]) -> list[_Group]:
    return sorted(
        groups,
        key=lambda g: (g.newest_first()[0].recency, json.dumps(g.operations, sort_keys=True)),
        reverse=True,
    )


def field_paths(
    conn: Connection,
    namespace: str,
    name: str,
    field_name: str,
    query: FieldQuery,
    visibility: Visibility = EVERYTHING,
) -> FieldPathsAnswer:
    """`GET …/datasets/{ds}/fields/{field}/lineage`: the ways the field was made in the
    window, of those `visibility` shows. NotFound for an unknown dataset, or a field it
    does not have (a dropped one included), and for a dataset `visibility` does not show."""
    dataset = existing_dataset(conn, namespace, name, visibility)
    recorded = operation_sets(conn, [dataset.id], query.window)
    paths = RecordedPaths(visibility, dataset)
    trimmed = (
        (recorded.sets[link.operation_set].trim_to_field(field_name), link.run)
        for link in recorded.links
    )
    groups = _grouped(
        (steps, run) for steps, run in trimmed if steps and paths.shows(dataset, steps, run)
    )
    if not groups:
        require_field(conn, dataset, field_name)
    answer: dict[str, Any] = {
        "fieldName": field_name,
        "startTimeInSeconds": int(query.window.start.timestamp()),
        "endTimeInSeconds": int(query.window.end.timestamp()),
        "paths": [
            {"operations": g.operations, "runs": [r.as_json() for r in g.newest_first()]}
            for g in _by_recency(groups.values())
        ],
    }
    if paths.filters:
        answer["hiddenNodes"] = paths.hidden_nodes
        answer["hiddenRelations"] = paths.hidden_relations
    return cast(FieldPathsAnswer, answer)


def fields_with_lineage(
    conn: Connection,
    namespace: str,
    name: str,
    query: FieldQuery,
    *,
    prefix: str | None = None,
    include_current: bool = False,
    visibility: Visibility = EVERYTHING,
) -> FieldsAnswer:
    """`GET …/datasets/{ds}/lineage/fields`: the dataset's fields with lineage in the window
    — an end of a field edge of any kind (recorded operations, whose edges cover exactly the
    destination's fields, the lineage facet, columnLineage) — sorted; with `include_current`,
    the current fields too, each saying whether it has lineage. `prefix` filters
    case-insensitively. For `visibility`, only an edge whose other end it shows counts."""
    dataset = existing_dataset(conn, namespace, name, visibility)
    with_lineage = _edge_fields(conn, dataset, query.window, visibility)
    names = set(with_lineage)
    if include_current:
        names |= current_fields(conn, dataset)
    wanted = (prefix or "").casefold()
    chosen = sorted(n for n in names if n.casefold().startswith(wanted))
    if not include_current:
        return chosen
    fields: list[FieldWithLineage] = [{"name": n, "lineage": n in with_lineage} for n in chosen]
    return fields


def _edge_fields(
    conn: Connection, dataset: DatasetRef, window: Window, visibility: Visibility
) -> set[str]:
    """Fields of `dataset` at either end of a field edge stored in the window whose other
    end `visibility` shows, found on the graph index."""
    graph = graph_of(conn)
    edges = FieldEdges(graph, window, VisibleNodes.of(conn, graph, visibility))
    return {name for _, name in edges.keys(edges.ends_on(edges.datasets([dataset.id])))}


def field_operations(
    conn: Connection,
    namespace: str,
    name: str,
    field_name: str,
    query: FieldQuery,
    visibility: Visibility = EVERYTHING,
) -> FieldOperationsAnswer:
    """`GET …/lineage/fields/{field}/operations`: per distinct operation set, the operations
    that made the field (incoming: trimmed to what it depends on) or that it went through in
    the datasets it reached (outgoing: from the reading operation on), with the jobs that
    recorded them and their latest run; of those `visibility` shows (`RecordedPaths`)."""
    dataset = existing_dataset(conn, namespace, name, visibility)
    require_field(conn, dataset, field_name)
    paths = RecordedPaths(visibility, dataset)
    result: dict[str, Any] = {}
    if query.direction in ("incoming", "both"):
        recorded = operation_sets(conn, [dataset.id], query.window)
        result["incoming"] = _operation_groups(
            conn,
            recorded.links,
            lambda link: recorded.sets[link.operation_set].trim_to_field(field_name),
            paths,
        )
    if query.direction in ("outgoing", "both"):
        readers = reading_destinations(conn, dataset, query.window)
        recorded = operation_sets(conn, readers, query.window)
        source = SourceRef(dataset.namespace, dataset.name)
        result["outgoing"] = _operation_groups(
            conn,
            recorded.links,
            lambda link: recorded.sets[link.operation_set].trim_from_source(source, field_name),
            paths,
        )
    if paths.filters:
        result["hiddenNodes"] = paths.hidden_nodes
        result["hiddenRelations"] = paths.hidden_relations
    return cast(FieldOperationsAnswer, result)


def _operation_groups(
    conn: Connection, links: Sequence[Recorded], trim: Any, paths: RecordedPaths
) -> list[Any]:
    names = dataset_names(conn, {link.destination for link in links})
    groups: dict[str, tuple[DatasetRef, _Group]] = {}
    for link in links:
        destination = names[link.destination]
        steps = trim(link)
        if not steps or not paths.shows(destination, steps, link.run):
            continue
        for key, group in _grouped(
            [(steps, link.run)], dataset=(destination.namespace, destination.name)
        ).items():
            groups.setdefault(key, (destination, group))[1].runs.update(group.runs)
    ordered = sorted(
        groups.values(),
        key=lambda pair: (pair[1].newest_first()[0].recency, pair[0]),
        reverse=True,
    )
    return [
        {
            "dataset": {"namespace": destination.namespace, "name": destination.name},
            "operations": group.operations,
            "programs": _programs(group.newest_first()),
        }
        for destination, group in ordered
    ]


def _programs(runs: Sequence[RunOf]) -> list[dict[str, Any]]:
    """The jobs that recorded a path, each with its latest run (runs come newest first)."""
    latest: dict[tuple[str, str], RunOf] = {}
    for run in runs:
        latest.setdefault((run.job_namespace, run.job_name), run)
    return [
        {
            "job": {"namespace": ns, "name": job},
            "lastRunId": str(run.run_id),
            "lastRunStartedAt": run.as_json()["startedAt"],
        }
        for (ns, job), run in latest.items()
    ]
