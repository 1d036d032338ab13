"""The watched radius of a subscription, read from the graph index, and the names a
notification shows (design §4.8).

The radius is the dataset-lineage walk (`upstream.query.graph_index.dataset_walk`) from
each watched dataset, so a subscription sees exactly what `GET …/lineage` with the same
direction and levels over its last `activeDays` days shows: no second notion of lineage.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.model.keys import EntityKind, entity_key
from upstream.model.watch import RadiusRelation, SubscriptionSpec, Watched
from upstream.model.window import Window
from upstream.query.answers import EntityId, RelationEntry
from upstream.query.graph_index.dataset_walk import ShownRelation, relation_rows
from upstream.query.graph_index.field_walk import FieldNode
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.numbering import NONE
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_render import render
from upstream.query.relation_table import RelationTable
from upstream.query.tag_reach import tagged_fields
from upstream.store import schema as t
from upstream.store.aliases import canonical_refs
from upstream.store.dialect import id_filters


def aliases_of(conn: Connection, watches: Iterable[Watched]) -> dict[uuid.UUID, DatasetRef]:
    """The identity each dataset or field watch's dataset stands under, for those that are
    aliases, read at once for many watches (`watched_datasets`, `watched_fields`)."""
    named = {DatasetRef(w.namespace, w.name).id for w in watches if w.kind in ("dataset", "field")}
    return canonical_refs(conn, named) if named else {}


def _standing(watch: Watched, aliases: Mapping[uuid.UUID, DatasetRef]) -> uuid.UUID:
    """The id the watched dataset stands under (its own unless it is an alias)."""
    ref = DatasetRef(watch.namespace, watch.name)
    return aliases.get(ref.id, ref).id


def watched_datasets(
    conn: Connection, watch: Watched, aliases: Mapping[uuid.UUID, DatasetRef]
) -> frozenset[uuid.UUID]:
    """The ids of the datasets a watch names: the watched dataset or the watched field's
    (the id it stands under, for an alias, of `aliases_of`), every dataset of the
    namespace, or the datasets of the fields carrying the tag."""
    if watch.kind in ("dataset", "field"):
        return frozenset({_standing(watch, aliases)})
    if watch.kind == "namespace":
        d = t.datasets.c
        found = conn.execute(sa.select(d.id).where(d.namespace == watch.namespace)).scalars()
        return frozenset(found)
    return frozenset(d for d, _ in watched_fields(conn, watch, aliases))


def watched_fields(
    conn: Connection, watch: Watched, aliases: Mapping[uuid.UUID, DatasetRef]
) -> set[FieldNode]:
    """The fields a field or tag watch names now (none for a dataset or namespace watch)."""
    if watch.kind == "field":
        return {(_standing(watch, aliases), watch.field)}
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


@dataclass(frozen=True)
class RadiusRows:
    """The relations of a radius as the graph index numbers them: one row of (dataset, job,
    run, write, component) numbers each. A radius compares only (dataset, job, access), and
    a long `activeDays` gives it thousands of runs: they are named only for a notification
    that shows them (`shown`)."""

    graph: Graph
    rows: npt.NDArray[np.int64]

    def _code(self, dataset: Any, job: Any, write: Any) -> Any:
        """One number per (dataset, job, write): the distinct relations are one sort away.
        `write` is 1/0 or an access; an unknown dataset or job codes as -1, no relation."""
        if isinstance(write, str):
            write = int(write == "write")
        if dataset is None or job is None:
            return -1
        return (dataset * len(self.graph.ids.jobs) + job) * 2 + write

    def relations(self) -> frozenset[RadiusRelation]:
        """The relations of the radius: runs and components left out."""
        datasets, jobs = self.graph.ids.datasets.texts, self.graph.ids.jobs.texts
        codes = np.unique(self._code(self.rows[:, 0], self.rows[:, 1], self.rows[:, 3]))
        pairs, written = np.divmod(codes, 2)
        return frozenset(
            RadiusRelation(datasets[pair // len(jobs)], jobs[pair % len(jobs)], access)
            for pair, access in zip(
                pairs.tolist(), np.where(written == 1, "write", "read").tolist(), strict=True
            )
        )

    def shown(self, relations: Collection[RadiusRelation]) -> list[ShownRelation]:
        """The rows of `relations`, one per run, as answers show them."""
        ids = self.graph.ids
        wanted = [
            self._code(ids.datasets.known(r.dataset_id), ids.jobs.known(r.job_id), r.access)
            for r in relations
        ]
        rows = self.rows
        codes = self._code(rows[:, 0], rows[:, 1], rows[:, 3])
        picked = rows[np.isin(codes, np.array(wanted, dtype=np.int64))].tolist()
        return [
            ShownRelation(
                ids.datasets.texts[dataset],
                ids.jobs.texts[job],
                None if run == NONE else ids.runs.texts[run],
                "write" if write else "read",
                ids.components.texts[component],
            )
            for dataset, job, run, write, component in picked
        ]


def radius_walk(
    graph: Graph,
    deleted: frozenset[str],
    spec: SubscriptionSpec,
    seeds: Collection[uuid.UUID],
    now: datetime,
) -> RadiusRows:
    """Every relation of the radius now, one row per run, from each watched dataset that
    is known and not `deleted` (ids as text), on `graph`."""
    window = window_of(spec, now)
    found = [np.zeros((0, 5), dtype=np.int64)]
    for seed in sorted(s for s in seeds if str(s) not in deleted):
        number = graph.ids.datasets.known(str(seed))
        if number is not None:
            found.append(relation_rows(graph, number, spec.direction, spec.levels, window))
    rows = np.concatenate(found)
    return RadiusRows(graph, np.unique(rows, axis=0) if len(found) > 2 else rows)


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
    table = RelationTable.of_shown(graph_of(conn), relations)
    answer = render(conn, params_of(spec, now), seed, table, None, None)
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
