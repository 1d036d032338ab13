"""The relational schema of design §2, in SQLAlchemy Core.

Entity ids are deterministic UUIDs computed from natural keys (see `upstream.model.identity`),
so every API process derives the same id without a round trip and batch writes need no
lookups; every id column is an `Id`, 16 bytes on both databases. The id is the uniqueness of
a name, so no index holds the names themselves: names of any length are accepted (a B-tree
entry on PostgreSQL is limited to about 2.7 kB).
Timestamps are stored in UTC and read back timezone-aware in UTC on both databases (`Timestamp`).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from upstream.model.timeexpr import in_utc

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

#: JSON documents: JSONB on PostgreSQL (indexable, compact), JSON text on SQLite.
Json = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
#: The same, where a missing document is SQL NULL (so `IS NULL` finds it), not JSON `null`.
NullableJson = sa.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True), "postgresql"
)


class _BlobId(sa.TypeDecorator[uuid.UUID]):
    """A uuid as its 16 bytes in a BLOB, SQLite's form of `Id`. SQLAlchemy's own `Uuid` keeps
    32 hex digits there (CHAR(32)): twice the bytes in every row and every index that holds
    an id, which made most of the difference between the two stores (migration 0031)."""

    impl = sa.LargeBinary
    cache_ok = True

    @property
    def python_type(self) -> type[uuid.UUID]:
        return uuid.UUID

    def bind_processor(self, dialect: Any) -> Any:
        return _id_bytes

    def result_processor(self, dialect: Any, coltype: Any) -> Any:
        return _bytes_id

    def literal_processor(self, dialect: Any) -> Any:
        return _id_literal


def _id_bytes(value: uuid.UUID | None) -> bytes | None:
    return None if value is None else value.bytes


def _bytes_id(value: bytes | None) -> uuid.UUID | None:
    return None if value is None else uuid.UUID(bytes=value)


def _id_literal(value: uuid.UUID) -> str:
    return f"X'{value.hex}'"


#: An id: PostgreSQL's native `uuid`, SQLite's 16-byte BLOB (`_BlobId`); `uuid.UUID` in Python.
Id = sa.Uuid().with_variant(_BlobId(), "sqlite")


class Timestamp(sa.TypeDecorator[datetime]):
    """An instant, stored in UTC and handed back aware in UTC on both databases. SQLite keeps
    no offset, so without this its values come back naive and every reader would have to
    say they are UTC; a value bound without an offset is taken as UTC too."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else in_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        return None if value is None else in_utc(value)


def _checked_at_commit(target: str) -> sa.ForeignKey:
    """A key from a run's row to a row batches share (a job, a dataset, a set): a write
    stores its runs' rows before the shared ones (`upstream.store.writer.write_shared_rows`),
    so it checks these keys after that step; any other statement checks them at once
    (migration 0013)."""
    return sa.ForeignKey(target, deferrable=True, initially="IMMEDIATE")


namespaces = sa.Table(
    "namespaces",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)


def _content_digest() -> sa.Column[str]:
    """The hash of what events may change in a dataset's or job's row (its facets, fields,
    description, type: `upstream.store.writer`). Most events name a dataset or job again
    unchanged; the writer recognises those by the hash instead of reading their facets back.
    NULL (a row written before the column existed) never matches, so such a row is read and
    merged as before, and gets its hash then."""
    return sa.Column("content_digest", sa.Text)


datasets = sa.Table(
    "datasets",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("namespace_id", Id, sa.ForeignKey("namespaces.id"), nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text),
    sa.Column("source_name", sa.Text),
    # Current fields: [{"name", "type", "description", "fields": [...]}] from the schema facet
    # or from recorded field operations.
    sa.Column("fields", Json, nullable=False),
    # Current facets by name; a facet re-sent under the same name replaces the old one.
    sa.Column("facets", Json, nullable=False),
    _content_digest(),
    # eventTime of the DatasetEvent whose lineage facet is the dataset's declared lineage.
    sa.Column("declared_at", Timestamp),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("namespace_id", Id, sa.ForeignKey("namespaces.id"), nullable=False),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("description", sa.Text),
    # jobType facet: jobType (DAG, TASK, JOB, QUERY, MODEL…), integration, processingType.
    sa.Column("job_type", sa.Text),
    sa.Column("integration", sa.Text),
    sa.Column("processing_type", sa.Text),
    # Named as the parent of another job's run: a workflow unless its jobType says it is a leaf.
    sa.Column("seen_as_parent", sa.Boolean, nullable=False),
    sa.Column("facets", Json, nullable=False),
    _content_digest(),
    # eventTime of the JobEvent that set the job's declared lineage (the latest one wins), and
    # whether that declaration carried a lineage facet (then no inputs x outputs is inferred).
    sa.Column("declared_at", Timestamp),
    sa.Column("declared_lineage_facet", sa.Boolean, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", Id, primary_key=True),
    # The month the row's run was first received in (`upstream.store.months`); part of the key.
    sa.Column("month", sa.Integer, primary_key=True),
    sa.Column("job_id", Id, _checked_at_commit("jobs.id"), nullable=False, index=True),
    # Parent run (the workflow run, or an intermediate task) and the root of the chain. No
    # index: a run's children are found in the graph index, which reads every run's parent
    # (`upstream.store.graph_rows`), never by a query (migration 0028).
    sa.Column("parent_run_id", Id),
    sa.Column("root_run_id", Id),
    # Latest eventType by eventTime: START, RUNNING, COMPLETE, FAIL, ABORT, OTHER.
    sa.Column("state", sa.Text),
    sa.Column("state_time", Timestamp),
    sa.Column("started_at", Timestamp),
    sa.Column("ended_at", Timestamp),
    sa.Column("nominal_start", Timestamp),
    sa.Column("nominal_end", Timestamp),
    # Its facets, compressed (`store.packed_facets`): read only whole, by the run's id.
    sa.Column("facets", sa.LargeBinary, nullable=False),
    # False for a run known only as someone's parent: its own events have not arrived.
    sa.Column("has_events", sa.Boolean, nullable=False),
    # Any event of this run carried job.facets.lineage: never infer inputs x outputs for it.
    sa.Column("has_lineage_facet", sa.Boolean, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
    sa.Index("ix_runs_window", "started_at", "ended_at"),
)

relations = sa.Table(
    "relations",
    metadata,
    # CDAP's access relation (dataset, job, run, access, component). run_id is NULL for the
    # inputs/outputs a JobEvent declares.
    sa.Column("id", Id, primary_key=True),
    # The month the row's run was first received in (`upstream.store.months`); part of the key.
    sa.Column("month", sa.Integer, primary_key=True),
    sa.Column("dataset_id", Id, _checked_at_commit("datasets.id"), nullable=False, index=True),
    sa.Column("job_id", Id, _checked_at_commit("jobs.id"), nullable=False, index=True),
    sa.Column("run_id", Id, index=True),
    sa.Column("access", sa.Text, nullable=False),
    sa.Column("component", sa.Text, nullable=False),
    # Every lifecycleStateChange this run reported for the output, each once and sorted, so
    # the order events arrive in does not matter (["CREATE", "DROP"]: created on START,
    # dropped on COMPLETE); NULL when none.
    sa.Column("lifecycles", NullableJson),
    # The producer marked the dataset temporary to the run's workflow run (design §3.4).
    sa.Column("temporary", sa.Boolean, nullable=False),
    # Why the relation exists: "io" (event inputs/outputs) or "edge" (implied by an edge).
    sa.Column("origin", sa.Text, nullable=False),
    # inputFacets / outputFacets seen with the dataset in this run, compressed as a run's
    # facets are (`store.packed_facets`).
    sa.Column("facets", sa.LargeBinary, nullable=False),
    sa.Column("event_time", Timestamp, nullable=False),
    # The dataset version the producer named (`version` facet's datasetVersion): which
    # version a run read, or the one it wrote (run lineage, design §4.5).
    sa.Column("version", sa.Text),
    # The few relations with a named component, found by dataset without reading the rest:
    # a walk asks which of its relations have one (`upstream.store.walks`).
    sa.Index(
        "ix_relations_named_component",
        "dataset_id",
        postgresql_where=sa.text("component <> ''"),
        sqlite_where=sa.text("component <> ''"),
    ),
    # The few relations that may make their dataset temporary to a workflow run (a mark or
    # a lifecycle state), found by dataset: every answer asks which of its datasets are.
    sa.Index(
        "ix_relations_marked",
        "dataset_id",
        postgresql_where=sa.text("temporary OR lifecycles IS NOT NULL"),
        sqlite_where=sa.text('"temporary" = 1 OR lifecycles IS NOT NULL'),
    ),
)


def _job_end_indexes(table: str) -> list[sa.Index]:
    """An index on each job end of an edge, holding only the edges that have one. Nearly
    every edge has none: indexed with them, SQLite's statistics say a job's edges are every
    edge (the NULL ids all count as one value), and it rebuilt an index of the whole table at
    each walk rather than use this one."""
    return [
        sa.Index(
            f"ix_{table}_{column}",
            column,
            postgresql_where=sa.text(f"{column} IS NOT NULL"),
            sqlite_where=sa.text(f"{column} IS NOT NULL"),
        )
        for column in ("source_job_id", "target_job_id")
    ]


def _edge_ends() -> list[sa.Column[object]]:
    """The columns of one edge without its owner and its transformations: origin, ends."""
    return [
        # "lineage_facet", "field_operations", "column_lineage" or "sql"; rank orders
        # precedence per output.
        sa.Column("origin", sa.Text, nullable=False),
        sa.Column("rank", sa.SmallInteger, nullable=False),
        # A dataset->dataset edge that exists because field edges connect the two datasets.
        sa.Column("implied", sa.Boolean, nullable=False),
        sa.Column("source_type", sa.Text, nullable=False),
        sa.Column("source_dataset_id", Id, index=True),
        sa.Column("source_field", sa.Text),
        sa.Column("source_job_id", Id),
        sa.Column("source_run_id", Id),
        sa.Column("target_type", sa.Text, nullable=False),
        sa.Column("target_dataset_id", Id, index=True),
        sa.Column("target_field", sa.Text),
        sa.Column("target_job_id", Id),
        sa.Column("target_run_id", Id),
    ]


def _transformations() -> sa.Column[object]:
    """How an edge's target is made from its source (columnLineage's `transformations`)."""
    return sa.Column("transformations", Json, nullable=False)


lineage_sets = sa.Table(
    "lineage_sets",
    metadata,
    # What one owner stated about one output, stored once per distinct content (design §6,
    # `upstream.model.lineage_sets`): ten runs that send the same columnLineage share a set.
    # The id is made from the checksum of the set's edges.
    sa.Column("id", Id, primary_key=True),
    sa.Column("checksum", sa.Text, nullable=False),
    # The output the set describes (NULL for edges into a job) and its highest rank.
    sa.Column("target_dataset_id", Id),
    sa.Column("rank", sa.SmallInteger, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
)

lineage_set_edges = sa.Table(
    "lineage_set_edges",
    metadata,
    # The explicit data flow of a set, source -> target, where either end is a dataset, a
    # dataset field or a job (design §2, §3.2), in the set's canonical order (`position`).
    # A set's edges are written once, all together, by the one writer whose insert of the
    # set's row took (`lineage_writer`), and read and deleted only as a whole set,
    # so they have no key: an index of their set alone is all any read needs, and on
    # PostgreSQL it keeps each set's id once with its rows' places (a B-tree deduplicates
    # equal keys), a fifth of what a key of (set, position) took (migration 0032).
    sa.Column("set_id", Id, sa.ForeignKey("lineage_sets.id"), nullable=False, index=True),
    sa.Column("position", sa.Integer, nullable=False),
    *_edge_ends(),
    # Its transformations, kept once per distinct value (`edge_transformations`).
    sa.Column("transformations_id", Id, nullable=False),
    *_job_end_indexes("lineage_set_edges"),
    # The few edges with a job end, which every dataset walk steps over: without these the
    # walk's recursive statement scanned every field edge for them at each call.
    sa.Index(
        "ix_lineage_set_edges_from_job",
        "target_dataset_id",
        postgresql_where=sa.text("source_type = 'job'"),
        sqlite_where=sa.text("source_type = 'job'"),
    ),
    sa.Index(
        "ix_lineage_set_edges_to_job",
        "source_dataset_id",
        postgresql_where=sa.text("target_type = 'job'"),
        sqlite_where=sa.text("target_type = 'job'"),
    ),
)

edge_transformations = sa.Table(
    "edge_transformations",
    metadata,
    # The set edges' transformations, once per distinct value (migration 0029): ten values in
    # all of the medium benchmark's 65,000 edges, 59 bytes a row as `jsonb`. The id is the
    # hash of the value's JSON text (`upstream.store.lineage_writer`). A row is never deleted
    # (not by a rebuild, not by a prune), so the edges need no foreign key to find theirs.
    sa.Column("id", Id, primary_key=True),
    _transformations(),
)

lineage_links = sa.Table(
    "lineage_links",
    metadata,
    # Which owner stated which set for which output: one row per (scope, owner, output).
    # "run": observed in run_id; "job": declared by a JobEvent of job_id; "dataset": declared
    # by a DatasetEvent for the output. The id hashes those three.
    sa.Column("id", Id, primary_key=True),
    # The month the row's run was first received in (`upstream.store.months`); part of the key.
    sa.Column("month", sa.Integer, primary_key=True),
    sa.Column("scope", sa.Text, nullable=False),
    # The run, the job or the dataset: what a declaration replaces as a whole. A "run" link's
    # run is its owner, not stored again (`owned_run`, migration 0030).
    sa.Column("owner_id", Id, index=True),
    # The job that stated the set: no read asks for a job's links, so no index (migration
    # 0028).
    sa.Column("job_id", Id),
    sa.Column("target_dataset_id", Id),
    sa.Column("set_id", Id, _checked_at_commit("lineage_sets.id"), nullable=False, index=True),
    sa.Column("rank", sa.SmallInteger, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
)


def owned_run(table: sa.FromClause) -> sa.ColumnElement[Any]:
    """The run of a flow's or a lineage link's row (`flows`, `lineage_links`): its owner
    when that is a run, else NULL. The run is the owner of every row of a run, so it is not
    stored a second time (migration 0030)."""
    return sa.case((table.c.scope == "run", table.c.owner_id), else_=sa.null())


#: The columns of an edge as every reader sees it: a set's edge with its link's owner
#: (`upstream.store.edge_rows`), and the rows of `declared_edges`.
EDGE_COLUMNS = (
    "scope",
    "run_id",
    "job_id",
    *(column.name for column in _edge_ends()),
    "transformations",
)

flows = sa.Table(
    "flows",
    metadata,
    # The dataset-level flow graph (design §6), derived when an event is written by
    # `upstream.model.flow_rules`: precedence, implied edges and the inputs x outputs product
    # are resolved here, so walks only read. Re-deriving an owner (a run; a job's or a
    # dataset's declaration) deletes its rows and inserts the new ones: rows are found and
    # replaced by owner, never one by one, so they have no key (migration 0030).
    # The month of the flow's run (`upstream.store.months`).
    sa.Column("month", sa.Integer, nullable=False),
    sa.Column("scope", sa.Text, nullable=False),
    # The run, or the job or dataset whose declaration it is. A run's flow has the run as
    # its owner, not stored again (`owned_run`, migration 0030); declared lineage has none,
    # and every window includes it.
    sa.Column("owner_id", Id, nullable=False, index=True),
    sa.Column("source_dataset_id", Id, nullable=False),
    sa.Column("target_dataset_id", Id, nullable=False),
    # NULL for a DatasetEvent's declaration, which names no job.
    sa.Column("job_id", Id),
    # Made by the inputs x outputs product rather than stated by the producer.
    sa.Column("inferred", sa.Boolean, nullable=False),
    # A run's flow is in a window when its run is: readers take the span from the run's row
    # (`flows_with_runs`), not from a copy in each flow (migration 0030).
    # No index by source or target (migration 0027): walks run on the graph index, which
    # loads flows by run or owner (`upstream.store.graph_rows`); only `store.walks`' check
    # reads of the stored rows ask by dataset, and they read nearly every flow.
)


def flows_with_runs() -> sa.Join:
    """The flows, each with its run's row (none for a declaration's flow): where a run's
    flow finds its run (the same month: both are kept under the run's, `store.months`)."""
    run = runs.c
    return flows.outerjoin(
        runs,
        sa.and_(flows.c.scope == "run", run.id == flows.c.owner_id, run.month == flows.c.month),
    )


job_dependencies = sa.Table(
    "job_dependencies",
    metadata,
    # Control flow between job runs (design §3.3), from the `jobDependencies` run facet: the
    # upstream job (run) runs before the downstream one. One row per stating run and pair of
    # ends (`upstream.model.job_dependencies`); derived, written when its run's event is, and
    # removed with that run. No dataset walk reads it.
    sa.Column("id", Id, primary_key=True),
    # The run whose facet states the edge; its span places the edge in a window.
    sa.Column("run_id", Id, nullable=False, index=True),
    sa.Column("upstream_job_id", Id, nullable=False, index=True),
    # NULL when the statement names no run of that job.
    sa.Column("upstream_run_id", Id, index=True),
    sa.Column("downstream_job_id", Id, nullable=False, index=True),
    sa.Column("downstream_run_id", Id, index=True),
    # DIRECT_INVOCATION, IMPLICIT_DEPENDENCY… as the producer names it.
    sa.Column("dependency_type", sa.Text),
    sa.Column("sequence_trigger_rule", sa.Text),
    sa.Column("status_trigger_rule", sa.Text),
    sa.Column("trigger_rule", sa.Text),
    # The event time of the statement that counts (the latest).
    sa.Column("stated_at", Timestamp, nullable=False),
)

store_state = sa.Table(
    "store_state",
    metadata,
    # Facts about the store itself, such as which version of the derivation rules built the
    # derived tables (`derived_version`): a start with newer rules rebuilds them.
    sa.Column("key", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

declarations = sa.Table(
    "declarations",
    metadata,
    # Every JobEvent's or DatasetEvent's declared lineage, kept after a later one replaces it,
    # so lineage can be answered as it stood at a time (design §4.5). `lineage_links` and
    # `relations` hold only the declarations in force now; these three tables hold all of them.
    sa.Column("id", Id, primary_key=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("owner_id", Id, nullable=False, index=True),
    sa.Column("declared_at", Timestamp, nullable=False),
    # The next declaration's event time: in force from declared_at until then (NULL: now).
    sa.Column("replaced_at", Timestamp),
    sa.Column("has_lineage_facet", sa.Boolean, nullable=False),
)


def _declared_copy(name: str, table: sa.Table) -> sa.Table:
    """`table`'s columns but its month (declarations are never pruned), for the rows of every
    declaration (see `declarations`)."""
    return sa.Table(
        name,
        metadata,
        *(column._copy() for column in table.columns if column.name != "month"),
        sa.Column(
            "declaration_id",
            Id,
            sa.ForeignKey("declarations.id"),
            nullable=False,
            index=True,
        ),
    )


declared_edges = sa.Table(
    "declared_edges",
    metadata,
    # Every declaration's edges (see `declarations`), as readers see an edge.
    sa.Column("id", Id, primary_key=True),
    sa.Column("scope", sa.Text, nullable=False),
    sa.Column("run_id", Id, index=True),
    sa.Column("job_id", Id, index=True),
    *_edge_ends(),
    _transformations(),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("declaration_id", Id, sa.ForeignKey("declarations.id"), nullable=False, index=True),
    *_job_end_indexes("declared_edges"),
)
declared_relations = _declared_copy("declared_relations", relations)
declared_flows = _declared_copy("declared_flows", flows)

dataset_versions = sa.Table(
    "dataset_versions",
    metadata,
    # One version per (dataset, writing run), as Marquez versions datasets.
    sa.Column("id", Id, primary_key=True),
    # The month the row's run was first received in (`upstream.store.months`); part of the key.
    sa.Column("month", sa.Integer, primary_key=True),
    sa.Column("dataset_id", Id, _checked_at_commit("datasets.id"), nullable=False, index=True),
    sa.Column("run_id", Id, nullable=False, index=True),
    # Its fields and facets, kept once per distinct content (`version_contents`).
    sa.Column("content_id", Id, _checked_at_commit("version_contents.id"), nullable=False),
    sa.Column("lifecycle", sa.Text),
    sa.Column("created_at", Timestamp, nullable=False),
)

version_contents = sa.Table(
    "version_contents",
    metadata,
    # A dataset version's fields and facets, once per distinct content: the id is the hash
    # of their text (`upstream.store.version_contents`). A COMPLETE repeats its START's
    # version, and every run of a job writes what the last one did.
    sa.Column("id", Id, primary_key=True),
    # Both compressed, as a run's facets are (`store.packed_facets`).
    sa.Column("fields", sa.LargeBinary, nullable=False),
    sa.Column("facets", sa.LargeBinary, nullable=False),
)

dataset_symlinks = sa.Table(
    "dataset_symlinks",
    metadata,
    sa.Column("id", Id, primary_key=True),
    sa.Column("dataset_id", Id, sa.ForeignKey("datasets.id"), nullable=False, index=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("type", sa.Text),
)

dataset_aliases = sa.Table(
    "dataset_aliases",
    metadata,
    # The groups of identities that `symlinks` facets make one dataset (design §3.3;
    # `upstream.store.aliases`): one row per identity in a group, with the group's canonical
    # identity, which every derived row names. No foreign key: an alias may never be stored.
    sa.Column("id", Id, primary_key=True),
    sa.Column("canonical_id", Id, nullable=False, index=True),
    sa.Column("namespace", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    # This identity reported a symlinks facet (only reporters can be canonical).
    sa.Column("reported", sa.Boolean, nullable=False),
)

operation_sets = sa.Table(
    "operation_sets",
    metadata,
    # The ordered field operations recorded for one destination, once per checksum.
    sa.Column("id", Id, primary_key=True),
    sa.Column("dataset_id", Id, sa.ForeignKey("datasets.id"), nullable=False, index=True),
    sa.Column("checksum", sa.Text, nullable=False),
    sa.Column("operations", Json, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.UniqueConstraint("dataset_id", "checksum"),
)

run_operation_sets = sa.Table(
    "run_operation_sets",
    metadata,
    sa.Column("id", Id, primary_key=True),
    # The month the row's run was first received in (`upstream.store.months`); part of the key.
    sa.Column("month", sa.Integer, primary_key=True),
    sa.Column(
        "operation_set_id",
        Id,
        _checked_at_commit("operation_sets.id"),
        nullable=False,
        index=True,
    ),
    sa.Column("run_id", Id, nullable=False, index=True),
    sa.Column("job_id", Id, _checked_at_commit("jobs.id"), nullable=False),
    sa.Column("component", sa.Text, nullable=False),
    sa.Column("event_time", Timestamp, nullable=False),
)

events = sa.Table(
    "events",
    metadata,
    # Every accepted event, verbatim, in arrival order (seq). The key is the SHA-256 of its
    # canonical JSON, which makes re-posting an event a no-op.
    sa.Column(
        "seq",
        sa.BigInteger().with_variant(sa.Integer, "sqlite"),
        primary_key=True,
        autoincrement=True,
    ),
    sa.Column("event_key", sa.String(64), nullable=False),
    # The month of the event's run (`upstream.store.months`); on PostgreSQL part of the key.
    # A re-posted event names the same run, so (event_key, month) still finds it.
    sa.Column("month", sa.Integer, nullable=False),
    sa.Column("event_type", sa.Text, nullable=False),
    sa.Column("event_kind", sa.Text),
    sa.Column("event_time", Timestamp, nullable=False, index=True),
    sa.Column("received_at", Timestamp, nullable=False),
    sa.Column("run_id", Id, index=True),
    sa.Column("job_namespace", sa.Text),
    sa.Column("job_name", sa.Text),
    sa.Column("dataset_namespace", sa.Text),
    sa.Column("dataset_name", sa.Text),
    # The event's compact JSON text as received, compressed by zstd with one of the
    # store's dictionaries (`store.payloads`, the one way to read it back).
    sa.Column("payload_zstd", sa.LargeBinary, nullable=False),
    # Every namespace the payload names, at any depth, as a JSON array
    # (`model.named_namespaces`): what a scoped reader's view of the event depends on, read
    # without walking the payload (`store.visibility.shown_events`).
    sa.Column("namespaces", sa.Text),
    # The namespaces of its inputs and outputs, as a JSON array, NULL for none
    # (`model.named_namespaces.io_namespaces_text`): what Marquez's events of a namespace
    # are found by, without reading the payload.
    sa.Column("io_namespaces", sa.Text),
    sa.UniqueConstraint("event_key", "month"),
)

event_dictionaries = sa.Table(
    "event_dictionaries",
    metadata,
    # The zstd dictionaries the payloads are compressed with (`store.payloads`), trained on
    # the store's own events; the id is the one each payload's zstd frame names. Not derived:
    # never deleted, by a rebuild or a prune, while a payload may name it.
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("content", sa.LargeBinary, nullable=False),
    # How many events it was trained on, and when.
    sa.Column("events", sa.Integer, nullable=False),
    sa.Column("trained_at", Timestamp, nullable=False),
)

run_months = sa.Table(
    "run_months",
    metadata,
    # The month each run's rows are kept under, decided by the first write that names the run
    # (`upstream.store.months`). Not derived: a rebuild files each run under the same month.
    sa.Column("run_id", Id, primary_key=True),
    sa.Column("month", sa.Integer, nullable=False),
    # On SQLite the rows are kept in the key's own B-tree: a table with a row id kept them
    # in one and the key again, with the row id, in an index (migration 0032).
    sqlite_with_rowid=False,
)

deletions = sa.Table(
    "deletions",
    metadata,
    # Soft deletion (design §4.5) of a namespace, dataset or job, by its id. People delete, not
    # events, so this is no derived table: a rebuild keeps it, and only an event received after
    # `deleted_at` that names the entity ends the deletion.
    sa.Column("entity_id", Id, primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("deleted_at", Timestamp, nullable=False),
)

tags = sa.Table(
    "tags",
    metadata,
    # Marquez's tags: a name (as given, case-sensitive) and an optional description.
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("description", sa.Text),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("updated_at", Timestamp, nullable=False),
)

dataset_tags = sa.Table(
    "dataset_tags",
    metadata,
    # No foreign key to datasets: people tag, not events, and a rebuild re-creates the dataset
    # rows (with the same ids, made from the names) while the tags stay.
    sa.Column("dataset_id", Id, primary_key=True),
    sa.Column("tag", sa.Text, sa.ForeignKey("tags.name"), primary_key=True, index=True),
    sa.Column("tagged_at", Timestamp, nullable=False),
)

job_tags = sa.Table(
    "job_tags",
    metadata,
    # A tag on a job; like `dataset_tags`, no foreign key to the jobs a rebuild re-creates.
    sa.Column("job_id", Id, primary_key=True),
    sa.Column("tag", sa.Text, sa.ForeignKey("tags.name"), primary_key=True, index=True),
    sa.Column("tagged_at", Timestamp, nullable=False),
)

field_tags = sa.Table(
    "field_tags",
    metadata,
    # A tag on one field of a dataset; `field` is the field's name as the dataset lists it.
    sa.Column("dataset_id", Id, primary_key=True),
    sa.Column("field", sa.Text, primary_key=True),
    sa.Column("tag", sa.Text, sa.ForeignKey("tags.name"), primary_key=True, index=True),
    sa.Column("tagged_at", Timestamp, nullable=False),
)

change_log = sa.Table(
    "change_log",
    metadata,
    # What each committed write changed, in commit order (`upstream.store.change_log`): one
    # row per kind of change per transaction, with the ids it changed (JSON strings).
    sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("ids", Json, nullable=False),
    sa.Column("recorded_at", Timestamp, nullable=False),
)

change_log_head = sa.Table(
    "change_log_head",
    metadata,
    # One row: the newest position given. Appending updates it, and its row lock, held to the
    # commit, makes positions commit in order (`upstream.store.change_log`).
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("position", sa.BigInteger, nullable=False),
)

kafka_offsets = sa.Table(
    "kafka_offsets",
    metadata,
    # Per Kafka topic and partition, the offset after the last message consumers stored,
    # raised in the transaction that stores them (`upstream.store.kafka_offsets`): what a read
    # naming a publishing front's offsets waits for.
    sa.Column("topic", sa.Text, primary_key=True),
    sa.Column("partition", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("next_offset", sa.BigInteger, nullable=False),
)

published_batches = sa.Table(
    "published_batches",
    metadata,
    # A publishing front's batch of several events, and whether it was committed (its events
    # are stored) or abandoned (none is), decided once by whoever inserts the row first: the
    # front after Kafka acknowledged every event, a consumer once its deadline passed
    # (`upstream.store.published_batches`). Bookkeeping of how events came: a rebuild keeps it.
    sa.Column("id", Id, primary_key=True),
    sa.Column("committed", sa.Boolean, nullable=False),
    # Unix time after which the front may no longer commit it, and of a committed batch the
    # newest offset Kafka gave its events in each partition, [[topic, partition, offset]…]:
    # what tells when the row may be pruned. NULL in rows made before they were recorded.
    sa.Column("deadline", sa.Double),
    sa.Column("offsets", NullableJson),
)

access_tokens = sa.Table(
    "access_tokens",
    metadata,
    # Tokens an admin issued (`upstream.store.access_tokens`): only the SHA-256 digest of the
    # secret, and its first characters (`prefix`) so people can tell tokens apart. People
    # make them, not events: no derived table, a rebuild keeps it. A revoked token keeps its
    # row (the audit trail names it).
    sa.Column("id", Id, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("prefix", sa.Text, nullable=False),
    sa.Column("digest", sa.Text, nullable=False, unique=True),
    sa.Column("scopes", Json, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("expires_at", Timestamp),
    sa.Column("revoked_at", Timestamp),
)

subscriptions = sa.Table(
    "subscriptions",
    metadata,
    # What a team watches and where it is told (`upstream.watch`). People make these, not
    # events: no derived table, a rebuild keeps them. `radius` is what the dispatcher last saw
    # of the watched lineage, the "before" of the next change; `version` rises with every
    # radius stored, so a dispatcher parses again only the radii another process changed.
    sa.Column("id", Id, primary_key=True),
    sa.Column("spec", Json, nullable=False),
    sa.Column("secret", sa.Text, nullable=False),
    sa.Column("radius", Json, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("version", sa.Integer, nullable=False, server_default="0"),
)

watch_cursor = sa.Table(
    "watch_cursor",
    metadata,
    # One row: the change-log position the dispatcher has turned into notifications, and when
    # it last looked at every subscription (`upstream.store.subscriptions`).
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("position", sa.BigInteger, nullable=False),
    sa.Column("swept_at", Timestamp, nullable=False),
    # Raised by every round stored: a round stores only if it is what the round read.
    sa.Column("rounds", sa.BigInteger, nullable=False, server_default="0"),
)

notifications = sa.Table(
    "notifications",
    metadata,
    # One message to one subscription's receiver: its exact body, and its delivery state
    # (pending, delivered, dead); a sender holds it while `leased_until` is ahead.
    sa.Column("id", Id, primary_key=True),
    sa.Column(
        "subscription_id",
        Id,
        sa.ForeignKey("subscriptions.id", ondelete="CASCADE"),
        nullable=False,
        index=True,
    ),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("tries", sa.Integer, nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    sa.Column("next_attempt_at", Timestamp, nullable=False, index=True),
    sa.Column("leased_until", Timestamp, nullable=True),
    sa.Column("delivered_at", Timestamp, nullable=True),
)

delivery_attempts = sa.Table(
    "delivery_attempts",
    metadata,
    # Every try to deliver a notification: the receiver's status, or the error.
    sa.Column(
        "notification_id",
        Id,
        sa.ForeignKey("notifications.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    sa.Column("attempt", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("at", Timestamp, nullable=False),
    sa.Column("status", sa.Integer, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
)
