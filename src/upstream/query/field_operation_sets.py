"""Reading stored operation sets and the fields a dataset has, for the field-lineage services.

Every loader takes a whole set of datasets at once (one statement per chunk), and parses each
distinct operation set once however many runs recorded it.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import NotFound
from upstream.model.field_operations import OperationSet, SourceRef, operation_set_from_stored
from upstream.model.identity import DatasetRef
from upstream.model.window import Window
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.edge_rows import EDGES
from upstream.store.window import edges_as_of, run_in_window, run_overlaps


@dataclass(frozen=True)
class RunOf:
    """A run that recorded an operation set: its id, job and start."""

    run_id: uuid.UUID
    job_namespace: str
    job_name: str
    started_at: datetime | None

    @property
    def recency(self) -> tuple[datetime, str]:
        """Sort key, newest last (runs without a start sort as oldest)."""
        return self.started_at or datetime.min.replace(tzinfo=UTC), str(self.run_id)

    def as_json(self) -> dict[str, object]:
        return {
            "runId": str(self.run_id),
            "job": {"namespace": self.job_namespace, "name": self.job_name},
            "startedAt": self.recency[0].isoformat() if self.started_at else None,
        }


@dataclass(frozen=True)
class Recorded:
    """One run's link to an operation set of a destination."""

    destination: uuid.UUID
    operation_set: uuid.UUID
    run: RunOf


@dataclass
class OperationSets:
    """The operation sets linked to runs in a window, each parsed once."""

    links: list[Recorded]
    sets: dict[uuid.UUID, OperationSet]


def operation_sets(
    conn: Connection, destinations: Collection[uuid.UUID], window: Window | None
) -> OperationSets:
    """Operation sets of `destinations` recorded by runs overlapping `window` (all runs when
    None), with the runs that recorded them.

    The runs are read only for destinations with an operation set (`_recorded`), and the
    window is tested on the run the statement joins for its start. PostgreSQL plans that
    statement anew for a connection's first runs of it, partition by partition of the runs
    and their links (0.3 to 0.5 ms): most datasets have no recorded operations, and their
    question is answered by one statement on an index instead."""
    os_, ros = t.operation_sets, t.run_operation_sets
    links: list[Recorded] = []
    raw: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for matches in id_filters(conn, os_.c.dataset_id, _recorded(conn, destinations)):
        query = (
            sa.select(
                os_.c.id,
                os_.c.dataset_id,
                os_.c.operations,
                ros.c.run_id,
                t.runs.c.started_at,
                t.jobs.c.namespace,
                t.jobs.c.name,
            )
            .select_from(
                ros.join(os_, os_.c.id == ros.c.operation_set_id)
                .join(t.runs, t.runs.c.id == ros.c.run_id)
                .join(t.jobs, t.jobs.c.id == ros.c.job_id)
            )
            .where(matches, *([] if window is None else [run_overlaps(t.runs, window)]))
        )
        for row in conn.execute(query):
            raw.setdefault(row.id, row.operations)
            run = RunOf(row.run_id, row.namespace, row.name, row.started_at)
            links.append(Recorded(row.dataset_id, row.id, run))
    sets = {key: operation_set_from_stored(value) for key, value in raw.items()}
    return OperationSets(links, sets)


def _recorded(conn: Connection, destinations: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """Those of `destinations` that have an operation set."""
    dataset = t.operation_sets.c.dataset_id
    found: set[uuid.UUID] = set()
    for matches in id_filters(conn, dataset, destinations):
        found.update(conn.execute(sa.select(dataset).where(matches).distinct()).scalars())
    return found


#: Made once: a field question asks it on every read.
_FIELDS = sa.select(t.datasets.c.fields).where(
    t.datasets.c.id == sa.bindparam("dataset", type_=t.datasets.c.id.type)
)


def current_fields(conn: Connection, dataset: DatasetRef) -> set[str]:
    """The dataset's current (top-level) fields: schema facet or recorded operations."""
    stored = conn.execute(_FIELDS, {"dataset": dataset.id}).scalar()
    return {f["name"] for f in stored or [] if isinstance(f, dict) and "name" in f}


def known_fields(conn: Connection, dataset: DatasetRef) -> set[str]:
    """Every field the dataset is known to have: its current fields, those alive after any
    operation set recorded for it, those operations read from it, and the ends of field edges
    on it (any time, in any declaration)."""
    found = current_fields(conn, dataset)
    for operations in operation_sets(conn, [dataset.id], None).sets.values():
        found.update(operations.alive)
    source = SourceRef(dataset.namespace, dataset.name)
    for operations in operation_sets(
        conn, reading_destinations(conn, dataset, None), None
    ).sets.values():
        found.update(f for step in operations.steps if source in step.sources for f in step.outputs)
    for e in (EDGES, t.declared_edges):  # declarations since replaced count too
        for end in ("target", "source"):
            query = (
                sa.select(e.c[f"{end}_field"])
                .where(e.c[f"{end}_dataset_id"] == dataset.id, e.c[f"{end}_field"].is_not(None))
                .distinct()
            )
            found.update(conn.execute(query).scalars())
    return found


def require_field(conn: Connection, dataset: DatasetRef, field: str) -> None:
    """Raise NotFound unless `field` is a field of `dataset`; when a recorded drop
    removed it, say so (its source field's outgoing summary shows where it ended). A
    current field, the usual question, needs only the dataset's row."""
    if field in current_fields(conn, dataset) or field in known_fields(conn, dataset):
        return
    label = f"{dataset.namespace}.{dataset.name}"
    for operations in operation_sets(conn, [dataset.id], None).sets.values():
        drop = operations.dropped_by(field)
        if drop is not None:
            raise NotFound(
                f"field {field!r} is not a field of dataset {label}: operation {drop.index} "
                f"({drop.name!r}) dropped it before the dataset was written"
            )
    raise NotFound(f"field {field!r} is not a field of dataset {label}")


def dataset_names(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, DatasetRef]:
    found: dict[uuid.UUID, DatasetRef] = {}
    d = t.datasets
    for matches in id_filters(conn, d.c.id, ids):
        for row in conn.execute(sa.select(d.c.id, d.c.namespace, d.c.name).where(matches)):
            found[row.id] = DatasetRef(row.namespace, row.name)
    return found


def reading_destinations(
    conn: Connection, dataset: DatasetRef, window: Window | None
) -> set[uuid.UUID]:
    """Datasets whose recorded operations read `dataset` (each source has a dataset edge to
    the destination, even when every field read from it was dropped)."""
    e = edges_as_of(window)
    query = (
        sa.select(e.c.target_dataset_id)
        .where(
            e.c.source_dataset_id == dataset.id,
            e.c.source_field.is_(None),
            e.c.target_dataset_id.is_not(None),
            run_in_window(e.c.run_id, window),
        )
        .distinct()
    )
    return set(conn.execute(query).scalars())
