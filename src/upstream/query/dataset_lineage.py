"""Dataset lineage, CDAP style (design §4.1, §4.2): the service behind
`GET /v3/namespaces/{ns}/datasets/{ds}/lineage`, the CLI's `lineage` and the web UI's graph.

Without a rollup the walk runs on the process's graph index
(`upstream.query.graph_index.dataset_walk`): every relation it shows comes back with its
level; with `rollup=workflow` the same walk rolls its relations up to workflows
(`walk_rolled_up`). Either way the caps are applied here, the same way, and
`upstream.query.lineage_render` writes the answer; docs/dataset-lineage.md says what each
direction follows. `rollup=jobs` is the answer without a rollup with its temporary datasets
replaced by job → job links (`upstream.query.job_links`).
"""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.keys import entity_key
from upstream.query.answers import LineageAnswer
from upstream.query.graph_index.dataset_walk import (
    RolledUpRelations,
    ShownRelation,
    walk_relations,
    walk_rolled_up,
)
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.hidden import hidden_from
from upstream.query.history_hint import latest_run_outside
from upstream.query.job_links import through_temporaries
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_render import Omitted, RolledUp, render
from upstream.query.lookup import existing_dataset
from upstream.query.owners import with_owners

#: A node of an answer: ("dataset" | "program", id as text).
_Node = tuple[str, str]


def dataset_lineage(
    conn: Connection,
    namespace: str,
    name: str,
    params: LineageParams,
    *,
    max_nodes: int,
    max_relations: int,
    runs_in_order: bool = True,
    visibility: Visibility = EVERYTHING,
    visible: VisibleNodes | None = None,
) -> LineageAnswer:
    """The lineage of one dataset in the response shape of design §4.2; raises NotFound
    for an unknown namespace or dataset. At most `max_nodes` datasets and programs and
    `max_relations` relations (before collapsing) are returned; a larger result is cut
    (deepest levels first) and says `"truncated": true` with how many of the nodes and
    relations the walk found were left out (`omittedNodes`, `omittedRelations`; the walk
    stops once a cap is passed, so deeper levels are not counted). Without `runs_in_order`
    a relation's runs are listed by id rather than newest first, for a caller that only
    counts them. An answer with no relation of a dataset whose runs all lie outside the
    window says when the latest of them started (`latestRunOutsideWindow`,
    `upstream.query.history_hint`). With a `visibility` that does not show every namespace,
    the walk neither shows nor passes through what it hides, and says how much it hid
    (`hiddenNodes`, `hiddenRelations`); a hidden dataset asked for is NotFound, as a
    missing one is. `visible`, when given, is the reader's view of the index that several
    walks of one answer share, so what they stopped at is counted once (the caller reads
    the counts from it)."""
    seed_ref = existing_dataset(conn, namespace, name, visibility)
    seed = seed_ref.id
    rolled_up: RolledUp | None = None
    rolled: RolledUpRelations | None = None
    shared = visible
    graph = graph_of(conn)
    number = graph.ids.datasets.known(str(seed))
    if params.rollup != "workflow":
        visible = visible or VisibleNodes.of(conn, graph, visibility)
        found = (
            {}
            if number is None
            else walk_relations(
                graph, number, params.direction, params.levels, params.window, visible
            )
        )
    else:
        rolled = (
            None
            if number is None
            else walk_rolled_up(graph, number, params.direction, params.levels, params.window)
        )
        found = {} if rolled is None else rolled.found
    every = _nodes(found, str(seed))
    walked = params.levels
    if len(found) > max_relations or len(every) > max_nodes:
        found, walked = _whole_levels(found, str(seed), max_nodes, max_relations)
        every = _nodes(found, str(seed))
    if rolled is not None:
        rolled_up = RolledUp(_met(rolled.workflows, walked), _met(rolled.temporary, walked))
    elif params.rollup == "workflow":
        rolled_up = RolledUp(set(), set())
    relations, omitted = _cut(found, every, str(seed), max_nodes, max_relations)
    answer = render(conn, params, seed, relations, omitted, rolled_up, runs_in_order=runs_in_order)
    if params.rollup == "jobs":
        seed_key = entity_key("dataset", seed_ref.namespace, seed_ref.name)
        answer = through_temporaries(conn, answer, keep={seed_key})
    if "owners" in params.include:
        answer = with_owners(conn, answer)
    if rolled_up is not None and not visibility.everything:
        answer = hidden_from(
            answer, visibility, entity_key("dataset", seed_ref.namespace, seed_ref.name)
        )
    elif visible is not None and shared is None:
        answer = {
            **answer,
            "hiddenNodes": visible.hidden_nodes,
            "hiddenRelations": visible.hidden_relations,
        }
    if not answer["relations"] and (
        latest := latest_run_outside(conn, seed, params.window, visibility)
    ):
        answer["latestRunOutsideWindow"] = latest.isoformat()
    return answer


def _nodes(relations: dict[ShownRelation, int] | list[ShownRelation], seed: str) -> set[_Node]:
    """The datasets and programs of `relations`, and the queried dataset."""
    nodes: set[_Node] = {("dataset", seed)}
    nodes.update(("dataset", r.dataset_id) for r in relations)
    nodes.update(("program", r.job_id) for r in relations)
    return nodes


def _whole_levels(
    found: dict[ShownRelation, int], seed: str, max_nodes: int, max_relations: int
) -> tuple[dict[ShownRelation, int], int]:
    """`found` up to the level that passes a cap, as a walk level by level stops: a level is
    added whole, and none after the one that passed a cap. Also that last level: what a
    rolled-up walk met after it, it never met."""
    by_level = _by_level(found)
    kept: dict[ShownRelation, int] = {}
    nodes: set[_Node] = {("dataset", seed)}
    last = max(by_level, default=0)
    for level in sorted(by_level):
        if len(nodes) > max_nodes or len(kept) > max_relations:
            break
        last = level
        for relation in by_level[level]:
            kept[relation] = level
            nodes.add(("dataset", relation.dataset_id))
            nodes.add(("program", relation.job_id))
    return kept, last


def _met(levels: dict[str, int], walked: int) -> set[str]:
    """The ids met at a level a walk cut after level `walked` reached."""
    return {key for key, level in levels.items() if level <= walked}


def _cut(
    found: dict[ShownRelation, int],
    every: set[_Node],
    seed: str,
    max_nodes: int,
    max_relations: int,
) -> tuple[list[ShownRelation], Omitted | None]:
    """The relations found (naming the nodes `every`), cut to `max_nodes` nodes and
    `max_relations` relations: nearer levels first, then a stable order, so a cut result
    is the same on every call. Also what was left out of what the walk found (None when
    nothing was). An answer within both caps is kept whole, and its order is the
    rendering's to give."""
    if len(every) <= max_nodes:
        if len(found) <= max_relations:
            return list(found), None
        return _first_relations(found, every, seed, max_relations)
    ordered = [r for r, _ in sorted(found.items(), key=lambda f: (f[1], f[0].sort_key))]
    nodes: set[_Node] = {("dataset", seed)}
    kept: list[ShownRelation] = []
    for relation in ordered:
        if len(kept) >= max_relations:
            break
        dataset, program = ("dataset", relation.dataset_id), ("program", relation.job_id)
        if len(nodes) + (dataset not in nodes) + (program not in nodes) > max_nodes:
            continue
        nodes.add(dataset)
        nodes.add(program)
        kept.append(relation)
    if len(kept) == len(ordered):
        return kept, None
    return kept, Omitted(len(every - nodes), len(ordered) - len(kept))


def _first_relations(
    found: dict[ShownRelation, int], every: set[_Node], seed: str, max_relations: int
) -> tuple[list[ShownRelation], Omitted]:
    """`_cut` when only `max_relations` cuts: the nearest levels whole, and of the level
    the cap falls in, the first relations in the stable order. Only that level is sorted
    (a cut `both` walk finds tens of thousands of relations)."""
    by_level = _by_level(found)
    kept: list[ShownRelation] = []
    for level in sorted(by_level):
        room = max_relations - len(kept)
        if len(by_level[level]) > room:
            kept += sorted(by_level[level], key=lambda r: r.sort_key)[:room]
            break
        kept += by_level[level]
    return kept, Omitted(len(every - _nodes(kept, seed)), len(found) - len(kept))


def _by_level(found: dict[ShownRelation, int]) -> dict[int, list[ShownRelation]]:
    """The relations found at each level."""
    by_level: dict[int, list[ShownRelation]] = defaultdict(list)
    for relation, level in found.items():
        by_level[level].append(relation)
    return by_level
