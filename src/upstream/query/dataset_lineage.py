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

from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.keys import entity_key
from upstream.query.answers import LineageAnswer
from upstream.query.graph_index.dataset_walk import (
    FoundRelations,
    RolledUpRelations,
    walk_relations,
    walk_rolled_up,
)
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.hidden import hidden_from
from upstream.query.history_hint import latest_run_outside
from upstream.query.job_links import through_temporaries
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_render import Omitted, RolledUp, render
from upstream.query.lookup import existing_dataset
from upstream.query.owners import with_owners
from upstream.query.relation_table import RelationTable, ranked, text_ranks

Ints = npt.NDArray[np.int64]


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
    written: bool = False,
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
    the counts from it). With `written`, for a caller that only sends the answer, its
    relations, datasets and programs may be their JSON text (`lineage_render.render`)."""
    seed_ref = existing_dataset(conn, namespace, name, visibility)
    seed = seed_ref.id
    shared = visible
    graph = graph_of(conn)
    number = graph.ids.datasets.known(str(seed))
    if params.rollup != "workflow":
        visible = visible or VisibleNodes.of(conn, graph, visibility)
    shown, omitted, rolled_up = shown_walk(
        graph, number, params, visible, (max_nodes, max_relations)
    )
    table = RelationTable.of_rows(graph, shown.rows)
    # The steps after the rendering that read the relations need them as entries.
    reread = params.rollup == "jobs" or (rolled_up is not None and not visibility.everything)
    answer = render(
        conn,
        params,
        seed,
        table,
        omitted,
        rolled_up,
        runs_in_order=runs_in_order,
        written=written and not reread,
        nodes_written=written and not reread and "owners" not in params.include,
    )
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


class ShownWalk(NamedTuple):
    """What a walk shows once cut to the caps: its relations, what the cut left out (None
    when nothing), and what a rolled-up walk met within the levels shown (None without a
    rollup)."""

    shown: FoundRelations
    omitted: Omitted | None
    rolled_up: RolledUp | None


def shown_walk(
    graph: Graph,
    number: int | None,
    params: LineageParams,
    visible: VisibleNodes | None,
    caps: tuple[int, int],
) -> ShownWalk:
    """The walk of `params` from dataset `number` (None: one the index does not hold, which
    shows nothing), cut to `caps` (nodes, relations) as `dataset_lineage` says; `visible`
    is the reader's view for a walk without a rollup."""
    max_nodes, max_relations = caps
    rolled: RolledUpRelations | None = None
    found = _NOTHING
    if params.rollup != "workflow":
        if number is not None:
            found = walk_relations(
                graph, number, params.direction, params.levels, params.window, visible
            )
    elif number is not None:
        rolled = walk_rolled_up(graph, number, params.direction, params.levels, params.window)
        found = rolled.found
    start = NONE if number is None else number
    walked = params.levels
    nodes = _node_count(found, start)
    if len(found) > max_relations or nodes > max_nodes:
        found, walked = _whole_levels(found, start, max_nodes, max_relations)
        nodes = _node_count(found, start)
    rolled_up: RolledUp | None = None
    if rolled is not None:
        rolled_up = RolledUp(_met(rolled.workflows, walked), _met(rolled.temporary, walked))
    elif params.rollup == "workflow":
        rolled_up = RolledUp(set(), set())
    shown, omitted = _cut(graph, found, start, nodes, max_nodes, max_relations)
    return ShownWalk(shown, omitted, rolled_up)


_NOTHING = FoundRelations(np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64))


def _node_count(found: FoundRelations, seed: int) -> int:
    """How many datasets and programs `found` names, with the queried dataset (`seed`)."""
    datasets = _present(found.rows[:, 0])
    seed_apart = int(seed >= len(datasets) - 1 or not datasets[seed])
    return (
        int(np.count_nonzero(datasets))
        + seed_apart
        + int(np.count_nonzero(_present(found.rows[:, 1])))
    )


def _present(values: Ints) -> npt.NDArray[np.bool_]:
    """Flags of the values `values` holds, by value, NONE's at the last place: what their
    distinct values tell, in linear time, where `distinct` sorts a walk's thousands."""
    seen = np.zeros(int(values.max(initial=0)) + 2, dtype=np.bool_)
    seen[values] = True
    return seen


def _whole_levels(
    found: FoundRelations, seed: int, max_nodes: int, max_relations: int
) -> tuple[FoundRelations, int]:
    """`found` up to the level that passes a cap, as a walk level by level stops: a level is
    added whole, and none after the one that passed a cap. Also that last level: what a
    rolled-up walk met after it, it never met."""
    levels = np.unique(found.levels)
    if not len(levels):
        return found, 0
    relations = np.searchsorted(np.sort(found.levels), levels, side="right")
    nodes = 1 + _first_met(found, 0, levels, seed) + _first_met(found, 1, levels, NONE)
    # A level is added when, before it, the answer was within both caps.
    within = (np.concatenate([[1], nodes[:-1]]) <= max_nodes) & (
        np.concatenate([[0], relations[:-1]]) <= max_relations
    )
    added = len(levels) if within.all() else int(np.argmin(within))
    if not added:
        return found.where(np.zeros(len(found), dtype=np.bool_)), int(levels[-1])
    last = int(levels[added - 1])
    return found.where(found.levels <= last), last


def _first_met(found: FoundRelations, column: int, levels: Ints, apart: int) -> Ints:
    """How many nodes of `column` (0: datasets, 1: jobs) other than `apart` the relations
    up to each of `levels` name."""
    order = np.argsort(found.levels, kind="stable")
    nodes = found.rows[order, column]
    distinct, first = np.unique(nodes, return_index=True)
    least = np.sort(found.levels[order][first[distinct != apart]])
    counted: Ints = np.searchsorted(least, levels, side="right")
    return counted


def _met(levels: dict[str, int], walked: int) -> set[str]:
    """The ids met at a level a walk cut after level `walked` reached."""
    return {key for key, level in levels.items() if level <= walked}


def _cut(
    graph: Graph,
    found: FoundRelations,
    seed: int,
    every: int,
    max_nodes: int,
    max_relations: int,
) -> tuple[FoundRelations, Omitted | None]:
    """The relations found, cut to `max_nodes` nodes (datasets, with the queried dataset
    `seed`, and programs; `every`: how many `found` names) and `max_relations` relations:
    nearer levels first, then a stable order, so a cut result is the same on every call.
    Also what was left out of what the walk found (None when nothing was). An answer
    within both caps is kept whole, and its order is the rendering's to give."""
    if every <= max_nodes:
        if len(found) <= max_relations:
            return found, None
        return _first_relations(graph, found, seed, max_relations, every)
    ordered = _stable_order(graph, found)
    datasets, jobs = found.rows[ordered, 0].tolist(), found.rows[ordered, 1].tolist()
    shown_datasets: set[int] = {seed}
    shown_jobs: set[int] = set()
    kept: list[int] = []
    for position, dataset, job in zip(ordered.tolist(), datasets, jobs, strict=True):
        if len(kept) >= max_relations:
            break
        added = (dataset not in shown_datasets) + (job not in shown_jobs)
        if len(shown_datasets) + len(shown_jobs) + added > max_nodes:
            continue
        shown_datasets.add(dataset)
        shown_jobs.add(job)
        kept.append(position)
    if len(kept) == len(found):
        return found, None
    named = len(shown_datasets) + len(shown_jobs)
    return found.where(np.array(kept, dtype=np.int64)), Omitted(
        every - named, len(found) - len(kept)
    )


def _first_relations(
    graph: Graph, found: FoundRelations, seed: int, max_relations: int, every: int
) -> tuple[FoundRelations, Omitted]:
    """`_cut` when only `max_relations` cuts: the nearest levels whole, and of the level
    the cap falls in, the first relations in the stable order. Only that level is sorted
    (a cut `both` walk finds tens of thousands of relations)."""
    levels, counts = np.unique(found.levels, return_counts=True)
    before = np.concatenate([[0], np.cumsum(counts)])
    cut_at = int(np.flatnonzero(before[1:] > max_relations)[0])
    level = levels[cut_at]
    room = max_relations - int(before[cut_at])
    at_level = np.flatnonzero(found.levels == level)
    first = at_level[_stable_order(graph, found.where(at_level))[:room]]
    kept = np.concatenate([np.flatnonzero(found.levels < level), first])
    shown = found.where(kept)
    return shown, Omitted(every - _node_count(shown, seed), len(found) - len(shown))


def _stable_order(graph: Graph, found: FoundRelations) -> Ints:
    """The positions of `found` by level, then by the ids' text (dataset, job, run with a
    declared relation first, access, component): the same order on every call."""
    table = RelationTable.of_rows(graph, found.rows)
    keys = [
        text_ranks(table.components.texts)[table.component],
        table.write,
        ranked(table.run, text_ranks(table.runs.texts)),
        text_ranks(table.jobs.texts)[table.job],
        text_ranks(table.datasets.texts)[table.dataset],
        found.levels,
    ]
    order: Ints = np.lexsort(keys)
    return order
