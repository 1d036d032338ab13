"""The field side of a watched radius, read from the graph index's field graph (design
§4.8): the field edges within a subscription's direction and levels of the watched fields,
the schema fields it watches, and the schema breaks (a field gone from its dataset's schema
while field edges from it lead downstream within the radius).

The walks are the field-lineage walks' own (`upstream.query.graph_index.field_walk`): the
same edges count (a link in force in the last `activeDays` days), a walk never steps onto a
deleted dataset, so a subscription sees what `GET …/field-lineage` shows.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.direction import Direction, Step
from upstream.model.watch import FieldEdgeKey, SchemaBreak, SchemaField, schema_field_names
from upstream.model.window import Window
from upstream.query.graph_index.field_walk import FieldEdges, FieldNode, field_hops
from upstream.query.graph_index.graph import Graph
from upstream.store import schema as t
from upstream.store.dialect import id_filters


@dataclass(frozen=True)
class FieldRadius:
    """The field edges within the radius, and the fields they reach (the starts too)."""

    edges: frozenset[FieldEdgeKey]
    fields: frozenset[SchemaField]

    @property
    def datasets(self) -> frozenset[str]:
        return frozenset(d for d, _ in self.fields)


def steps(direction: Direction) -> tuple[Step, ...]:
    return ("upstream", "downstream") if direction == "both" else (direction,)


def field_radius(
    graph: Graph,
    fields: Collection[FieldNode],
    datasets: Collection[uuid.UUID],
    direction: Direction,
    levels: int,
    window: Window,
) -> FieldRadius:
    """The field edges at most `levels` hops from the watched `fields` and every field of
    the watched `datasets`, against (upstream) or along (downstream) the edges, each with
    the origin that stated it."""
    edges = FieldEdges(graph, window)
    f = edges.fields
    starts = np.union1d(edges.nodes(fields), f.nodes_of(edges.datasets(datasets)))
    found: list[np.ndarray] = []
    reached = starts
    for step in steps(direction):
        downstream = step == "downstream"
        end: Literal["source", "target"] = "source" if downstream else "target"
        far = f.target_node if downstream else f.source_node
        seen, frontier = starts, starts
        for _ in range(levels):
            if not len(frontier):
                break
            rows = edges.edges_at(frontier, end)
            found.append(rows)
            frontier = np.setdiff1d(far[rows].astype(np.int64), seen)
            seen = np.union1d(seen, frontier)
        reached = np.union1d(reached, seen)
    rows = np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
    keys = frozenset(FieldEdgeKey(*edge) for edge in edges.named_edges(rows))
    named = set(edges.named(reached))
    return FieldRadius(keys, frozenset(named | {(str(d), name) for d, name in fields}))


def stating_runs(
    graph: Graph, keys: Collection[FieldEdgeKey], window: Window
) -> dict[FieldEdgeKey, set[str]]:
    """The runs (ids as text) whose lineage, in force in `window`, states each of the field
    edges `keys`: what a notification names as the cause of an edge it tells."""
    edges = FieldEdges(graph, window)
    sources = {(uuid.UUID(k.source_dataset), k.source_field) for k in keys}
    rows = edges.edges_at(edges.nodes(sources), "source")
    found: dict[FieldEdgeKey, set[str]] = {key: set() for key in keys}
    texts = graph.ids.runs.texts
    for edge, runs in zip(edges.named_edges(rows), edges.stating_runs(rows), strict=True):
        stated = found.get(FieldEdgeKey(*edge))
        if stated is not None:
            stated.update(texts[run] for run in runs.tolist())
    return found


@dataclass
class Schemas:
    """The fields of datasets' schemas (nested ones by their dotted path), each dataset read
    once per snapshot: a dispatcher's round looks at many subscriptions whose radii share
    datasets, and parsing the same schema for each of them slowed ingest beside it."""

    conn: Connection
    #: Each dataset's fields as (dataset, field) pairs, ready to be joined.
    names: dict[str, frozenset[SchemaField]] = field(default_factory=dict)

    def fields(self, datasets: Iterable[str]) -> frozenset[SchemaField]:
        """Each (dataset, field) that the schemas of `datasets` (ids as text) list."""
        wanted = set(datasets)
        missing = [uuid.UUID(i) for i in wanted - self.names.keys()]
        d = t.datasets.c
        for matches in id_filters(self.conn, d.id, missing):
            for id_, fields in self.conn.execute(sa.select(d.id, d.fields).where(matches)):
                key = str(id_)
                self.names[key] = frozenset((key, name) for name in schema_field_names(fields))
        return frozenset().union(*(self.names[i] for i in wanted if i in self.names))


def schema_breaks(
    graph: Graph,
    gone: Iterable[SchemaField],
    within: frozenset[str],
    levels: int,
    window: Window,
) -> tuple[SchemaBreak, ...]:
    """Of the fields `gone` from their schemas, those with field edges leading downstream,
    in at most `levels` hops, to fields of the datasets `within` (ids as text); each with
    those downstream fields and their least hops."""
    breaks = []
    for dataset, name in gone:
        hops = field_hops(graph, [(uuid.UUID(dataset), name)], "downstream", levels, window)
        downstream = sorted(
            (str(d), field, n) for (d, field), n in hops.items() if str(d) in within
        )
        if downstream:
            breaks.append(SchemaBreak(dataset, name, tuple(downstream)))
    return tuple(breaks)
