"""What a subscription's radius is now (design §4.8): its relations, field edges, watched
schema fields, deletions, failed runs and schema breaks, read on one snapshot. The
dispatcher compares it with the radius it remembered; a new subscription remembers it as
its starting point. Only what the subscription asks for is read: a dataset watch that does
not ask for field edges or schema breaks never walks the field graph."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.model.watch import (
    FailedRun,
    Radius,
    RadiusRelation,
    SchemaBreak,
    SchemaField,
    Seen,
    SubscriptionSpec,
    Watched,
    vanished,
)
from upstream.model.window import Window
from upstream.query.graph_index.dataset_walk import ShownRelation
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.query.watch_fields import FieldRadius, Schemas, field_radius, schema_breaks
from upstream.query.watch_radius import (
    RadiusRows,
    aliases_of,
    radius_walk,
    watched_datasets,
    watched_fields,
    window_of,
)
from upstream.store import subscriptions as rows
from upstream.store.graph_rows import deleted_ids


@dataclass(frozen=True)
class Observation:
    seen: Seen
    #: The radius's relations, one per run, for a notification to show (None: a field or
    #: a tag watch, which has none).
    rows: RadiusRows | None

    def shown(self, relations: Collection[RadiusRelation]) -> list[ShownRelation]:
        """The runs of `relations`, as a notification shows them."""
        return [] if self.rows is None else self.rows.shown(relations)


def by_datasets(spec: SubscriptionSpec) -> bool:
    """Whether the watch's radius is a dataset-lineage walk (a dataset or a namespace)
    rather than a field-lineage one (a field or a tag)."""
    return spec.watch.kind in ("dataset", "namespace")


@dataclass(frozen=True)
class Snapshot:
    """What every subscription a round looks at shares: the read, the graph index at its
    snapshot, and the schemas read in it."""

    conn: Connection
    graph: Graph
    schemas: Schemas
    #: Every deleted dataset, job and namespace (ids as text): deletions are few, and a
    #: round asks about the entities of each radius it looks at.
    deleted: frozenset[str]
    #: The identity each watched dataset that is an alias stands under (`aliases_of`).
    aliases: Mapping[uuid.UUID, DatasetRef]

    @classmethod
    def of(
        cls, conn: Connection, watches: Iterable[Watched], schemas: Schemas | None = None
    ) -> Snapshot:
        """The snapshot of `conn` for a round that looks at `watches`."""
        return cls(
            conn,
            graph_of(conn),
            schemas or Schemas(conn),
            frozenset(deleted_ids(conn)),
            aliases_of(conn, watches),
        )


def observe(
    snapshot: Snapshot,
    spec: SubscriptionSpec,
    before: Radius,
    failed: Sequence[rows.FailedWrite],
    now: datetime,
) -> Observation:
    """The radius as it stands now, with the failed runs of `failed` that wrote into it
    and the fields gone from the schemas it watched `before`."""
    conn, graph = snapshot.conn, snapshot.graph
    seeds = watched_datasets(conn, spec.watch, snapshot.aliases)
    window = window_of(spec, now)
    datasets = by_datasets(spec)
    walked = radius_walk(graph, snapshot.deleted, spec, seeds, now) if datasets else None
    relations = frozenset() if walked is None else walked.relations()
    fields = FieldRadius(frozenset(), frozenset())
    if not datasets or "field_edges_changed" in spec.changes:
        starts = watched_fields(conn, spec.watch, snapshot.aliases)
        fields = field_radius(
            graph, starts, seeds if datasets else (), spec.direction, spec.levels, window
        )
    seed_ids = frozenset(str(s) for s in seeds)
    within = seed_ids | {r.dataset_id for r in relations} if datasets else fields.datasets
    entities = before.nodes | before.deleted | seed_ids | {n for r in relations for n in r[:2]}
    deleted_now = entities & snapshot.deleted
    schema: frozenset[SchemaField] = frozenset()
    breaks: tuple[SchemaBreak, ...] = ()
    if "schema_break" in spec.changes:
        watched = None if datasets else fields.fields
        schema, breaks = _schema(
            graph, snapshot.schemas, spec, before, within - deleted_now, watched, window
        )
    seen = Seen(
        relations,
        seed_ids,
        deleted_now,
        _failed_runs(failed, relations | before.relations, seed_ids) if datasets else (),
        fields.edges,
        schema,
        breaks,
    )
    return Observation(seen, walked)


def _schema(
    graph: Graph,
    schemas: Schemas,
    spec: SubscriptionSpec,
    before: Radius,
    within: frozenset[str],
    watched: frozenset[SchemaField] | None,
    window: Window,
) -> tuple[frozenset[SchemaField], tuple[SchemaBreak, ...]]:
    """The schema fields the radius watches now — every field of the datasets `within`
    (those of the radius not deleted), or only the `watched` ones of them — and the schema
    breaks: fields seen `before` and gone from a schema, with field edges downstream."""
    schema = schemas.fields(within)
    if watched is not None:
        schema &= watched

    def still_watched(field: SchemaField) -> bool:
        return field[0] in within and (watched is None or field in watched)

    gone = vanished(before.schema, schema, still_watched)
    return schema, schema_breaks(graph, gone, within, spec.levels, window)


def _failed_runs(
    writes: Sequence[rows.FailedWrite],
    relations: frozenset[RadiusRelation],
    seeds: frozenset[str],
) -> list[FailedRun]:
    """The failed runs that wrote a dataset of the radius, as a job of the radius."""
    datasets = {r.dataset_id for r in relations} | seeds
    jobs = {r.job_id for r in relations}
    wrote: dict[str, tuple[str, str, set[str]]] = {}
    for write in writes:
        if str(write.dataset_id) in datasets and str(write.job_id) in jobs:
            entry = wrote.setdefault(str(write.run_id), (str(write.job_id), write.state, set()))
            entry[2].add(str(write.dataset_id))
    return [
        FailedRun(run, job, state, tuple(sorted(datasets_written)))
        for run, (job, state, datasets_written) in sorted(wrote.items())
    ]
