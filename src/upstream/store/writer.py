"""Apply a batch of event facts in one transaction, with set-based statements.

Each table gets at most: one INSERT of the rows that are new (ON CONFLICT DO NOTHING), one
SELECT of the rows that already exist (locked FOR UPDATE on PostgreSQL, in id order so
concurrent writers never deadlock), and one UPDATE of the rows whose merged value changed.
The merge rules are `upstream.model.merge_rules`, pure functions the same on both databases;
this module only reads and writes rows.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection

from upstream.model.facts import (
    DatasetNode,
    EdgeFact,
    EventFacts,
    JobNode,
    RelationFact,
    RunFact,
)
from upstream.model.identity import DatasetRef, namespace_id
from upstream.model.json_text import parse
from upstream.model.merge_rules import (
    DATASET_CONTENT,
    JOB_CONTENT,
    TERMINAL,
    DatasetRecord,
    JobRecord,
    RelationRecord,
    RunRecord,
    VersionRecord,
    content_digest,
    declaration_replaces,
    merge_dataset,
    merge_job,
    merge_relation,
    merge_run,
    merge_version,
)
from upstream.model.read_position import KafkaOffset, ReadPosition
from upstream.store import schema as t
from upstream.store.aliases import canonical_batch
from upstream.store.change_log import DECLARATIONS, ENTITIES, RUNS, record
from upstream.store.declaration_history import record_declaration
from upstream.store.deletion import revive
from upstream.store.dialect import (
    ByIds,
    advisory_xact_locks,
    check_deferred_keys,
    defer_key_checks,
    for_update,
    in_id_order,
    insert_rows_ignoring,
)
from upstream.store.flow_writer import Owners, rederive_flows
from upstream.store.job_dependency_writer import store_job_dependencies
from upstream.store.lineage_writer import delete_links, store_lineage, write_pending_sets
from upstream.store.months import RUN_COLUMN, insert_by_month, month_of, run_months
from upstream.store.packed_facets import packed_rows, unpacked_rows
from upstream.store.payloads import pack
from upstream.store.version_contents import (
    content_id,
    read_contents,
    stage,
    write_pending_contents,
)

Row = dict[str, Any]
#: A record of `upstream.model.merge_rules`: a row as the table keeps it.
R = TypeVar("R", bound=Mapping[str, Any])
#: When an event of the batch was received.
ReceivedAt = Callable[[EventFacts], datetime]


@dataclass(frozen=True)
class WriteResult:
    """How many events of the batch were new, and how many were already stored; the keys
    of the new ones (a shared transaction tells each post its part by them)."""

    stored: int
    duplicates: int
    new_keys: frozenset[str] = frozenset()
    #: Identities the batch's symlinks made aliases (`upstream.store.aliases.forget_stale`).
    stale: frozenset[uuid.UUID] = frozenset()
    #: The change-log position a read must include to see the batch (`Store.write_at`).
    position: int = 0
    #: Where a publishing front's Kafka put the batch, instead of a position (design §6).
    published: tuple[KafkaOffset, ...] = ()

    def read_position(self) -> ReadPosition:
        """What a read names to see the batch: its Kafka offsets, else its position."""
        if self.published:
            return ReadPosition.of_offsets(self.published)
        return ReadPosition(change=self.position)


def write_facts(conn: Connection, batch: Sequence[EventFacts], now: datetime) -> WriteResult:
    """Store every fact of `batch`; events already stored (same content) change nothing."""
    unique: dict[str, EventFacts] = {}
    for facts in batch:
        unique.setdefault(facts.record.key, facts)
    new_keys = _insert_events(conn, list(unique.values()), now)
    fresh = [f for key, f in unique.items() if key in new_keys]
    stale = apply_facts(conn, fresh, now) if fresh else frozenset()
    return WriteResult(
        stored=len(fresh),
        duplicates=len(batch) - len(fresh),
        new_keys=frozenset(f.record.key for f in fresh),
        stale=stale,
    )


def apply_facts(
    conn: Connection,
    batch: list[EventFacts],
    now: datetime,
    received: Mapping[str, datetime] | None = None,
) -> frozenset[uuid.UUID]:
    """Derive the stored facts of events already kept in `events` (a write, or a rebuild
    replaying them); `now` is when they were received, or `received` says it by event key
    (a rebuild replaying, in one transaction, events that arrived in several): each event
    then counts as received at its own time, as when it was written. Returns the identities
    the batch's symlinks made aliases of another, whose earlier runs the caller re-derives.

    The rows of the batch's runs come first; the rows batches share (namespaces, jobs,
    datasets, declarations, sets) last, in one short step (`write_shared_rows`), so that
    concurrent writers naming the same jobs and datasets wait on each other only for that
    step and its commit, never for a whole batch. The keys from the runs' rows to the shared
    ones are checked after that step (`dialect.defer_key_checks`)."""
    defer_key_checks(conn)
    batch, stale = canonical_batch(conn, batch)
    at: ReceivedAt = (lambda _: now) if received is None else (lambda f: received[f.record.key])
    named: dict[datetime, set[uuid.UUID]] = defaultdict(set)
    for f in batch:
        named[at(f)].update(namespace_id(n) for n in f.namespaces)
        named[at(f)].update(d.ref.id for d in f.datasets)
        named[at(f)].update(j.ref.id for j in f.jobs)
    for moment, ids in named.items():
        revive(conn, ids, moment)
    runs, stored_runs = _merge_rows(
        conn, t.runs, _run_rows(batch, at), merge_run, changes=lambda run: run["has_events"]
    )
    _break_parent_loops(
        conn, batch, {key: row["parent_run_id"] for key, row in stored_runs.items()}
    )
    described = _runs_described(batch)
    # Every run the batch may re-derive, locked before its stored lineage is read.
    advisory_xact_locks(conn, described)
    observed = [f for f in batch if f.declaration is None]
    _merge(
        conn, t.relations, _relation_rows(r for f in observed for r in f.relations), merge_relation
    )
    for moment, received_together in _by_received(observed, at):
        store_lineage(conn, received_together, moment)
    rederive_flows(conn, Owners(runs=described))
    store_job_dependencies(conn, batch)
    _merge_versions(conn, _version_rows(batch, now))
    _run_operation_sets(conn, batch)
    record(conn, RUNS, runs | described)
    write_shared_rows(conn, batch, at)
    check_deferred_keys(conn)
    return stale


def write_shared_rows(conn: Connection, batch: list[EventFacts], at: ReceivedAt) -> None:
    """The last step of a write: the rows other batches name too, each table in id order.

    The namespaces, jobs and datasets the batch names (inserted, or merged where their
    content changed), its symlinks and operation sets; the declarations it makes (a
    JobEvent's or DatasetEvent's lineage replaces what the job or dataset declared,
    design §3.2) with their relations, lineage and flows; then the lineage sets its links
    point to (`lineage_writer.write_pending_sets`)."""
    entities = _namespaces(conn, batch, at)
    entities |= _merge(conn, t.jobs, _job_rows(batch, at), merge_job, content=JOB_CONTENT)
    entities |= _merge(
        conn, t.datasets, _dataset_rows(batch, at), merge_dataset, content=DATASET_CONTENT
    )
    symlinks = {s.id: s for f in batch for s in f.symlinks}
    new_symlinks = _insert_ignoring(
        conn,
        t.dataset_symlinks,
        {
            s.id: {
                "id": s.id,
                "dataset_id": s.dataset.id,
                "namespace": s.namespace,
                "name": s.name,
                "type": s.type,
            }
            for s in symlinks.values()
        },
    )
    entities |= {symlinks[i].dataset.id for i in new_symlinks}
    _operation_sets(conn, batch, at)
    declaring = [f for f in batch if f.declaration is not None]
    if declaring:
        _declare(conn, declaring, at)
    write_pending_sets(conn)
    write_pending_contents(conn)
    record(conn, ENTITIES, entities)
    record(conn, DECLARATIONS, _declaring(batch))


def _declare(conn: Connection, declaring: list[EventFacts], at: ReceivedAt) -> None:
    """Store the declarations of `declaring` (events that each declare a job's or a
    dataset's lineage): the latest by event time replaces the stored one, with its
    relations, lineage and flows."""
    advisory_xact_locks(conn, _declaring(declaring))
    owners = Owners()
    winners = _resolve_declarations(conn, declaring, owners, at)
    relations = (relation for facts in winners for relation in facts.relations)
    _merge(conn, t.relations, _relation_rows(relations), merge_relation)
    for moment, received_together in _by_received(winners, at):
        store_lineage(conn, received_together, moment)
    rederive_flows(conn, owners)


def _by_received(batch: list[EventFacts], at: ReceivedAt) -> list[tuple[datetime, list[EdgeFact]]]:
    """The edges of `batch` (in its order) grouped by when their events were received,
    earliest first: a rebuild replaying many transactions' events at once links each group
    as its own transaction did, and the sets and links keep the time it recorded."""
    groups: dict[datetime, list[EdgeFact]] = defaultdict(list)
    for facts in batch:
        groups[at(facts)].extend(facts.edges)
    return sorted(groups.items(), key=lambda group: group[0])


# -- events ---------------------------------------------------------------------------------


def _insert_events(conn: Connection, batch: list[EventFacts], now: datetime) -> set[str]:
    if not batch:
        return set()
    # Packed first, before this transaction locks any row (a batch of 500 takes 10 ms).
    packed = pack(conn, [f.record.payload for f in batch])
    # Every run the batch names (parents too) gets its month in one statement, in id order:
    # two batches that both name new runs then never wait on each other's in opposite orders.
    run_months(conn, {run.run_id: month_of(now) for f in batch for run in f.runs})
    rows = [
        {
            "event_key": f.record.key,
            "event_type": f.record.event_type,
            "event_kind": f.record.event_kind,
            "event_time": f.record.event_time,
            "received_at": now,
            "run_id": f.record.run_id,
            "job_namespace": f.record.job.namespace if f.record.job else None,
            "job_name": f.record.job.name if f.record.job else None,
            "dataset_namespace": f.record.dataset.namespace if f.record.dataset else None,
            "dataset_name": f.record.dataset.name if f.record.dataset else None,
            "payload_zstd": payload,
            "namespaces": f.record.namespaces,
            "io_namespaces": f.record.io_namespaces,
        }
        # In the batch's order: a rebuild replays them in the order of their seq, and must
        # apply them in the order this write does.
        for f, payload in zip(batch, packed, strict=True)
    ]
    return insert_by_month(conn, t.events, rows, "event_key")


# -- generic merge --------------------------------------------------------------------------


def _merge(
    conn: Connection,
    table: sa.Table,
    rows: dict[uuid.UUID, R],
    merge: Callable[[R, R], R],
    *,
    content: tuple[str, ...] | None = None,
) -> set[uuid.UUID]:
    """Insert rows that are new; merge the rest into what is stored, updating what changed.
    Returns the ids of the rows inserted or changed (`_merge_rows` says more)."""
    return _merge_rows(conn, table, rows, merge, content=content)[0]


def _merge_rows(
    conn: Connection,
    table: sa.Table,
    rows: dict[uuid.UUID, R],
    merge: Callable[[R, R], R],
    *,
    content: tuple[str, ...] | None = None,
    changes: Callable[[R], bool] | None = None,
) -> tuple[set[uuid.UUID], dict[uuid.UUID, R]]:
    """`_merge`, and the rows it inserted or read as they are stored after it (the runs'
    parents, which `_break_parent_loops` climbs from without reading them again).

    Most rows a batch names are already stored as they are (the workflow job every task
    names as parent, the datasets every run reads), so the rows are first read without a
    lock, and only those the merge changes are read again locked (in id order) and merged
    again. Concurrent writers then queue only on rows they really change, not on every
    shared row they mention.

    `content`: the columns `merge` may change, for a table whose rows most events name again
    (jobs and datasets). Each row keeps the hash of those columns (`content_digest`); a row
    named again with the hash stored is left alone without its documents being parsed, and
    only the others are parsed and merged — all read in one statement (`_current`). Other
    tables' rows are mostly new: inserted first, and only the ones already there read.

    `changes`: whether a row's merge changes what is stored whatever it is (a run's later
    event: its state, its end). On PostgreSQL such rows are read locked at once, in the
    statement that reads the others (`_stored_partly_locked`), not read and then read again
    locked."""
    if not rows:
        return set(), {}
    locked: set[uuid.UUID] = set()
    if content is not None:
        for row in rows.values():
            held = cast(Row, row)
            if held.get("content_digest") is None:  # else hashed once, with its part
                held["content_digest"] = content_digest(row, content)
        merge = _hashing(merge, content)
        current = _current(conn, table, rows)
        missing = {key: row for key, row in rows.items() if key not in current}
        inserted = _insert_ignoring(conn, table, missing)
        raced = set(missing) - inserted
        stored = {key: row for key, row in current.items() if row is not None}
        if raced:
            stored |= _stored(conn, table, in_id_order(raced), lock=False)
    else:
        inserted = _insert_ignoring(conn, table, rows)
        raced = set(rows) - inserted
        if changes is not None and conn.dialect.name == "postgresql":
            locked = {key for key in raced if changes(rows[key])}
        # Stored before (or by a concurrent writer meanwhile).
        stored = _stored_partly_locked(conn, table, raced, locked) if raced else {}
    changing = _changed(stored, rows, merge)
    unlocked = [key for key in in_id_order(changing) if key not in locked]
    if unlocked and conn.dialect.name == "postgresql":
        again = _changed(_stored(conn, table, unlocked, lock=True), rows, merge)
        changing = {key: row for key, row in changing.items() if key in locked} | again
    updates = list(changing.values())
    if updates:
        # A row kept by month is found in its month's partition alone.
        key = ["id", "month"] if table.name in RUN_COLUMN else ["id"]
        columns = [c.name for c in table.columns if c.name not in key]
        stmt = (
            table.update()
            .where(*(table.c[k] == sa.bindparam(f"b_{k}") for k in key))
            .values({c: sa.bindparam(f"b_{c}") for c in columns})
        )
        stored_rows = packed_rows(conn, table, updates)
        conn.execute(stmt, [{f"b_{k}": v for k, v in row.items()} for row in stored_rows])
    after = {key: rows[key] for key in inserted} | stored | changing
    return inserted | set(changing), after


def _hashing(merge: Callable[[R, R], R], content: tuple[str, ...]) -> Callable[[R, R], R]:
    """`merge`, with the merged row's content hash written into it."""

    def merged(stored: R, new: R) -> R:
        row = merge(stored, new)
        cast(Row, row)["content_digest"] = content_digest(row, content)
        return row

    return merged


def _current(
    conn: Connection, table: sa.Table, rows: Mapping[uuid.UUID, Mapping[str, Any]]
) -> dict[uuid.UUID, Any]:
    """The stored rows among `rows`' ids, read in one statement, as `_stored` gives them;
    None for a row whose stored content hash is the one `rows` holds (the merge changes
    nothing), whose JSON documents are then not parsed: they come as text."""
    found: dict[uuid.UUID, Any] = {}
    documents = [c.name for c in table.columns if isinstance(c.type, sa.JSON)]
    for result in _lookup(table, "current").run(conn, rows):
        for row in result.mappings():
            if row["content_digest"] == rows[row["id"]]["content_digest"]:
                found[row["id"]] = None
                continue
            record = dict(row)
            for name in documents:
                record[name] = parse(record[name])
            found[row["id"]] = record
    return found


def _stored(
    conn: Connection, table: sa.Table, ids: list[uuid.UUID], *, lock: bool
) -> dict[uuid.UUID, Any]:
    """The stored rows among `ids` (locked, in id order, when `lock`), as the records of
    `upstream.model.merge_rules` (the same keys as the table)."""
    found: dict[uuid.UUID, Any] = {}
    locking = lock and conn.dialect.name == "postgresql"
    for result in _lookup(table, "locked" if locking else "rows").run(conn, ids):
        rows = [dict(row) for row in result.mappings()]
        unpacked_rows(conn, table, rows)
        found.update((row["id"], row) for row in rows)
    return found


def _stored_partly_locked(
    conn: Connection, table: sa.Table, ids: set[uuid.UUID], locked: set[uuid.UUID]
) -> dict[uuid.UUID, Any]:
    """`_stored` of `ids`, those among them in `locked` locked (PostgreSQL), in one
    statement: the locked ones, in id order, then the others."""
    if not locked or locked == ids:
        return _stored(conn, table, in_id_order(ids), lock=bool(locked))
    found: dict[uuid.UUID, Any] = {}
    others = ids - locked
    for result in _lookup(table, "partly locked").run(conn, others, locked=list(locked)):
        rows = [dict(row) for row in result.mappings()]
        unpacked_rows(conn, table, rows)
        found.update((row["id"], row) for row in rows)
    return found


#: The lookups of `_current` and `_stored`, by table and kind (`_lookup`).
_LOOKUPS: dict[tuple[str, str], ByIds] = {}


def _lookup(table: sa.Table, kind: str) -> ByIds:
    """The statement, made once, that reads `table`'s rows by id: the whole rows with their
    JSON documents as text (`current`), the whole rows in id order (`rows`), or those rows
    locked (`locked`,
    PostgreSQL's FOR NO KEY UPDATE: the key checks of writers whose rows name them do not
    wait)."""
    made = _LOOKUPS.get((table.name, kind))
    if made is None:
        if kind == "partly locked":
            made = ByIds(table.c.id, _partly_locked(table))
        elif kind == "current":
            as_text = [
                sa.cast(c, sa.Text).label(c.name) if isinstance(c.type, sa.JSON) else c
                for c in table.columns
            ]
            made = ByIds(table.c.id, lambda ids: sa.select(*as_text).where(ids))
        else:
            locked = kind == "locked"
            made = ByIds(
                table.c.id,
                lambda ids: (
                    sa.select(table).where(ids).order_by(table.c.id).with_for_update(key_share=True)
                    if locked
                    else sa.select(table).where(ids).order_by(table.c.id)
                ),
            )
        _LOOKUPS[(table.name, kind)] = made
    return made


def _partly_locked(table: sa.Table) -> Callable[[sa.ColumnElement[bool]], sa.Executable]:
    """PostgreSQL's read of the rows named by `ids` and, locked (FOR NO KEY UPDATE, in id
    order), those named by the parameter `locked`."""
    wanted = sa.bindparam("locked", type_=postgresql.ARRAY(table.c.id.type))
    locked = (
        sa.select(table)
        .where(table.c.id == sa.any_(wanted))
        .order_by(table.c.id)
        .with_for_update(key_share=True)
        .cte("locked")
    )
    return lambda ids: sa.select(locked).union_all(sa.select(table).where(ids))


def _changed(
    stored: dict[uuid.UUID, R], rows: dict[uuid.UUID, R], merge: Callable[[R, R], R]
) -> dict[uuid.UUID, R]:
    """The merged rows that differ from what is stored."""
    changed: dict[uuid.UUID, R] = {}
    for key, current in stored.items():
        merged = merge(current, rows[key])
        if merged != current:
            changed[key] = merged
    return changed


def _insert_ignoring(
    conn: Connection, table: sa.Table, rows: Mapping[uuid.UUID, Mapping[str, Any]]
) -> set[Any]:
    """Insert in id order (a stable lock order); return the ids that were new."""
    if not rows:
        return set()
    ordered = packed_rows(conn, table, [rows[k] for k in in_id_order(rows)])
    if table.name in RUN_COLUMN:
        return insert_by_month(conn, table, ordered, "id")
    return insert_rows_ignoring(conn, table, ordered, "id")


def _fold(rows: dict[uuid.UUID, R], row: R, merge: Callable[[R, R], R]) -> None:
    """Combine facts about one entity from several events of the batch, in batch order.
    Rows of the same content (their parts' `content_digest`) merge into that content (the
    merge rules take each column from one of them); other merges are hashed by `_merge`."""
    key: uuid.UUID = row["id"]
    previous = rows.get(key)
    if previous is None:
        rows[key] = row
        return
    merged = merge(previous, row)
    digest = cast(Row, previous).get("content_digest")
    if digest is not None and digest != cast(Row, row).get("content_digest"):
        del cast(Row, merged)["content_digest"]
    rows[key] = merged


# -- namespaces, jobs, datasets -------------------------------------------------------------


def _namespaces(conn: Connection, batch: list[EventFacts], at: ReceivedAt) -> set[uuid.UUID]:
    """Store the namespaces the batch names; the ids of those that were new."""
    rows: dict[uuid.UUID, Row] = {}
    for f in batch:
        for n in f.namespaces:
            now = at(f)
            rows.setdefault(
                namespace_id(n),
                {"id": namespace_id(n), "name": n, "created_at": now, "updated_at": now},
            )
    return _insert_ignoring(conn, t.namespaces, rows)


def _job_rows(batch: list[EventFacts], at: ReceivedAt) -> dict[uuid.UUID, JobRecord]:
    rows: dict[uuid.UUID, JobRecord] = {}
    for facts in batch:
        now = at(facts)
        for job in facts.jobs:
            _fold(
                rows,
                JobRecord(
                    id=job.ref.id,
                    namespace_id=namespace_id(job.ref.namespace),
                    namespace=job.ref.namespace,
                    name=job.ref.name,
                    description=job.description,
                    job_type=job.job_type,
                    integration=job.integration,
                    processing_type=job.processing_type,
                    seen_as_parent=job.seen_as_parent,
                    facets=job.facets,
                    content_digest=job.content_digest,
                    declared_at=None,
                    declared_lineage_facet=False,
                    created_at=now,
                    updated_at=now,
                ),
                merge_job,
            )
    return rows


def _dataset_rows(batch: list[EventFacts], at: ReceivedAt) -> dict[uuid.UUID, DatasetRecord]:
    rows: dict[uuid.UUID, DatasetRecord] = {}
    for facts in batch:
        now = at(facts)
        for dataset in facts.datasets:
            _fold(
                rows,
                DatasetRecord(
                    id=dataset.ref.id,
                    namespace_id=namespace_id(dataset.ref.namespace),
                    namespace=dataset.ref.namespace,
                    name=dataset.ref.name,
                    description=dataset.description,
                    source_name=dataset.source_name,
                    fields=dataset.fields if dataset.fields is not None else [],
                    facets=dataset.facets,
                    content_digest=dataset.content_digest,
                    declared_at=None,
                    created_at=now,
                    updated_at=now,
                ),
                merge_dataset,
            )
    return rows


# -- runs -----------------------------------------------------------------------------------


def _run_rows(batch: list[EventFacts], at: ReceivedAt) -> dict[uuid.UUID, RunRecord]:
    rows: dict[uuid.UUID, RunRecord] = {}
    for facts in batch:
        for run in facts.runs:
            _fold(rows, _run_row(run, at(facts)), merge_run)
    return rows


def _run_row(run: RunFact, now: datetime) -> RunRecord:
    active = run.has_events
    return {
        "id": run.run_id,
        "job_id": run.job.id,
        "parent_run_id": run.parent_run_id,
        "root_run_id": run.root_run_id,
        "state": run.event_type if active else None,
        "state_time": run.event_time if active and run.event_type else None,
        "started_at": run.event_time if active else None,
        "ended_at": run.event_time if active and run.event_type in TERMINAL else None,
        "nominal_start": run.nominal_start,
        "nominal_end": run.nominal_end,
        "facets": run.facets,
        "has_events": active,
        "has_lineage_facet": run.has_lineage_facet,
        "created_at": now,
        "updated_at": now,
    }


_PARENTS = ByIds(t.runs.c.id, lambda ids: sa.select(t.runs.c.id, t.runs.c.parent_run_id).where(ids))


def _break_parent_loops(
    conn: Connection, batch: list[EventFacts], known: Mapping[uuid.UUID, uuid.UUID | None]
) -> None:
    """Parent chains never loop (design §3.4): a link that would close a cycle is dropped.

    All chains of the batch climb together, one query per level of nesting, from the
    parents `known` (the stored parent of each run the batch names, its parents included:
    a task's run climbs to its workflow's run without a query) to those read."""
    climbing = {r.run_id: r.parent_run_id for f in batch for r in f.runs if r.parent_run_id}
    looped: set[uuid.UUID] = set()
    seen: dict[uuid.UUID, set[uuid.UUID]] = {child: {child} for child in climbing}
    frontier: dict[uuid.UUID, uuid.UUID] = {c: p for c, p in climbing.items() if p is not None}
    parents = dict(known)
    while frontier:
        for rows in _PARENTS.run(conn, {a for a in frontier.values() if a not in parents}):
            parents.update({row.id: row.parent_run_id for row in rows})
        next_frontier: dict[uuid.UUID, uuid.UUID] = {}
        for child, ancestor in frontier.items():
            if ancestor in seen[child]:
                looped.add(child)
                continue
            seen[child].add(ancestor)
            above = parents.get(ancestor)
            if above is not None:
                next_frontier[child] = above
        frontier = next_frontier
    for child in sorted(looped):
        conn.execute(t.runs.update().where(t.runs.c.id == child).values(parent_run_id=None))
    record(conn, RUNS, looped)


# -- declarations, relations, edges ---------------------------------------------------------


def _runs_described(batch: list[EventFacts]) -> set[uuid.UUID]:
    """The runs whose flows the batch may change: those with events in it, and any run
    one of its relations or run edges belongs to."""
    runs = {r.run_id for f in batch for r in f.runs if r.has_events}
    runs |= {r.run_id for f in batch for r in f.relations if r.run_id is not None}
    runs |= {e.run_id for f in batch for e in f.edges if e.scope == "run" and e.run_id}
    return runs


def _declaring(batch: list[EventFacts]) -> set[uuid.UUID]:
    """The jobs and datasets whose declaration the batch may replace."""
    return {f.declaration.owner.id for f in batch if f.declaration is not None}


def _resolve_declarations(
    conn: Connection, batch: list[EventFacts], owners: Owners, at: ReceivedAt
) -> list[EventFacts]:
    """A job's or dataset's declared lineage is replaced by the latest declaration by event
    time (design §3.2), and every declaration is kept in the history
    (`upstream.store.declaration_history`). `batch` holds events that declare. Returns the
    events whose edges and relations to keep and adds the declarations that replaced the
    stored ones to `owners`."""
    kept: list[EventFacts] = []
    winners: dict[tuple[str, uuid.UUID], EventFacts] = {}
    for facts in batch:
        decl = facts.declaration
        assert decl is not None
        record_declaration(
            conn,
            decl,
            [_edge_row(edge, at(facts)) for edge in facts.edges],
            [dict(row) for row in _relation_rows(facts.relations).values()],
        )
        key = (decl.scope, decl.owner.id)
        best = winners.get(key)
        in_force = best.declaration.event_time if best and best.declaration else None
        if declaration_replaces(in_force, decl.event_time):
            winners[key] = facts
    for (scope, owner), facts in sorted(winners.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        decl = facts.declaration
        assert decl is not None
        table = t.jobs if scope == "job" else t.datasets
        stored = conn.execute(
            for_update(conn, sa.select(table.c.declared_at).where(table.c.id == owner))
        ).scalar()
        if not declaration_replaces(stored, decl.event_time):
            continue  # an older declaration arrived late: the newer one stands
        if scope == "job":
            delete_links(conn, "job", owner)
            conn.execute(
                t.relations.delete().where(
                    t.relations.c.job_id == owner, t.relations.c.run_id.is_(None)
                )
            )
            conn.execute(
                t.jobs.update()
                .where(t.jobs.c.id == owner)
                .values(declared_at=decl.event_time, declared_lineage_facet=decl.has_lineage_facet)
            )
            owners.jobs.add(owner)
        else:
            delete_links(conn, "dataset", owner)
            conn.execute(
                t.datasets.update()
                .where(t.datasets.c.id == owner)
                .values(declared_at=decl.event_time)
            )
            owners.datasets.add(owner)
        kept.append(facts)
    return kept


def _relation_rows(relations: Iterable[RelationFact]) -> dict[uuid.UUID, RelationRecord]:
    rows: dict[uuid.UUID, RelationRecord] = {}
    for rel in relations:
        _fold(
            rows,
            RelationRecord(
                id=rel.id,
                dataset_id=rel.dataset.id,
                job_id=rel.job.id,
                run_id=rel.run_id,
                access=rel.access,
                component=rel.component,
                lifecycles=[rel.lifecycle] if rel.lifecycle else None,
                temporary=rel.temporary,
                origin=rel.origin,
                facets=rel.facets,
                event_time=rel.event_time,
                version=rel.version,
            ),
            merge_relation,
        )
    return rows


def _edge_row(edge: EdgeFact, now: datetime) -> Row:
    row: Row = {
        "id": edge.id,
        "scope": edge.scope,
        "run_id": edge.run_id,
        "job_id": edge.job.id if edge.job else None,
        "origin": edge.origin,
        "rank": edge.rank,
        "implied": edge.implied,
        "transformations": edge.transformations,
        "created_at": now,
    }
    for end, node in (("source", edge.source), ("target", edge.target)):
        if isinstance(node, DatasetNode):
            row.update(
                {
                    f"{end}_type": "dataset",
                    f"{end}_dataset_id": node.dataset.id,
                    f"{end}_field": node.field,
                    f"{end}_job_id": None,
                    f"{end}_run_id": None,
                }
            )
        else:
            assert isinstance(node, JobNode)
            row.update(
                {
                    f"{end}_type": "job",
                    f"{end}_dataset_id": None,
                    f"{end}_field": None,
                    f"{end}_job_id": node.job.id,
                    f"{end}_run_id": node.run_id,
                }
            )
    return row


# -- versions and operation sets ------------------------------------------------------------


def _version_rows(batch: list[EventFacts], now: datetime) -> dict[uuid.UUID, VersionRecord]:
    rows: dict[uuid.UUID, VersionRecord] = {}
    for facts in batch:
        for version in facts.versions:
            _fold(
                rows,
                VersionRecord(
                    id=version.id,
                    dataset_id=version.dataset.id,
                    run_id=version.run_id,
                    fields=version.fields or [],
                    facets=version.facets,
                    lifecycle=version.lifecycle,
                    created_at=version.event_time,
                ),
                merge_version,
            )
    return rows


def _merge_versions(conn: Connection, rows: dict[uuid.UUID, VersionRecord]) -> None:
    """`_merge` for dataset versions, whose fields and facets are kept apart, once per
    distinct content (`upstream.store.version_contents`): a version row names its content,
    which is staged here and stored, if new, in the write's last step."""
    if not rows:
        return
    stored_rows = _with_contents(conn, rows)
    inserted = _insert_ignoring(conn, t.dataset_versions, stored_rows)
    differing = _differing_versions(conn, sorted(set(rows) - inserted), stored_rows)
    changing = _changed(_stored_versions(conn, differing, lock=False), rows, merge_version)
    if changing and conn.dialect.name == "postgresql":
        locked = _stored_versions(conn, sorted(changing), lock=True)
        changing = _changed(locked, rows, merge_version)
    if changing:
        v = t.dataset_versions
        conn.execute(
            v.update()
            .where(v.c.id == sa.bindparam("b_id"), v.c.month == sa.bindparam("b_month"))
            .values(content_id=sa.bindparam("b_content"), lifecycle=sa.bindparam("b_lifecycle")),
            [
                {
                    "b_id": key,
                    "b_month": row["month"],
                    "b_content": row["content_id"],
                    "b_lifecycle": row["lifecycle"],
                }
                for key, row in sorted(_with_contents(conn, changing).items())
            ],
        )


def _with_contents(
    conn: Connection, versions: Mapping[uuid.UUID, VersionRecord]
) -> dict[uuid.UUID, Row]:
    """The rows of `versions` as `dataset_versions` keeps them, each naming its content by
    id; the contents are staged for the write's last step."""
    rows: dict[uuid.UUID, Row] = {}
    contents: dict[uuid.UUID, tuple[Any, Any]] = {}
    for key, version in versions.items():
        row: Row = dict(version)
        fields, facets = row.pop("fields"), row.pop("facets")
        row["content_id"] = content_id(fields, facets)
        contents.setdefault(row["content_id"], (fields, facets))
        rows[key] = row
    stage(conn, contents)
    return rows


_VERSION_STATES = ByIds(
    t.dataset_versions.c.id,
    lambda ids: sa.select(
        t.dataset_versions.c.id, t.dataset_versions.c.content_id, t.dataset_versions.c.lifecycle
    ).where(ids),
)


def _differing_versions(
    conn: Connection, ids: list[uuid.UUID], rows: Mapping[uuid.UUID, Row]
) -> list[uuid.UUID]:
    """The stored versions among `ids` that `rows` may change: a version whose content and
    lifecycle the row restates (a COMPLETE repeating its START's output) merges into
    itself, so its content is not read back."""
    differing: list[uuid.UUID] = []
    for result in _VERSION_STATES.run(conn, ids):
        for row in result:
            new = rows[row.id]
            if row.content_id != new["content_id"] or new["lifecycle"] not in (None, row.lifecycle):
                differing.append(row.id)
    return sorted(differing)


def _stored_versions(
    conn: Connection, ids: list[uuid.UUID], *, lock: bool
) -> dict[uuid.UUID, VersionRecord]:
    """The stored versions among `ids` as records, their fields and facets read back."""
    if not ids:
        return {}
    stored = _stored(conn, t.dataset_versions, ids, lock=lock)
    contents = read_contents(conn, {row["content_id"] for row in stored.values()})
    for row in stored.values():
        row["fields"], row["facets"] = contents[row.pop("content_id")]
    return stored


def _operation_sets(conn: Connection, batch: list[EventFacts], at: ReceivedAt) -> None:
    """The operation sets the batch records, once per checksum (shared rows)."""
    sets: dict[uuid.UUID, Row] = {}
    for facts in batch:
        now = at(facts)
        for op in facts.operation_sets:
            sets.setdefault(
                op.id,
                {
                    "id": op.id,
                    "dataset_id": op.dataset.id,
                    "checksum": op.checksum,
                    "operations": op.operations,
                    "created_at": now,
                },
            )
    _insert_ignoring(conn, t.operation_sets, sets)


def _run_operation_sets(conn: Connection, batch: list[EventFacts]) -> None:
    """Each run's links to the operation sets it recorded."""
    links: dict[uuid.UUID, Row] = {}
    for facts in batch:
        for op in facts.operation_sets:
            links.setdefault(
                op.link_id,
                {
                    "id": op.link_id,
                    "operation_set_id": op.id,
                    "run_id": op.run_id,
                    "job_id": op.job.id,
                    "component": op.component,
                    "event_time": op.event_time,
                },
            )
    _insert_ignoring(conn, t.run_operation_sets, links)


def dataset_ref_of(row: Row) -> DatasetRef:
    return DatasetRef(row["namespace"], row["name"])
