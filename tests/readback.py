"""Read stored facts back in a readable form, so tests can compare with hand-worked sets."""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa

from upstream.store import schema as t
from upstream.store.edge_rows import EDGES
from upstream.store.engine import Store
from upstream.store.packed_facets import unpacked_rows
from upstream.store.walks import flows


def stored_id(value: Any) -> Any:
    """An id as any revision's store hands it back to a table read as it is (reflected): its
    32 hex digits on SQLite before migration 0031, its 16 bytes after, a `uuid.UUID` on
    PostgreSQL; as one `uuid.UUID` for all three, and any other value as it is."""
    if isinstance(value, bytes) and len(value) == 16:
        return uuid.UUID(bytes=value)
    if isinstance(value, str) and len(value) == 32:
        return uuid.UUID(hex=value)
    return value


def stored_dataset_flows(store: Store) -> set[tuple[str, str]]:
    """`dataset_flows` of every dataset read by joining the stored ids, which holds at any
    revision (the readers bind ids as the newest revision stores them)."""
    query = (
        "SELECT s.namespace || '/' || s.name, d.namespace || '/' || d.name FROM flows AS f "
        "JOIN datasets AS s ON s.id = f.source_dataset_id "
        "JOIN datasets AS d ON d.id = f.target_dataset_id"
    )
    with store.read() as conn:
        return {(source, target) for source, target in conn.exec_driver_sql(query)}


def _names(conn: sa.Connection) -> tuple[dict[Any, str], dict[Any, str]]:
    datasets = {r.id: f"{r.namespace}/{r.name}" for r in conn.execute(sa.select(t.datasets))}
    jobs = {r.id: f"{r.namespace}/{r.name}" for r in conn.execute(sa.select(t.jobs))}
    return datasets, jobs


def edges(store: Store, *, implied: bool = False) -> set[tuple[str, str]]:
    """Stored edges as (source, target) labels: `ns/ds`, `ns/ds#field`, `job:ns/name`.

    Implied dataset edges (mirrors of field edges) are left out unless `implied`."""
    with store.read() as conn:
        datasets, jobs = _names(conn)
        rows = conn.execute(sa.select(EDGES)).mappings().all()
    result = set()
    for row in rows:
        if row["implied"] and not implied:
            continue
        ends = []
        for end in ("source", "target"):
            if row[f"{end}_type"] == "dataset":
                label = datasets[row[f"{end}_dataset_id"]]
                if row[f"{end}_field"] is not None:
                    label += f"#{row[f'{end}_field']}"
            else:
                label = "job:" + jobs[row[f"{end}_job_id"]]
            ends.append(label)
        result.add((ends[0], ends[1]))
    return result


def edge_rows(store: Store) -> list[dict[str, Any]]:
    with store.read() as conn:
        return [dict(r) for r in conn.execute(sa.select(EDGES)).mappings()]


def dataset_flows(store: Store, *names: str) -> set[tuple[str, str]]:
    """Dataset-level data flow (explicit or inferred) out of the named `ns/name` datasets, or
    of every dataset when none is named."""
    with store.read() as conn:
        datasets, _ = _names(conn)
        by_label = {v: k for k, v in datasets.items()}
        ids = [by_label[n] for n in names] if names else list(datasets)
        found = flows(conn, ids, "downstream")
    return {(datasets[f.source], datasets[f.target]) for f in found}


def relations(store: Store) -> set[tuple[str, str, str, str | None]]:
    """(dataset, job, access, run id or None) of every stored relation."""
    with store.read() as conn:
        datasets, jobs = _names(conn)
        rows = conn.execute(sa.select(t.relations)).mappings().all()
    return {
        (
            datasets[r["dataset_id"]],
            jobs[r["job_id"]],
            r["access"],
            str(r["run_id"]) if r["run_id"] else None,
        )
        for r in rows
    }


def counts(store: Store) -> dict[str, int]:
    """Row count of every table: to show a rejected request changed nothing. The watchers'
    cursor is left out: a server's watcher thread writes it on its own schedule, whatever a
    request did; so are the Kafka consumers' offsets and the fates of a publishing front's
    batches, bookkeeping of how events came, not lineage."""
    with store.read() as conn:
        return {
            table.name: conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in t.metadata.sorted_tables
            if table not in (t.watch_cursor, t.kafka_offsets, t.published_batches)
        }


def run_row(store: Store, run_id: str) -> dict[str, Any]:
    """A run's row, its facets unpacked (`store.packed_facets`)."""
    with store.read() as conn:
        row = conn.execute(sa.select(t.runs).where(t.runs.c.id == uuid.UUID(run_id))).mappings()
        rows = [dict(row.one())]
        unpacked_rows(conn, t.runs, rows)
        return rows[0]


def job_row(store: Store, namespace: str, name: str) -> dict[str, Any]:
    with store.read() as conn:
        query = sa.select(t.jobs).where(t.jobs.c.namespace == namespace, t.jobs.c.name == name)
        return dict(conn.execute(query).mappings().one())


def dataset_row(store: Store, namespace: str, name: str) -> dict[str, Any]:
    with store.read() as conn:
        query = sa.select(t.datasets).where(
            t.datasets.c.namespace == namespace, t.datasets.c.name == name
        )
        return dict(conn.execute(query).mappings().one())


def stored_run_ids(url: str) -> set[str]:
    """The run ids of every event kept in the database at `url`: what was acknowledged must
    be among them after an outage."""
    store = Store(url)
    try:
        with store.read() as conn:
            return {str(r) for r in conn.execute(sa.select(t.events.c.run_id)).scalars()}
    finally:
        store.dispose()
