"""Stored facts: what one accepted event contributes to the store (design §2).

`upstream.ingest` turns events into these; `upstream.store` writes them in bulk. Plain data,
so translation is testable without a database and a batch of events is one set of writes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from upstream.model.identity import DatasetRef, JobRef, stable_id
from upstream.model.job_dependencies import JobDependencyFact

if TYPE_CHECKING:
    from upstream.model.lineage_sets import EdgePart

Access = Literal["read", "write"]
Scope = Literal["run", "job", "dataset"]
Origin = Literal["lineage_facet", "field_operations", "column_lineage", "sql"]

#: Precedence per output (design §3.2, §3.3): the lineage facet (and the recorder's field
#: operations, which arrive as one) over columnLineage over the `sql` facet's parsed lineage;
#: inputs x outputs is inferred only where none is.
ORIGIN_RANK: dict[str, int] = {
    "lineage_facet": 3,
    "field_operations": 3,
    "column_lineage": 2,
    "sql": 1,
}
#: How answers name each origin: after the facet or API that stated the edge.
ORIGIN_SHOWN: dict[str, str] = {
    "lineage_facet": "lineageFacet",
    "field_operations": "fieldOperations",
    "column_lineage": "columnLineage",
    "sql": "sql",
}
#: How tables for people name each origin as answers show it.
ORIGIN_LABELS: dict[str, str] = {
    "lineageFacet": "lineage facet",
    "fieldOperations": "field operations",
    "columnLineage": "columnLineage",
    "sql": "SQL",
}


@dataclass(frozen=True, order=True)
class DatasetNode:
    """A dataset, or one field of it (`field` None means the whole dataset)."""

    dataset: DatasetRef
    field: str | None = None


@dataclass(frozen=True, order=True)
class JobNode:
    """A job, optionally at one run of it."""

    job: JobRef
    run_id: uuid.UUID | None = None


Node = DatasetNode | JobNode


@dataclass
class DatasetFact:
    ref: DatasetRef
    facets: dict[str, Any] = field(default_factory=dict)
    fields: list[dict[str, Any]] | None = None
    description: str | None = None
    source_name: str | None = None
    #: `merge_rules.content_digest` of the row it makes (its DATASET_CONTENT), when its
    #: part gave it; None: the writer hashes the row. Whoever changes those columns of a
    #: fact made from a part sets it to None.
    content_digest: str | None = None


@dataclass
class JobFact:
    ref: JobRef
    facets: dict[str, Any] = field(default_factory=dict)
    description: str | None = None
    job_type: str | None = None
    integration: str | None = None
    processing_type: str | None = None
    seen_as_parent: bool = False
    #: As `DatasetFact.content_digest`, of its JOB_CONTENT.
    content_digest: str | None = None


@dataclass
class RunFact:
    run_id: uuid.UUID
    job: JobRef
    event_time: datetime
    event_type: str | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    parent_run_id: uuid.UUID | None = None
    root_run_id: uuid.UUID | None = None
    nominal_start: datetime | None = None
    nominal_end: datetime | None = None
    # False when the run is only named as a parent or as a lineage input's runId.
    has_events: bool = True
    has_lineage_facet: bool = False


@dataclass
class RelationFact:
    dataset: DatasetRef
    job: JobRef
    run_id: uuid.UUID | None
    access: Access
    event_time: datetime
    component: str = ""
    lifecycle: str | None = None
    temporary: bool = False
    origin: Literal["io", "edge"] = "io"
    facets: dict[str, Any] = field(default_factory=dict)
    #: The dataset version the producer named (the `version` facet), if any.
    version: str | None = None

    @property
    def id(self) -> uuid.UUID:
        return stable_id(
            "relation", self.dataset.id, self.job.id, self.run_id, self.access, self.component
        )


@dataclass
class EdgeFact:
    scope: Scope
    origin: Origin
    source: Node
    target: Node
    run_id: uuid.UUID | None = None
    job: JobRef | None = None
    implied: bool = False
    transformations: list[dict[str, Any]] = field(default_factory=list)
    #: The part of the event this edge was read from, with the other edges it states
    #: (`upstream.model.lineage_sets.EdgePart`); None for an edge read for this event alone.
    part: EdgePart | None = field(default=None, compare=False, repr=False)

    @property
    def rank(self) -> int:
        return ORIGIN_RANK[self.origin]

    @property
    def scope_owner(self) -> uuid.UUID | None:
        """What a declaration replaces as a whole: the job, or the target dataset."""
        if self.scope == "run":
            return self.run_id
        if self.scope == "job":
            return self.job.id if self.job else None
        return self.target_dataset.id if self.target_dataset else None

    @property
    def target_dataset(self) -> DatasetRef | None:
        return self.target.dataset if isinstance(self.target, DatasetNode) else None

    @cached_property
    def id(self) -> uuid.UUID:
        """Hashes scope and ends, not origin: the same edge from two sources is one edge.
        Cached, since an event may hold thousands of edges and the writer asks repeatedly."""
        return stable_id(
            "edge", self.scope, self.scope_owner, _node_key(self.source), _node_key(self.target)
        )


def _node_key(node: Node) -> str:
    if isinstance(node, DatasetNode):
        return f"d\x01{node.dataset.id}\x01{node.field or ''}\x01{node.field is not None}"
    return f"j\x01{node.job.id}\x01{node.run_id or ''}"


@dataclass
class VersionFact:
    """A dataset as written by one run (Marquez's dataset version)."""

    dataset: DatasetRef
    run_id: uuid.UUID
    event_time: datetime
    fields: list[dict[str, Any]] | None = None
    facets: dict[str, Any] = field(default_factory=dict)
    lifecycle: str | None = None

    @property
    def id(self) -> uuid.UUID:
        return stable_id("dataset_version", self.dataset.id, self.run_id)


@dataclass
class SymlinkFact:
    dataset: DatasetRef
    namespace: str
    name: str
    type: str | None = None

    @property
    def id(self) -> uuid.UUID:
        return stable_id("symlink", self.dataset.id, self.namespace, self.name)


@dataclass
class OperationSetFact:
    """Field operations recorded for one destination in one run (design §3.5)."""

    dataset: DatasetRef
    checksum: str
    operations: list[dict[str, Any]]
    run_id: uuid.UUID
    job: JobRef
    event_time: datetime
    component: str = ""

    @property
    def id(self) -> uuid.UUID:
        return stable_id("operation_set", self.dataset.id, self.checksum)

    @property
    def link_id(self) -> uuid.UUID:
        return stable_id("run_operation_set", self.id, self.run_id, self.component)


@dataclass
class Declaration:
    """A JobEvent's or DatasetEvent's lineage, replacing the owner's earlier declaration when
    its event time is not older (design §3.2)."""

    scope: Literal["job", "dataset"]
    owner: JobRef | DatasetRef
    event_time: datetime
    has_lineage_facet: bool


@dataclass
class EventRecord:
    """The accepted event itself, kept verbatim."""

    key: str
    payload: str
    #: The namespaces the payload names, as a JSON array (`model.named_namespaces`).
    namespaces: str
    #: The namespaces of its inputs and outputs, as a JSON array; None for none
    #: (`model.named_namespaces.io_namespaces_text`).
    io_namespaces: str | None
    event_type: str
    event_kind: str | None
    event_time: datetime
    run_id: uuid.UUID | None = None
    job: JobRef | None = None
    dataset: DatasetRef | None = None


@dataclass(frozen=True)
class SqlRequest:
    """The job's `sql` facet, to be read for the outputs nothing else describes (§3.3) once
    the run's other datasets are known (its other events may list the inputs)."""

    query: str
    dialect: object
    pending: tuple[DatasetRef, ...]
    inputs: tuple[DatasetRef, ...]
    outputs: tuple[DatasetRef, ...]


@dataclass
class EventFacts:
    """Everything one event contributes."""

    record: EventRecord
    namespaces: set[str] = field(default_factory=set)
    datasets: list[DatasetFact] = field(default_factory=list)
    jobs: list[JobFact] = field(default_factory=list)
    runs: list[RunFact] = field(default_factory=list)
    relations: list[RelationFact] = field(default_factory=list)
    edges: list[EdgeFact] = field(default_factory=list)
    versions: list[VersionFact] = field(default_factory=list)
    symlinks: list[SymlinkFact] = field(default_factory=list)
    operation_sets: list[OperationSetFact] = field(default_factory=list)
    declaration: Declaration | None = None
    #: Control flow between job runs its run's `jobDependencies` facet states (§3.3).
    job_dependencies: list[JobDependencyFact] = field(default_factory=list)
    sql: SqlRequest | None = None
    #: The event states its run's whole lineage as of its time (COMPLETE_SNAPSHOT, §3.3).
    snapshot: bool = False
    #: Statements of the job's `sql` facet read for lineage, and those that could not be.
    sql_parsed: int = 0
    sql_unparsed: int = 0
