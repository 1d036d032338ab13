"""Field-level walks on the index's field graph (design §4.3, §4.4, §4.5, §6): the fields a
field comes from or flows to, the field edges at or between datasets.

Which edges a question counts is decided by their sets' links (`field_graph`): with a window,
a link of a run that overlaps it (and had started by its `as_of` time), or a declaration in
force — the current ones, or with `as_of` those of the history then in force, as the dataset
walks decide (`dataset_walk.WalkView`); without one, every current link. A walk never steps
onto a field of a deleted dataset, nor, for a reader limited to some namespaces
(`visibility.VisibleNodes`), onto a field of a dataset it may not see: the edges it stopped
at there are counted, never named (`hidden_nodes`: the distinct hidden fields at their far
ends; `hidden_relations`: the distinct field -> field pairs).

Nodes are numbers inside; the answers' (dataset id, field name) pairs are made only for the
nodes an answer shows, from the index's own tables.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterable
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

from upstream.model.direction import Step
from upstream.model.facts import ORIGIN_SHOWN
from upstream.model.window import Window
from upstream.query.graph_index.dataset_walk import WalkView
from upstream.query.graph_index.field_graph import ORIGINS, FieldGraph
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
#: A field of a dataset: (dataset id, field name).
FieldNode = tuple[uuid.UUID, str]
_SHOWN = [ORIGIN_SHOWN[origin] for origin in ORIGINS]


class FieldEdge(NamedTuple):
    """A field -> field edge as the Marquez column graph reads it: its ends, its
    transformations and its origin (as stored: `lineage_facet`, `sql`, ...)."""

    source: FieldNode
    target: FieldNode
    transformations: list[dict[str, Any]]
    origin: str


class FieldEdges:
    """The field edges one question counts, in one version of the index."""

    def __init__(
        self, graph: Graph, window: Window | None, visible: VisibleNodes | None = None
    ) -> None:
        self.graph = graph
        self.fields: FieldGraph = graph.fields
        self.window = window
        self.view = WalkView(graph, window) if window is not None else None
        self.visible = visible
        self._uuids: dict[int, uuid.UUID] = {}
        self._hidden: list[Ints] = []

    # -- which edges count -------------------------------------------------------------------

    def counted(self, rows: Ints) -> Flags:
        """Which of the edge rows `rows` the question counts: those of a set with a link in
        force and in its window (any current link, without a window). Each set's links are
        read once, however many of the edges it holds."""
        sets, of_set = np.unique(self.fields.edges["set"][rows], return_inverse=True)
        _, owner = self._counted_links(sets)
        counted = np.zeros(len(sets), dtype=np.bool_)
        counted[owner] = True
        found: Flags = counted[of_set]
        return found

    def stating_runs(self, rows: Ints) -> list[Ints]:
        """For each of the edge rows `rows`, the numbers of the runs whose counted links
        state its set (none for a set only a declaration states)."""
        links, owner = self._counted_links(self.fields.edges["set"][rows])
        runs = self.fields.links["run"][links].astype(np.int64)
        observed = runs != NONE
        runs, owner = runs[observed], owner[observed]
        return [np.unique(runs[owner == i]) for i in range(len(rows))]

    def _counted_links(self, sets: Ints) -> tuple[Ints, Ints]:
        """The links in force and in the window of `sets`, and for each the position in
        `sets` of the set it states."""
        links, owner = self.fields.links_by_set.rows_of(sets)
        table = self.fields.links
        if self.view is None:
            keep = table["current"][links]
        else:
            keep = self.view.in_force(table, links, table["of_run"][links])
            keep &= self.view.run_in_window(table["run"][links].astype(np.int64))
        return links[keep], owner[keep]

    def live(self, datasets: npt.NDArray[np.integer]) -> Flags:
        return ~self.graph.deleted(self.graph.deleted_datasets, datasets)

    # -- walks -------------------------------------------------------------------------------

    def walk(
        self, starts: Collection[FieldNode], direction: Step, levels: int
    ) -> tuple[Ints, Ints, Ints, Ints]:
        """Breadth first from `starts`, against (upstream) or along (downstream) the field
        edges, at most `levels` hops: the nodes reached (never a start) with their least
        hop count, and for each the origins (codes) of the edges that reached it at that
        hop, as (node, origin) pairs."""
        f, edges = self.fields, self.fields.edges
        near_by = f.by_target if direction == "upstream" else f.by_source
        far_node = f.source_node if direction == "upstream" else f.target_node
        far_dataset = edges["source_dataset" if direction == "upstream" else "target_dataset"]
        # The nodes met so far, sorted: a walk meets a few of the graph's fields, and an
        # array of every field's depth cost more to make and to scan than the walk itself.
        frontier = self.nodes(starts)
        met = frontier
        frontiers: list[Ints] = []
        reached_at: list[Ints] = []
        origin_nodes: list[Ints] = []
        origin_codes: list[Ints] = []
        for hop in range(1, levels + 1):
            rows, _ = near_by.rows_of(frontier)
            far = far_node[rows].astype(np.int64)
            keep = far != NONE
            rows, far = rows[keep], far[keep]
            keep = self.live(far_dataset[rows]) & ~np.isin(far, met)
            rows, far = rows[keep], far[keep]
            keep = self.counted(rows)
            rows, far = rows[keep], far[keep]
            keep = self._shown(rows, far_dataset[rows], direction)
            rows, far = rows[keep], far[keep]
            if not len(rows):
                break
            origin_nodes.append(far)
            origin_codes.append(edges["origin"][rows].astype(np.int64))
            frontier = np.unique(far)
            met = np.union1d(met, frontier)
            frontiers.append(frontier)
            reached_at.append(np.full(len(frontier), hop, dtype=np.int64))
        empty = np.zeros(0, dtype=np.int64)
        reached = np.concatenate(frontiers) if frontiers else empty
        hops = np.concatenate(reached_at) if reached_at else empty
        order = np.argsort(reached)  # each node is reached once: by number, as before
        return (
            reached[order],
            hops[order],
            np.concatenate(origin_nodes) if origin_nodes else empty,
            np.concatenate(origin_codes) if origin_codes else empty,
        )

    def leading_to_shown(self, rows: Ints, direction: Step) -> Ints:
        """The edge rows of `rows` whose far end (the source upstream, the target
        downstream) is a field the reader may see; the others are counted as hidden edges
        the walk stopped at."""
        far = self.fields.edges["source_dataset" if direction == "upstream" else "target_dataset"]
        kept: Ints = rows[self._shown(rows, far[rows], direction)]
        return kept

    def _shown(self, rows: Ints, far_dataset: npt.NDArray[np.integer], direction: Step) -> Flags:
        """Which of the edge rows `rows` lead to a field the reader may see; the others are
        remembered as hidden edges the walk stopped at."""
        if self.visible is None:
            return np.ones(len(rows), dtype=np.bool_)
        shown = self.visible.shows_datasets(far_dataset.astype(np.int64))
        hidden = rows[~shown]
        if len(hidden):
            f = self.fields
            pair = (f.source_node[hidden], f.target_node[hidden])
            near, far = pair if direction == "downstream" else pair[::-1]
            self._hidden.append(np.stack([near.astype(np.int64), far.astype(np.int64)], axis=1))
        return shown

    @property
    def hidden_nodes(self) -> int:
        """The distinct hidden fields the walks stopped at."""
        if not self._hidden:
            return 0
        return len(np.unique(np.concatenate(self._hidden)[:, 1]))

    @property
    def hidden_relations(self) -> int:
        """The distinct field -> field edges to a hidden field the walks stopped at."""
        if not self._hidden:
            return 0
        return len(np.unique(np.concatenate(self._hidden), axis=0))

    def reach(
        self, starts: Collection[FieldNode], direction: Step, levels: int
    ) -> dict[FieldNode, set[str]]:
        """The fields reached from `starts` against (upstream) or along (downstream) field
        edges in at most `levels` hops, each with the origins (as answers name them) of the
        edges that reached it at its nearest hop; the starts themselves are never part of the
        answer, even when a cycle leads back to them."""
        reached, _, origin_nodes, origin_codes = self.walk(starts, direction, levels)
        found: dict[int, set[str]] = {node: set() for node in reached.tolist()}
        for node, code in zip(origin_nodes.tolist(), origin_codes.tolist(), strict=True):
            found[node].add(_SHOWN[code])
        keys = self.keys(reached)
        return {key: found[node] for key, node in zip(keys, reached.tolist(), strict=True)}

    def hops(
        self, starts: Collection[FieldNode], direction: Step, levels: int
    ) -> dict[FieldNode, int]:
        """The fields `reach` reaches, each with its least hop count."""
        reached, depths, _, _ = self.walk(starts, direction, levels)
        return dict(zip(self.keys(reached), depths.tolist(), strict=True))

    def edges_at(self, nodes: Ints, end: Literal["source", "target"]) -> Ints:
        """The counted field -> field edges whose `end` is one of `nodes`, between datasets
        that are not deleted."""
        f = self.fields
        rows, _ = (f.by_source if end == "source" else f.by_target).rows_of(nodes)
        edges = f.edges
        keep = (f.source_node[rows] != NONE) & (f.target_node[rows] != NONE)
        rows = rows[keep]
        keep = self.live(edges["source_dataset"][rows]) & self.live(edges["target_dataset"][rows])
        rows = rows[keep]
        found: Ints = rows[self.counted(rows)]
        return found

    def between(self, datasets: Ints) -> Ints:
        """The field -> field edges whose two datasets are both of `datasets`, counted or
        not (deleted ones too: a diff shows what changed, whatever has been deleted since)."""
        f = self.fields
        rows, _ = f.by_target.rows_of(f.nodes_of(datasets))
        rows = rows[f.source_node[rows] != NONE]
        wanted = np.zeros(len(self.graph.ids.datasets), dtype=np.bool_)
        wanted[datasets] = True
        found: Ints = rows[wanted[f.edges["source_dataset"][rows]]]
        return found

    def ends_on(self, datasets: Ints) -> Ints:
        """The nodes of `datasets` at an end of a counted edge (either end; the other may
        be a whole dataset or a job), for a reader limited to some namespaces one whose
        other end it may see."""
        f = self.fields
        nodes = f.nodes_of(datasets)
        ends = []
        for by, column, other in (
            (f.by_source, f.source_node, "target_dataset"),
            (f.by_target, f.target_node, "source_dataset"),
        ):
            rows, _ = by.rows_of(nodes)
            rows = rows[self.counted(rows)]
            if self.visible is not None:
                rows = rows[self.visible.shows_datasets(f.edges[other][rows].astype(np.int64))]
            ends.append(column[rows].astype(np.int64))
        found: Ints = np.unique(np.concatenate(ends))
        return found

    # -- numbers and names -------------------------------------------------------------------

    def nodes(self, keys: Iterable[FieldNode]) -> Ints:
        """The node numbers of `keys` that the graph holds, sorted: their datasets and
        fields looked up together (a field walk asks once per level)."""
        pairs = list(keys)
        datasets = self.graph.ids.datasets.known_numbers([str(d) for d, _ in pairs])
        fields = self.fields.names.fields.known_numbers([name for _, name in pairs])
        held = (datasets != NONE) & (fields != NONE)
        return np.unique(self.fields.held_nodes(datasets[held], fields[held]))

    def datasets(self, ids: Iterable[uuid.UUID | str]) -> Ints:
        """The dataset numbers of `ids` that the graph holds."""
        found = self.graph.ids.datasets.known_numbers([str(i) for i in ids])
        return np.unique(found[found != NONE])

    def dataset_id(self, number: int) -> uuid.UUID:
        found = self._uuids.get(number)
        if found is None:
            found = self._uuids[number] = uuid.UUID(self.graph.ids.datasets.texts[number])
        return found

    def keys(self, nodes: Ints) -> list[FieldNode]:
        """The (dataset id, field name) of each of `nodes`."""
        names = self.fields.names.fields.texts.take(self.fields.field_of(nodes))
        datasets = map(self.dataset_id, self.fields.dataset_of(nodes).tolist())
        return list(zip(datasets, names, strict=True))

    def named(self, nodes: Ints) -> list[tuple[str, str]]:
        """The (dataset id as text, field name) of each of `nodes`: `keys` without making
        uuids, for callers that keep ids as text."""
        # Texts taken together: a look-up of a numbering per node cost more than the walk.
        datasets = self.graph.ids.datasets.texts.take_repeated(self.fields.dataset_of(nodes))
        names = self.fields.names.fields.texts.take(self.fields.field_of(nodes))
        return list(zip(datasets, names, strict=True))

    def named_edges(self, rows: Ints) -> list[tuple[str, str, str, str, str]]:
        """Each of the edge rows `rows` as (source dataset, source field, target dataset,
        target field, origin as answers name it), ids as text: an edge without its
        transformations, which are JSON to parse."""
        f = self.fields
        sources = self.named(f.source_node[rows].astype(np.int64))
        targets = self.named(f.target_node[rows].astype(np.int64))
        origins = f.edges["origin"][rows].tolist()
        return [
            (*source, *target, _SHOWN[origin])
            for source, target, origin in zip(sources, targets, origins, strict=True)
        ]

    def as_edges(self, rows: Ints) -> list[FieldEdge]:
        """The edge rows `rows` as the Marquez column graph reads them."""
        f = self.fields
        sources = self.keys(f.source_node[rows].astype(np.int64))
        targets = self.keys(f.target_node[rows].astype(np.int64))
        texts = f.names.transformations.texts
        parsed: dict[int, list[dict[str, Any]]] = {}
        found: list[FieldEdge] = []
        for source, target, made, origin in zip(
            sources,
            targets,
            f.edges["transformations"][rows].tolist(),
            f.edges["origin"][rows].tolist(),
            strict=True,
        ):
            if made not in parsed:
                parsed[made] = json.loads(texts[made]) or []
            found.append(FieldEdge(source, target, list(parsed[made]), ORIGINS[origin]))
        return found


def field_reach(
    graph: Graph,
    starts: Collection[FieldNode],
    direction: Step,
    levels: int,
    window: Window,
) -> dict[FieldNode, set[str]]:
    """`FieldEdges.reach` of one walk that every namespace may see."""
    return FieldEdges(graph, window).reach(starts, direction, levels)


def field_hops(
    graph: Graph,
    starts: Collection[FieldNode],
    direction: Step,
    levels: int,
    window: Window,
) -> dict[FieldNode, int]:
    """The fields `field_reach` reaches, each with its least hop count."""
    return FieldEdges(graph, window).hops(starts, direction, levels)
