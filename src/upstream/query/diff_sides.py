"""The two sides of a lineage diff read from their walks' rows (design §4.5, §6), for a diff
without a rollup: what the comparison needs of each side, without writing either side's
answer.

A side's relations are compared with their runs collapsed, so each side's rows (dataset, job,
run, access, component numbers) are grouped on integers and only each group's run count is
kept; the runs are never named. The datasets and jobs of both sides are named once, for the
two together.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from upstream.model.access import Visibility
from upstream.model.keys import entity_key
from upstream.query.answers import DataEntry, ProgramEntry
from upstream.query.collapse import Dimension
from upstream.query.dataset_lineage import ShownWalk, shown_walk
from upstream.query.graph_index.dataset_walk import UNNAMED, distinct, distinct_rows
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of, names_of
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_render import indexed_program_entries
from upstream.query.relation_table import Vocabulary
from upstream.query.workflows import temporary_datasets

Ints = npt.NDArray[np.int64]
#: A relation's identity in a diff: its dataset's and program's keys, accesses and components.
RelationId = tuple[str, str, tuple[str, ...], tuple[str, ...]]
#: The accesses a group of relations with the access collapsed has, by its mask (1: read,
#: 2: write), listed as `collapse` lists them.
_ACCESSES = {1: ("read",), 2: ("write",), 3: ("read", "write")}


@dataclass(frozen=True)
class DiffSide:
    """What a diff compares of one side: each relation's run count by its identity, the
    datasets it shows (key: entry) with each one's id text, its programs (key: entry),
    whether a cap cut it, and what it hid from a reader limited to some namespaces."""

    runs: dict[RelationId, int]
    data: dict[str, DataEntry]
    ids: dict[str, str]
    programs: dict[str, ProgramEntry]
    truncated: bool
    hidden: dict[str, int]


def walked_sides(
    conn: Connection,
    seed: uuid.UUID,
    sides: tuple[LineageParams, LineageParams],
    caps: tuple[int, int],
    visibility: Visibility,
) -> tuple[DiffSide, DiffSide]:
    """Both sides of a diff of `seed`'s lineage without a rollup, each walked and cut to
    `caps` (nodes, relations) as its lineage answer is; a reader's namespaces are read
    once for both walks."""
    graph = graph_of(conn)
    number = graph.ids.datasets.known(str(seed))
    view = VisibleNodes.of(conn, graph, visibility)
    walks: list[tuple[ShownWalk, VisibleNodes | None]] = []
    for params in sides:
        visible = None if view is None else VisibleNodes(view.datasets, view.jobs)
        walks.append((shown_walk(graph, number, params, visible, caps), visible))
    rows = np.concatenate([walk.shown.rows for walk, _ in walks])
    datasets, _ = Vocabulary.of_numbers(graph.ids.datasets, rows[:, 0])
    jobs, _ = Vocabulary.of_numbers(graph.ids.jobs, rows[:, 1])
    names = _Names.of(conn, graph, datasets, jobs, str(seed))
    before, after = (
        names.side(walk.shown.rows, params.collapse, walk.omitted is not None, visible)
        for (walk, visible), params in zip(walks, sides, strict=True)
    )
    return before, after


@dataclass(frozen=True)
class _Names:
    """The id texts, keys and entries of the datasets and jobs of both sides, by index
    number; the queried dataset's by NONE (a side shows it even when the index does not hold
    it)."""

    graph: Graph
    datasets: dict[int, tuple[str, str, DataEntry]]
    programs: dict[int, tuple[str, ProgramEntry]]

    @classmethod
    def of(
        cls, conn: Connection, graph: Graph, datasets: Vocabulary, jobs: Vocabulary, seed: str
    ) -> _Names:
        dataset_names, _ = names_of(conn)
        named = dataset_names.of(conn, {seed, *datasets.texts})
        entries: dict[str, tuple[str, DataEntry]] = {
            dataset_id: (
                entity_key("dataset", namespace, name),
                {"entityId": {"type": "dataset", "namespace": namespace, "name": name}},
            )
            for dataset_id, (namespace, name) in named.items()
        }
        numbers, texts = [NONE, *datasets.numbers.tolist()], [seed, *datasets.texts]
        by_number = {n: (text, *entries[text]) for n, text in zip(numbers, texts, strict=True)}
        program_entries = indexed_program_entries(conn, graph, jobs)
        programs = {
            n: program_entries[text]
            for n, text in zip(jobs.numbers.tolist(), jobs.texts, strict=True)
        }
        return cls(graph, by_number, programs)

    def side(
        self,
        rows: Ints,
        collapse: Collection[Dimension],
        truncated: bool,
        visible: VisibleNodes | None,
    ) -> DiffSide:
        """The side whose walk shows `rows`, its relations collapsed as `collapse` asks
        (and by run); datasets temporary on this side are marked so."""
        temporary = set(rows[temporary_datasets(self.graph, rows[:, 0], rows[:, 2]), 0].tolist())
        data: dict[str, DataEntry] = {}
        ids: dict[str, str] = {}
        for number in [NONE, *distinct(rows[:, 0]).tolist()]:
            dataset_id, key, entry = self.datasets[number]
            data[key] = {**entry, "temporary": True} if number in temporary else entry
            ids[key] = dataset_id
        programs = dict(self.programs[n] for n in distinct(rows[:, 1]).tolist())
        hidden = {}
        if visible is not None:
            hidden = {
                "hiddenNodes": visible.hidden_nodes,
                "hiddenRelations": visible.hidden_relations,
            }
        return DiffSide(self._runs(rows, collapse), data, ids, programs, truncated, hidden)

    def _runs(self, rows: Ints, collapse: Collection[Dimension]) -> dict[RelationId, int]:
        """How many runs each relation of `rows` has once its runs (and the dimensions of
        `collapse`) are collapsed, by its identity, as `collapse.collapse` would group and
        list them: declared rows count no run, and an unnamed component is none."""
        dataset, job, run, write, component = (rows[:, c] for c in range(5))
        component = np.where(component == UNNAMED, NONE, component)
        none = np.full(len(rows), NONE, dtype=np.int64)
        merged_access, merged_component = "access" in collapse, "component" in collapse
        keys = np.stack(
            [
                dataset,
                job,
                none if merged_access else write,
                none if merged_component else component,
            ],
            axis=1,
        )
        groups, group_of = distinct_rows(keys)
        counted = run != NONE
        pairs, _ = distinct_rows(np.stack([group_of[counted], run[counted]], axis=1))
        counts = np.bincount(pairs[:, 0], minlength=len(groups)).tolist()
        if merged_access:
            masks = np.zeros(len(groups), dtype=np.int64)
            np.bitwise_or.at(masks, group_of, 1 << write)
            accesses = [_ACCESSES[m] for m in masks.tolist()]
        else:
            accesses = [_ACCESSES[1 << w] for w in groups[:, 2].tolist()]
        names = self.graph.ids.components.texts
        if merged_component:
            listed: list[list[str]] = [[] for _ in range(len(groups))]
            present = component != NONE
            members, _ = distinct_rows(np.stack([group_of[present], component[present]], axis=1))
            for group, code in members.tolist():
                listed[group].append(names[code])
            components = [tuple(sorted(found)) for found in listed]
        else:
            components = [(names[c],) if c != NONE else () for c in groups[:, 3].tolist()]
        data, programs = self.datasets, self.programs
        return {
            (data[d][1], programs[j][0], a, c): n
            for d, j, a, c, n in zip(
                groups[:, 0].tolist(),
                groups[:, 1].tolist(),
                accesses,
                components,
                counts,
                strict=True,
            )
        }
