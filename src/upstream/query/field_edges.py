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


def field_edges_among(conn: Connection, sides: Sequence[Side]) -> list[set[FieldEdge]]:
    """For each side, every field edge whose two datasets are both in its datasets."""
    graph = graph_of(conn)
    found: list[set[FieldEdge]] = []
    for side in sides:
        edges = FieldEdges(graph, side.window)
        rows = edges.among(edges.datasets(side.datasets))
        f = graph.fields
        datasets, fields = graph.ids.datasets.texts, f.names.fields.texts
        columns = (
            f.edges[name][rows].tolist()
            for name in ("source_dataset", "source_field", "target_dataset", "target_field")
        )
        found.append(
            {
                FieldEdge(datasets[s], fields[sf], datasets[t], fields[tf])
                for s, sf, t, tf in zip(*columns, strict=True)
            }
        )
    return found
