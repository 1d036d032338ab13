"""The shapes of the Marquez answers the web UI and Marquez's clients read, declared once.

As `query.answers` for the lineage answers: each service returns one, each route names it in
OpenAPI (without validating at run time), and `frontend/src/api.ts` is checked against them.
The keys and their order are Marquez's.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict


class SearchResult(TypedDict):
    type: Literal["DATASET", "JOB"]
    name: str
    updatedAt: str | None
    namespace: str
    nodeId: str
    #: Only with `includeDeleted=true`, on a deleted dataset or job.
    deleted: NotRequired[bool]


class SearchAnswer(TypedDict):
    """Datasets and jobs whose name contains the text; `totalCount` counts every match."""

    totalCount: int
    results: list[SearchResult]


class EntityName(TypedDict):
    namespace: str
    name: str


class SchemaField(TypedDict):
    """A field of a dataset's schema, with its tags; nested fields are kept."""

    name: str | None
    type: str | None
    tags: list[str]
    description: str | None
    fields: NotRequired[list[SchemaField]]


class Owner(TypedDict):
    name: str
    type: str | None


class DatasetAnswer(TypedDict):
    """A dataset as Marquez shows it."""

    id: EntityName
    type: str
    name: str
    physicalName: str
    createdAt: str | None
    updatedAt: str | None
    namespace: str
    sourceName: str
    fields: list[SchemaField]
    #: Tags set through the API and those of the dataset's `tags` facet.
    tags: list[str]
    #: Upstream's addition: the owners of the dataset's `ownership` facet.
    owners: list[Owner]
    lastModifiedAt: str | None
    lastLifecycleState: str | None
    description: str | None
    facets: dict[str, Any]
    currentVersion: str | None
    #: Only on the dataset endpoints (not in lineage graphs): what each field was made from,
    #: `null` when no field edge leads into the dataset.
    columnLineage: NotRequired[list[FieldColumnLineage] | None]
    deleted: bool


class DatasetsAnswer(TypedDict):
    datasets: list[DatasetAnswer]
    totalCount: int


class JobVersionRef(TypedDict):
    namespace: str
    name: str
    version: str


class VersionId(TypedDict):
    namespace: str
    name: str
    version: str | None


class DatasetVersionRef(TypedDict):
    datasetVersionId: VersionId
    facets: dict[str, Any]


class RunAnswer(TypedDict):
    """A run as Marquez shows it: times, state, the versions it read and wrote, its facets."""

    id: str
    createdAt: str | None
    updatedAt: str | None
    nominalStartTime: str | None
    nominalEndTime: str | None
    state: str
    startedAt: str | None
    endedAt: str | None
    durationMs: int | None
    args: dict[str, Any]
    jobVersion: JobVersionRef
    inputDatasetVersions: list[DatasetVersionRef]
    outputDatasetVersions: list[DatasetVersionRef]
    context: dict[str, Any]
    facets: dict[str, Any]
    #: Upstream's addition: the tags of the run's `tags` facet.
    tags: list[str]
    parentRunId: str | None


class JobAnswer(TypedDict):
    """A job as Marquez shows it, with its latest runs and every dataset it read or wrote."""

    id: EntityName
    type: str
    name: str
    simpleName: str
    parentJobName: str | None
    parentJobUuid: str | None
    createdAt: str | None
    updatedAt: str | None
    namespace: str
    inputs: list[EntityName]
    outputs: list[EntityName]
    location: str | None
    context: dict[str, Any]
    description: str | None
    latestRun: RunAnswer | None
    latestRuns: list[RunAnswer]
    facets: dict[str, Any]
    currentVersion: str | None
    labels: list[str]
    #: The tags of the job's `tags` facet.
    tags: list[str]
    #: Upstream's addition: the owners of the job's `ownership` facet.
    owners: list[Owner]
    deleted: bool


class JobsAnswer(TypedDict):
    jobs: list[JobAnswer]
    totalCount: int


class RunsAnswer(TypedDict):
    """A page of a job's runs, newest first."""

    runs: list[RunAnswer]
    totalCount: int


class RunFacetsAnswer(TypedDict):
    runId: str
    facets: dict[str, Any]


class ColumnEdge(TypedDict):
    origin: str
    destination: str


class InputField(TypedDict):
    """A field another was made from, with the transformations stated for the edge and what
    stated them (`origins`)."""

    namespace: str
    dataset: str
    datasetVersion: str | None
    field: str
    transformationDescription: str | None
    transformationType: str | None
    transformations: list[dict[str, Any]]
    origins: list[str]


class FieldColumnLineage(TypedDict):
    """One field of a dataset and the fields it was made from (`Dataset.columnLineage`);
    the transformation keys repeat the first input's, as Marquez fills them."""

    name: str
    inputFields: list[InputField]
    transformationDescription: str | None
    transformationType: str | None


class ColumnData(TypedDict):
    namespace: str
    dataset: str
    datasetVersion: str | None
    field: str
    fieldType: str | None
    transformationDescription: str | None
    transformationType: str | None
    inputFields: list[InputField]


class ColumnNode(TypedDict):
    id: str
    type: Literal["DATASET_FIELD"]
    data: ColumnData
    inEdges: list[ColumnEdge]
    outEdges: list[ColumnEdge]


class ColumnLineageAnswer(TypedDict):
    """Marquez's column lineage: one node per field, with its edges both ways."""

    graph: list[ColumnNode]
    truncated: bool
    #: Only for a token limited to some namespaces: the hidden fields (and a job seed's
    #: hidden outputs) the walk stopped at, and the edges (writes) to them (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class NamespaceAnswer(TypedDict):
    """A namespace as Marquez shows it; `isHidden` is true for a deleted one."""

    name: str
    createdAt: str | None
    updatedAt: str | None
    ownerName: str
    description: str | None
    isHidden: bool


class NamespacesAnswer(TypedDict):
    namespaces: list[NamespaceAnswer]
    totalCount: int


class SourceAnswer(TypedDict):
    """Where datasets live: a `dataSource` facet's URI, else the namespace."""

    type: str
    name: str
    createdAt: str | None
    updatedAt: str | None
    connectionUrl: str
    description: str | None


class SourcesAnswer(TypedDict):
    sources: list[SourceAnswer]
    totalCount: int


class TagEntry(TypedDict):
    name: str
    description: str | None


class TagsAnswer(TypedDict):
    tags: list[TagEntry]


class DatasetVersionAnswer(TypedDict):
    """A dataset as one run wrote it, with that run."""

    id: VersionId
    type: str
    name: str
    physicalName: str
    createdAt: str | None
    version: str
    namespace: str
    sourceName: str
    fields: list[SchemaField]
    tags: list[str]
    lifecycleState: str | None
    description: str | None
    createdByRun: RunAnswer | None
    facets: dict[str, Any]


class DatasetVersionsAnswer(TypedDict):
    versions: list[DatasetVersionAnswer]
    totalCount: int


class JobVersionAnswer(TypedDict):
    """A version of a job: its runs grouped by the datasets they touched."""

    id: VersionId
    name: str
    version: str
    createdAt: str | None
    namespace: str
    inputs: list[EntityName]
    outputs: list[EntityName]
    location: str | None
    context: dict[str, Any]
    latestRun: RunAnswer
    facets: dict[str, Any]


class JobVersionsAnswer(TypedDict):
    versions: list[JobVersionAnswer]
    totalCount: int


class LineageEventsAnswer(TypedDict):
    """OpenLineage events as they were received, and how many match."""

    events: list[dict[str, Any]]
    totalCount: int


class EventsAnswer(TypedDict):
    """OpenLineage events as they were received, newest first (Marquez gives no count)."""

    events: list[dict[str, Any]]


class GraphNode(TypedDict):
    """A dataset or job of Marquez's lineage graph, with its edges both ways."""

    id: str
    type: Literal["DATASET", "JOB"]
    data: DatasetAnswer | JobAnswer
    inEdges: list[ColumnEdge]
    outEdges: list[ColumnEdge]


class MarquezGraphAnswer(TypedDict):
    graph: list[GraphNode]
    truncated: bool
    #: Only for a token limited to some namespaces: the hidden datasets and jobs the walk
    #: stopped at, and the relations with them it left out (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class LineageEventCounts(TypedDict):
    """The run events of one interval of the dashboard's chart, by type."""

    startInterval: str
    endInterval: str
    fail: int
    start: int
    complete: int
    abort: int


class IntervalCount(TypedDict):
    """How many jobs, datasets or sources existed at the end of one interval."""

    startInterval: str
    endInterval: str
    count: int


class OpenSearchAnswer(TypedDict):
    """Marquez's `/api/v2beta/search` answer: the hits, and per hit the matched text of each
    field that matched, marked `<em>…</em>`."""

    hits: list[dict[str, Any]]
    highlights: list[dict[str, list[str]]]
