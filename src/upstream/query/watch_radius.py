"""The watched radius of a subscription, read from the graph index, and the names a
notification shows (design §4.8).

The radius is the dataset-lineage walk (`upstream.query.graph_index.dataset_walk`) from
the watched dataset, so a subscription sees exactly what `GET …/lineage` with the same
direction and levels over its last `activeDays` days shows: no second notion of lineage.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.model.keys import EntityKind, entity_key
from upstream.model.watch import RadiusRelation, SubscriptionSpec
from upstream.model.window import Window
from upstream.query.answers import EntityId, RelationEntry
from upstream.query.graph_index.dataset_walk import ShownRelation, walk_relations
from upstream.query.graph_index.index import graph_of
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_render import render
from upstream.store import schema as t
from upstream.store.aliases import canonical_ref
from upstream.store.dialect import id_filters
from upstream.store.subscriptions import deleted_among


def watched_dataset(conn: Connection, spec: SubscriptionSpec) -> uuid.UUID:
    """The id the watched dataset stands under (the one it is an alias of, for an alias)."""
    return canonical_ref(conn, DatasetRef(spec.namespace, spec.name)).id


def params_of(spec: SubscriptionSpec, now: datetime) -> LineageParams:
    """The dataset-lineage question whose relations are the radius (runs collapsed)."""
    return LineageParams(
        start=now - timedelta(days=spec.active_days),
        end=now,
        levels=spec.levels,
        direction=spec.direction,
        collapse=frozenset({"run", "component"}),
    )


def radius_walk(
    conn: Connection, spec: SubscriptionSpec, seed: uuid.UUID, now: datetime
) -> list[ShownRelation]:
    """Every relation of the radius now, one per run; none while the watched dataset is
    unknown or deleted."""
    if deleted_among(conn, [str(seed)]):
        return []
    graph = graph_of(conn)
    number = graph.ids.datasets.known(str(seed))
    if number is None:
        return []
    window = Window(now - timedelta(days=spec.active_days), now)
    return list(walk_relations(graph, number, spec.direction, spec.levels, window))


def radius_of(shown: Iterable[ShownRelation]) -> frozenset[RadiusRelation]:
    """The relations of the radius: runs and components left out."""
    return frozenset(RadiusRelation(r.dataset_id, r.job_id, r.access) for r in shown)


def shown_relations(
    conn: Connection,
    spec: SubscriptionSpec,
    seed: uuid.UUID,
    relations: list[ShownRelation],
    now: datetime,
) -> tuple[list[RelationEntry], dict[str, Any], dict[str, Any]]:
    """`relations` in the dataset-lineage answer's shapes: the relations (runs of one
    relation collapsed, newest first) and the `data` and `programs` they name."""
    answer = render(conn, params_of(spec, now), seed, relations, None, None)
    return answer["relations"], dict(answer["data"]), dict(answer["programs"])


def entities_named(conn: Connection, ids: Collection[str]) -> dict[str, tuple[str, EntityId]]:
    """The key and identity of each dataset or job of `ids` (ids as text)."""
    found: dict[str, tuple[str, EntityId]] = {}
    wanted = [uuid.UUID(i) for i in ids]
    kinds: tuple[tuple[sa.Table, EntityKind], ...] = ((t.datasets, "dataset"), (t.jobs, "job"))
    for table, kind in kinds:
        c = table.c
        for matches in id_filters(conn, c.id, wanted):
            query = sa.select(c.id, c.namespace, c.name).where(matches)
            for id_, namespace, name in conn.execute(query):
                entity: EntityId = {"type": kind, "namespace": namespace, "name": name}
                found[str(id_)] = (entity_key(kind, namespace, name), entity)
    return found
