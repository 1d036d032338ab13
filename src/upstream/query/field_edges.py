"""Field edges between a set of datasets, as an answer shows them (source field -> target
field), for the runs of a window and the declarations in force at its `as_of` time, read from
the graph index (`query.graph_index.field_walk`)."""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.query.graph_index.dataset_walk import distinct
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of

Ints = npt.NDArray[np.int64]


class FieldEdge(NamedTuple):
    """Data of `source_field` of dataset `source` flowed into `target_field` of `target`
    (ids as their hyphenated text, `upstream.store.dialect.id_text`)."""

    source: str
    source_field: str
    target: str
    target_field: str


class Side(NamedTuple):
    """One answer's datasets (ids as text) and the window its runs and declarations come
    from."""

    datasets: Collection[str]
    window: Window


def one_sided_edges(conn: Connection, sides: tuple[Side, Side]) -> tuple[list[FieldEdge], ...]:
    """For each of two sides, the field edges between two of its datasets that the other
    side lacks. The edges between the datasets of either side are found once; each side
    counts them in its window, and the sides compare them as numbers (an edge is its pair
    of field nodes), so only the edges one side lacks are named."""
    graph = graph_of(conn)
    f = graph.fields
    counting = [FieldEdges(graph, side.window) for side in sides]
    numbers = [c.datasets(side.datasets) for c, side in zip(counting, sides, strict=True)]
    rows = counting[0].between(np.union1d(*numbers))
    sources, targets = f.edges["source_dataset"][rows], f.edges["target_dataset"][rows]
    pairs: list[Ints] = []
    for edges, datasets in zip(counting, numbers, strict=True):
        # A flag per dataset number: a look-up per edge end, where `np.isin` sorts them.
        side = np.zeros(len(graph.ids.datasets), dtype=np.bool_)
        side[datasets] = True
        mine = rows[side[sources] & side[targets]]
        mine = mine[edges.counted(mine)]
        pair = f.source_node[mine].astype(np.int64) * len(f.node_keys) + f.target_node[mine]
        pairs.append(distinct(pair))
    return (
        _named(graph, _missing_from(pairs[0], pairs[1])),
        _named(graph, _missing_from(pairs[1], pairs[0])),
    )


def _missing_from(found: Ints, other: Ints) -> Ints:
    """The values of `found` that `other` lacks, both distinct and sorted."""
    at = np.minimum(np.searchsorted(other, found), max(len(other) - 1, 0))
    held = other[at] == found if len(other) else np.zeros(len(found), dtype=np.bool_)
    missing: Ints = found[~held]
    return missing


def _named(graph: Graph, pairs: Ints) -> list[FieldEdge]:
    """The edges `pairs` (source node * node count + target node) with their datasets' ids
    and their fields' names."""
    f = graph.fields
    source, target = np.divmod(pairs, len(f.node_keys))
    # Each dataset's text made once (an answer's edges name a few datasets many times), and
    # the fields' names taken together, not one look-up of the numbering each.
    datasets = np.concatenate([f.dataset_of(source), f.dataset_of(target)])
    named = graph.ids.datasets.texts.take_repeated(datasets)
    fields = f.names.fields.texts.take(np.concatenate([f.field_of(source), f.field_of(target)]))
    count = len(source)
    return list(map(FieldEdge, named[:count], fields[:count], named[count:], fields[count:]))
