"""Field edges between a set of datasets, as an answer shows them (source field -> target
field), for the runs of a window and the declarations in force at its `as_of` time, read from
the graph index (`query.graph_index.field_walk`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NamedTuple

from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.index import graph_of


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


#: A field edge as the index numbers it: (source dataset, source field, target dataset,
#: target field). Two sides compare by these, and only the edges one side lacks are named.
EdgeNumbers = tuple[int, int, int, int]


def field_edges_among(conn: Connection, sides: Sequence[Side]) -> list[set[EdgeNumbers]]:
    """For each side, every field edge whose two datasets are both in its datasets."""
    graph = graph_of(conn)
    found: list[set[EdgeNumbers]] = []
    for side in sides:
        edges = FieldEdges(graph, side.window)
        rows = edges.among(edges.datasets(side.datasets))
        columns = (
            graph.fields.edges[name][rows].tolist()
            for name in ("source_dataset", "source_field", "target_dataset", "target_field")
        )
        found.append(set(zip(*columns, strict=True)))
    return found


def named_edges(conn: Connection, numbered: Collection[EdgeNumbers]) -> list[FieldEdge]:
    """The edges `numbered` with their datasets' ids and their fields' names."""
    graph = graph_of(conn)
    datasets, fields = graph.ids.datasets.texts, graph.fields.names.fields.texts
    return [
        FieldEdge(datasets[s], fields[sf], datasets[t], fields[tf]) for s, sf, t, tf in numbered
    ]
