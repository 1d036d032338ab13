"""What changed in a dataset's lineage between two windows or two times (design §4.5): the
service behind `GET /v3/namespaces/{ns}/datasets/{ds}/lineage/diff`.

Both sides are what the dataset-lineage service shows with the same levels, direction,
collapse and rollup, caps included. Runs are what differ between two windows, so a relation's
identity is its dataset, program, accesses and components with its runs collapsed: a relation
on one side and not the other is `added` or `removed`, and a kept relation says how many runs
it had on each side. Field edges between each side's datasets, and the datasets and programs
themselves, are compared the same way. Without a rollup the sides come from their walks' rows
(`query.diff_sides`: neither side's answer is written, and runs are counted, never named); a
rollup rewrites an answer after its walk, so with one the sides are the two answers.

A reader limited to some namespaces diffs two filtered answers: each side is walked as that
reader's lineage answer is, and says what it hid (`hiddenNodes`, `hiddenRelations` in `from`
and `to`); field edges are read between the datasets the sides show only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import orjson
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidParameter, Problem, shown
from upstream.model.identity import DatasetRef
from upstream.model.json_text import Written
from upstream.model.timeexpr import EPOCH
from upstream.query.answers import EntityId, LineageDiffAnswer
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.diff_sides import DiffSide, RelationId, walked_sides
from upstream.query.field_edges import FieldEdge, Side, one_sided_edges
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import DiffQuery, LineageQuery
from upstream.query.lookup import existing_dataset

#: How a window is written in `from` and `to`: START..END, each a time expression.
WINDOW_SEPARATOR = ".."
DEFAULT_TO = "now-7d..now"
DEFAULT_AGAINST = timedelta(days=7)


@dataclass(frozen=True)
class DiffParams:
    """The two sides of a diff: `before` (from, or against) and `after` (to, or asOf)."""

    before: LineageParams
    after: LineageParams

    @classmethod
    def parse(cls, query: DiffQuery, *, max_levels: int, now: datetime | None = None) -> DiffParams:
        """Two windows, `from` and `to` (START..END): `to` defaults to the last seven days
        and `from` to the window of the same length just before `to`, so no parameter at all
        asks what changed since last week. Or two times, `asOf` (default now) and `against`
        (default seven days before `asOf`), each with the window `start`..`end` taken
        relative to it (default the week before it). InvalidParameter names each bad parameter."""
        present = now or datetime.now(UTC)
        walk = LineageQuery(
            levels=query.levels,
            direction=query.direction,
            collapse=query.collapse,
            rollup=query.rollup,
        )
        parse = _Sides(walk, max_levels, present, [])
        problems = parse.problems
        if query.include:
            problems.append(Problem("include", "applies to lineage, not to what changed in it"))
        against = query.against
        if query.as_of is None and against is None:
            for name, value in (("start", query.start), ("end", query.end)):
                if value is not None:
                    problems.append(Problem(name, "applies to asOf and against; use from and to"))
            to_window = DEFAULT_TO if query.to_window is None else query.to_window
            after = parse.side("to", window=to_window)
            before = None
            if after is not None:
                before = parse.side("from", window=query.from_window, following=after)
        elif query.from_window is not None or query.to_window is not None:
            problems.append(Problem("from", "give either from and to, or asOf and against"))
            before = after = None
        else:
            moment = "now" if query.as_of is None else query.as_of
            after = parse.side("asOf", start=query.start, end=query.end, as_of=moment)
            if after is not None and after.as_of is not None:
                earlier = after.as_of - DEFAULT_AGAINST
                if against is None:
                    against = str(max(earlier, EPOCH).timestamp())
            before = parse.side("against", start=query.start, end=query.end, as_of=against)
        if problems or before is None or after is None:
            raise InvalidParameter(problems)
        return cls(before, after)


@dataclass
class _Sides:
    """Parses each side of a diff with the walk's shared parameters, collecting problems."""

    walk: LineageQuery
    max_levels: int
    now: datetime
    problems: list[Problem]

    def side(
        self,
        name: str,
        *,
        window: str | None = None,
        start: str | None = None,
        end: str | None = None,
        as_of: str | None = None,
        following: LineageParams | None = None,
    ) -> LineageParams | None:
        """One side's dataset-lineage parameters; problems of its window or time are named
        by the parameter that holds them (`from`, `to`, `asOf`, `against`). Without a window,
        the window of the same length just before `following`'s."""
        if window is None and following is not None:
            length = following.end - following.start
            start = str(max(following.start - length, EPOCH).timestamp())
            end = str(following.start.timestamp())
        elif window is not None:
            if WINDOW_SEPARATOR not in window:
                self.problems.append(Problem(name, f"{shown(window)} is not START..END"))
                return None
            start, end = (part.strip() for part in window.split(WINDOW_SEPARATOR, 1))
        asked = replace(self.walk, start=start, end=end, as_of=as_of)
        try:
            return LineageParams.parse(asked, max_levels=self.max_levels, now=self.now)
        except InvalidParameter as exc:
            for problem in exc.problems:
                own = problem.path in ("start", "end", "asOf")
                located = Problem(name, f"{problem.path}: {problem.message}") if own else problem
                if located not in self.problems:
                    self.problems.append(located)
            return None


def lineage_diff(
    conn: Connection,
    namespace: str,
    name: str,
    params: DiffParams,
    *,
    max_nodes: int,
    max_relations: int,
    visibility: Visibility = EVERYTHING,
    written: bool = False,
) -> LineageDiffAnswer:
    """`added`, `removed` and `kept` between the two sides; NotFound for an unknown dataset,
    or one `visibility` does not show. Each side is capped at `max_nodes` and `max_relations`
    like a lineage answer; a cut side makes the diff say `"truncated": true`. Without a
    rollup the sides are compared from their walks' rows (`diff_sides`); a rollup's answer
    is rewritten after its walk (workflows, job links), so its sides are its answers. With
    `written`, for a caller that only sends the answer, its parts are their JSON text."""
    caps = (max_nodes, max_relations)
    sides = (params.before, params.after)
    if params.after.rollup is None:
        seed = existing_dataset(conn, namespace, name, visibility).id
        before, after = walked_sides(conn, seed, sides, caps, visibility)
    else:
        before, after = (_answered(conn, namespace, name, p, caps, visibility) for p in sides)
    data = {**before.data, **after.data}
    ids = {**before.ids, **after.ids}
    one_sided = one_sided_edges(
        conn,
        (
            Side(before.ids.values(), params.before.window),
            Side(after.ids.values(), params.after.window),
        ),
    )
    keys = {ids[key]: (key, entry["entityId"]) for key, entry in data.items()}
    before_edges, after_edges = (_Edges.of(keys, e) for e in one_sided)
    # Each side's relations sorted once, for what only it has and for what both keep.
    after_keys = sorted(after.runs)
    response: dict[str, Any] = {
        "from": _described(params.before, before),
        "to": _described(params.after, after),
        "added": _only_in(after, after_keys, before, after_edges),
        "removed": _only_in(before, sorted(before.runs), after, before_edges),
        "kept": [
            _shown(key, {"from": before.runs[key], "to": after.runs[key]})
            for key in after_keys
            if key in before.runs
        ],
        "data": dict(sorted(data.items())),
        "programs": dict(sorted({**before.programs, **after.programs}.items())),
    }
    if before.truncated or after.truncated:
        response["truncated"] = True
    if written:
        # Strings and small integers only, which orjson writes as `json` does: the answer's
        # text need not be searched for the floats they write differently (`Written`).
        for part in _WRITTEN:
            response[part] = Written(orjson.dumps(response[part]), len(response[part]))
    return cast(LineageDiffAnswer, response)


#: The parts of a diff that hold its thousands of relations, field edges and nodes.
_WRITTEN = ("added", "removed", "kept", "data", "programs")


FieldEdgeKey = tuple[str, str, str, str]
#: The datasets of both sides by id (as text): the answers' key for each and its entity id.
DatasetKeys = dict[str, tuple[str, EntityId]]


def _answered(
    conn: Connection,
    namespace: str,
    name: str,
    params: LineageParams,
    caps: tuple[int, int],
    visibility: Visibility,
) -> DiffSide:
    """One side read from its lineage answer with its runs collapsed: runs are what differ
    between the sides, so a relation's identity leaves them out (its runs are counted, so
    their order, newest first, is not read)."""
    runs_collapsed = replace(params, collapse=params.collapse | {"run"})
    body = dataset_lineage(
        conn,
        namespace,
        name,
        runs_collapsed,
        max_nodes=caps[0],
        max_relations=caps[1],
        runs_in_order=False,
        visibility=visibility,
    )
    runs = {
        (r["data"], r["program"], tuple(r["accesses"]), tuple(r["components"])): len(r["runs"])
        for r in body["relations"]
    }
    ids = {
        key: str(DatasetRef(entry["entityId"]["namespace"], entry["entityId"]["name"]).id)
        for key, entry in body["data"].items()
    }
    hidden: dict[str, int] = {h: body[h] for h in ("hiddenNodes", "hiddenRelations") if h in body}
    return DiffSide(runs, body["data"], ids, body["programs"], bool(body.get("truncated")), hidden)


@dataclass(frozen=True)
class _Edges:
    """The field edges one side has and the other lacks, by the keys of their ends (the
    sides compare their edges by the index's numbers), and each end's entity id."""

    keys: DatasetKeys
    found: dict[FieldEdgeKey, FieldEdge]

    @classmethod
    def of(cls, keys: DatasetKeys, edges: list[FieldEdge]) -> _Edges:
        found = {
            (keys[e.source][0], e.source_field, keys[e.target][0], e.target_field): e for e in edges
        }
        return cls(keys, found)

    def shown(self) -> list[dict[str, Any]]:
        """The edges as the answer shows them, in the order of their keys: each end's
        dataset and field."""
        return [self._shown(self.found[key]) for key in sorted(self.found)]

    def _shown(self, edge: FieldEdge) -> dict[str, Any]:
        source, target = self.keys[edge.source][1], self.keys[edge.target][1]
        return {
            "source": {
                "namespace": source["namespace"],
                "name": source["name"],
                "field": edge.source_field,
            },
            "target": {
                "namespace": target["namespace"],
                "name": target["name"],
                "field": edge.target_field,
            },
        }


def _shown(key: RelationId, runs: Any) -> dict[str, Any]:
    """The relation `key` as a diff shows it, with `runs` (a count, or one per side)."""
    data, program, accesses, components = key
    return {
        "data": data,
        "program": program,
        "accesses": list(accesses),
        "components": list(components),
        "runs": runs,
    }


def _only_in(
    side: DiffSide, ordered: list[RelationId], other: DiffSide, edges: _Edges
) -> dict[str, Any]:
    """What `side` has and `other` lacks; `ordered`: `side`'s relations, sorted."""
    return {
        "relations": [_shown(key, side.runs[key]) for key in ordered if key not in other.runs],
        "fieldEdges": edges.shown(),
        "data": sorted(side.data.keys() - other.data.keys()),
        "programs": sorted(side.programs.keys() - other.programs.keys()),
    }


def _described(params: LineageParams, side: DiffSide) -> dict[str, Any]:
    described: dict[str, Any] = {
        "start": int(params.start.timestamp()),
        "end": int(params.end.timestamp()),
    }
    if params.as_of is not None:
        described["asOf"] = params.as_of.isoformat()
    return {**described, **side.hidden}
