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
from upstream.model.facts import ORIGIN_SHOWN
from upstream.model.watch import FieldEdgeKey, SchemaBreak, SchemaField
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
    keys = frozenset(
        FieldEdgeKey(
            str(edge.source[0]),
            edge.source[1],
            str(edge.target[0]),
            edge.target[1],
            ORIGIN_SHOWN[edge.origin],
        )
        for edge in edges.as_edges(rows)
    )
    named = {(str(d), name) for d, name in edges.keys(reached)}
    return FieldRadius(keys, frozenset(named | {(str(d), name) for d, name in fields}))


@dataclass
class Schemas:
    """The top-level fields of datasets' schemas, each dataset read once per snapshot: a
    dispatcher's round looks at many subscriptions whose radii share datasets, and parsing
    the same schema for each of them slowed ingest beside it."""

    conn: Connection
    names: dict[str, frozenset[str]] = field(default_factory=dict)

    def fields(self, datasets: Iterable[str]) -> frozenset[SchemaField]:
        """Each (dataset, top-level field) that the schemas of `datasets` (ids as text) list."""
        wanted = set(datasets)
        missing = [uuid.UUID(i) for i in wanted - self.names.keys()]
        d = t.datasets.c
        for matches in id_filters(self.conn, d.id, missing):
            for id_, fields in self.conn.execute(sa.select(d.id, d.fields).where(matches)):
                self.names[str(id_)] = frozenset(
                    f["name"] for f in fields or [] if isinstance(f, dict) and "name" in f
                )
        return frozenset((i, name) for i in wanted for name in self.names.get(i, ()))


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
