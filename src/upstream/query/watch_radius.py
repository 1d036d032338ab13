"""The watched radius of a subscription, read from the graph index, and the names a
notification shows (design §4.8).

The radius is the dataset-lineage walk (`upstream.query.graph_index.dataset_walk`) from
each watched dataset, so a subscription sees exactly what `GET …/lineage` with the same
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
from upstream.model.watch import RadiusRelation, SubscriptionSpec, Watched
from upstream.model.window import Window
from upstream.query.answers import EntityId, RelationEntry
from upstream.query.graph_index.dataset_walk import ShownRelation, walk_relations
from upstream.query.graph_index.field_walk import FieldNode
from upstream.query.graph_index.index import graph_of
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_render import render
from upstream.query.tag_reach import tagged_fields
from upstream.store import schema as t
from upstream.store.aliases import canonical_ref
from upstream.store.dialect import id_filters
from upstream.store.subscriptions import deleted_among


def watched_datasets(conn: Connection, watch: Watched) -> frozenset[uuid.UUID]:
    """The ids of the datasets a watch names: the watched dataset or the watched field's
    (the id it stands under, for an alias), every dataset of the namespace, or the datasets
    of the fields carrying the tag."""
    if watch.kind in ("dataset", "field"):
        return frozenset({canonical_ref(conn, DatasetRef(watch.namespace, watch.name)).id})
    if watch.kind == "namespace":
        d = t.datasets.c
        found = conn.execute(sa.select(d.id).where(d.namespace == watch.namespace)).scalars()
        return frozenset(found)
    return frozenset(d for d, _ in watched_fields(conn, watch))


def watched_fields(conn: Connection, watch: Watched) -> set[FieldNode]:
    """The fields a field or tag watch names now (none for a dataset or namespace watch)."""
    if watch.kind == "field":
        dataset = canonical_ref(conn, DatasetRef(watch.namespace, watch.name)).id
        return {(dataset, watch.field)}
    if watch.kind == "tag":
        return tagged_fields(conn, watch.tag) or set()
    return set()


def params_of(spec: SubscriptionSpec, now: datetime) -> LineageParams:
    """The dataset-lineage question whose relations are the radius (runs collapsed)."""
    return LineageParams(
        start=now - timedelta(days=spec.active_days),
        end=now,
        levels=spec.levels,
        direction=spec.direction,
        collapse=frozenset({"run", "component"}),
    )


def window_of(spec: SubscriptionSpec, now: datetime) -> Window:
    """The window a radius's relations and field edges count in."""
    return Window(now - timedelta(days=spec.active_days), now)


def radius_walk(
    conn: Connection, spec: SubscriptionSpec, seeds: Collection[uuid.UUID], now: datetime
) -> list[ShownRelation]:
    """Every relation of the radius now, one per run, from each watched dataset that is
    known and not deleted."""
    graph = graph_of(conn)
    deleted = deleted_among(conn, [str(s) for s in seeds])
    living = sorted(s for s in seeds if str(s) not in deleted)
    found: dict[ShownRelation, None] = {}
    for seed in living:
        number = graph.ids.datasets.known(str(seed))
        if number is not None:
            window = window_of(spec, now)
            found.update(
                dict.fromkeys(walk_relations(graph, number, spec.direction, spec.levels, window))
            )
    return list(found)


def radius_of(shown: Iterable[ShownRelation]) -> frozenset[RadiusRelation]:
    """The relations of the radius: runs and components left out."""
    return frozenset(RadiusRelation(r.dataset_id, r.job_id, r.access) for r in shown)


def shown_relations(
    conn: Connection,
    spec: SubscriptionSpec,
    relations: list[ShownRelation],
    now: datetime,
) -> tuple[list[RelationEntry], dict[str, Any], dict[str, Any]]:
    """`relations` in the dataset-lineage answer's shapes: the relations (runs of one
    relation collapsed, newest first) and the `data` and `programs` they name."""
    if not relations:
        return [], {}, {}
    seed = uuid.UUID(relations[0].dataset_id)
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
