"""The shapes of the lineage answers (the `/v3` endpoints and the CLI), declared once.

Each service returns one of these; each route names it in `responses={200: {"model": …}}` so
the OpenAPI document (and docs/api.md) shows it, without validating answers at run time
(`response_model=None`: an answer is built right once, in its service, and sent as it is).
`frontend/src/api.ts` declares the same shapes; `tests/web/test_frontend_types.py` compares them.
Keys that only some answers carry are `NotRequired`.
"""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict

from upstream.model.direction import Direction


class EntityId(TypedDict):
    """A dataset, job or workflow by its kind and name."""

    type: str
    namespace: str
    name: str


class DatasetName(TypedDict):
    namespace: str
    name: str


class OwnerEntry(TypedDict):
    """An owner a producer's `ownership` facet names, with the kind of ownership if said."""

    name: str
    type: str | None


class DataEntry(TypedDict):
    entityId: EntityId
    #: Only on a temporary dataset (design §3.4), which rollup hides.
    temporary: NotRequired[bool]
    #: Only with include=owners.
    owners: NotRequired[list[OwnerEntry]]


class ProgramEntry(TypedDict):
    entityId: EntityId
    #: Only with include=owners.
    owners: NotRequired[list[OwnerEntry]]


class RelationEntry(TypedDict):
    """A dataset read or written by a program: by which runs and components."""

    data: str
    program: str
    accesses: list[str]
    runs: list[str]
    components: list[str]


class JobLinkThrough(TypedDict):
    """With rollup=jobs: data went from `source` to `target` through the temporary datasets
    `through`, which the answer leaves out (design §4.2)."""

    source: str
    target: str
    through: list[str]


class DependencyRuns(TypedDict):
    """The runs at the two ends of a job dependency, when the statement names them."""

    upstream: str | None
    downstream: str | None


class JobDependencyEntry(TypedDict):
    """Control flow (the `jobDependencies` run facet, design §3.3): the `upstream` program
    runs before the `downstream` one, of this kind and by these rules, as these runs said."""

    upstream: str
    downstream: str
    dependencyType: str | None
    sequenceTriggerRule: str | None
    statusTriggerRule: str | None
    triggerRule: str | None
    runs: list[DependencyRuns]


class LineageAnswer(TypedDict):
    """Dataset or job lineage, CDAP's relations (design §4.2)."""

    start: int
    end: int
    asOf: NotRequired[str]
    relations: list[RelationEntry]
    data: dict[str, DataEntry]
    programs: dict[str, ProgramEntry]
    #: Only with rollup=jobs.
    jobLinks: NotRequired[list[JobLinkThrough]]
    #: Only in job lineage: control flow around the job, apart from the data flow.
    jobDependencies: NotRequired[list[JobDependencyEntry]]
    truncated: NotRequired[bool]
    omittedNodes: NotRequired[int]
    omittedRelations: NotRequired[int]
    #: With no relation: when the latest run touching the dataset started, every run of it
    #: lying outside the window (ISO-8601).
    latestRunOutsideWindow: NotRequired[str]
    #: Only for a token limited to some namespaces: how many datasets and jobs it may not
    #: see the walk stopped at, and how many relations with them it left out (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class ImpactRun(TypedDict):
    """The latest run that wrote an impacted dataset."""

    runId: str
    state: str | None
    startedAt: str | None
    endedAt: str | None


class ImpactJob(TypedDict):
    """A job that carried data into an impacted dataset, with its owners."""

    namespace: str
    name: str
    owners: list[OwnerEntry]


class ImpactRow(TypedDict):
    """One dataset (`field` null) or field downstream, `hops` away (null: in the walk but
    with no path of its own relations to it)."""

    kind: Literal["dataset", "field"]
    namespace: str
    name: str
    field: str | None
    hops: int | None
    jobs: list[ImpactJob]
    owners: list[OwnerEntry]
    latestRun: ImpactRun | None


class ImpactAnswer(TypedDict):
    """Everything downstream of a dataset or a field, nearest first (design §4.6)."""

    dataset: DatasetName
    field: str | None
    levels: int
    start: int
    end: int
    rows: list[ImpactRow]
    truncated: NotRequired[bool]
    #: Only for a token limited to some namespaces: the hidden datasets, jobs and fields the
    #: walks stopped at, and the relations and field edges with them (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class FieldsOfDataset(TypedDict):
    """Fields of one dataset; `origins` names, per field, what stated the edges to it."""

    dataset: DatasetName
    fields: list[str]
    origins: NotRequired[dict[str, list[str]]]


class FieldSummaryAnswer(TypedDict):
    """Where a field comes from and goes to (design §4.3); the side not asked for is absent."""

    incoming: NotRequired[list[FieldsOfDataset]]
    outgoing: NotRequired[list[FieldsOfDataset]]
    #: Only for a token limited to some namespaces: the fields of datasets it may not see
    #: that the walk stopped at, and the field edges to them it left out (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class TagReachAnswer(TypedDict):
    """The fields a tag marks and the fields their data reached (design §4.5)."""

    tag: str
    levels: int
    tagged: list[FieldsOfDataset]
    reach: list[FieldsOfDataset]
    #: Only for a token limited to some namespaces: the fields of datasets it may not see
    #: that the walk stopped at, and the field edges to them it left out (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class RunOfRunLineage(TypedDict):
    runId: str
    job: DatasetName
    state: str | None
    startedAt: str | None
    endedAt: str | None
    level: int


class DatasetVersion(TypedDict):
    id: str
    dataset: DatasetName
    version: str | None
    producerVersion: str | None
    writtenBy: str | None


class RunLineageEdge(TypedDict):
    type: Literal["read", "write"]
    run: str
    datasetVersion: str
    #: When the run's read or write of the dataset appeared (ISO-8601): a streaming run's
    #: edges keep the time they first appeared in its lineage (design §4.5).
    since: str | None


class RunDependencyEnd(TypedDict):
    """A job, and its run when the statement names one."""

    namespace: str
    name: str
    runId: str | None


class RunDependencyEntry(TypedDict):
    """A job dependency (design §3.3) the run is an end of."""

    upstream: RunDependencyEnd
    downstream: RunDependencyEnd
    dependencyType: str | None
    sequenceTriggerRule: str | None
    statusTriggerRule: str | None
    triggerRule: str | None


class RunLineageAnswer(TypedDict):
    """Runs and the dataset versions between them around one run (design §4.5)."""

    runId: str
    direction: Direction
    levels: int
    asOf: NotRequired[str]
    runs: list[RunOfRunLineage]
    datasetVersions: list[DatasetVersion]
    edges: list[RunLineageEdge]
    #: Control flow: the job runs this run waited for and those that waited for it.
    jobDependencies: list[RunDependencyEntry]
    truncated: NotRequired[bool]
    #: Only for a token limited to some namespaces: the hidden datasets and jobs the walk
    #: stopped at, and the reads and writes with them it left out (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class SourceInput(TypedDict):
    """An operation's input read from a dataset."""

    type: Literal["source"]
    namespace: str
    name: str


class FieldInput(TypedDict):
    """An operation's input field; `origin` is the position of the operation that made it in
    the path's `operations` (null: from outside the path)."""

    type: Literal["field"]
    name: str
    origin: int | None


class OperationEntry(TypedDict):
    name: str
    description: str | None
    inputs: list[SourceInput | FieldInput]
    outputs: list[str]


class PathRun(TypedDict):
    runId: str
    job: DatasetName
    startedAt: str | None


class FieldPath(TypedDict):
    """One way the field was made: the operations it depends on, and the runs, newest first."""

    operations: list[OperationEntry]
    runs: list[PathRun]


class FieldPathsAnswer(TypedDict):
    """How a field was made in the window (design §4.3)."""

    fieldName: str
    startTimeInSeconds: int
    endTimeInSeconds: int
    paths: list[FieldPath]
    #: Only for a token limited to some namespaces: the hidden datasets and jobs the paths
    #: met, and the relations with them (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class RunSummary(TypedDict):
    id: str
    state: str | None
    startedAt: str | None
    endedAt: str | None
    durationMs: int | None


class JobRun(RunSummary):
    job: DatasetName


class WorkflowRun(RunSummary):
    jobRuns: list[JobRun]


class WorkflowJob(TypedDict):
    namespace: str
    name: str
    runs: int
    latestRun: RunSummary


class WorkflowContentsAnswer(TypedDict):
    """A workflow's runs in the window with the job runs inside each, and its jobs."""

    namespace: str
    name: str
    isWorkflow: bool
    runs: list[WorkflowRun]
    jobs: list[WorkflowJob]
    #: Only for a token limited to some namespaces: the jobs it may not see with runs inside
    #: the workflow's runs, and those runs (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class DiffWindow(TypedDict):
    """One side of a diff: its window, and the time it was read as of, if one was asked."""

    start: int
    end: int
    asOf: NotRequired[str]
    #: Only for a token limited to some namespaces: what this side's walk stopped at and
    #: left out, counted as a lineage answer counts them (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class DiffRelation(TypedDict):
    """A relation of a diff; its runs are a count (runs are what differ between sides)."""

    data: str
    program: str
    accesses: list[str]
    components: list[str]
    runs: int


#: A kept relation's run counts on each side (`from` is a keyword: the functional form).
KeptRuns = TypedDict("KeptRuns", {"from": int, "to": int})


class KeptRelation(TypedDict):
    data: str
    program: str
    accesses: list[str]
    components: list[str]
    runs: KeptRuns


class FieldEnd(TypedDict):
    namespace: str
    name: str
    field: str


class FieldEdgeEntry(TypedDict):
    source: FieldEnd
    target: FieldEnd


class DiffSide(TypedDict):
    """What only one side has: relations, field edges, datasets and programs (their keys)."""

    relations: list[DiffRelation]
    fieldEdges: list[FieldEdgeEntry]
    data: list[str]
    programs: list[str]


#: What changed in a dataset's lineage between two sides (design §4.5); `from` is a keyword.
LineageDiffAnswer = TypedDict(
    "LineageDiffAnswer",
    {
        "from": DiffWindow,
        "to": DiffWindow,
        "added": DiffSide,
        "removed": DiffSide,
        "kept": list[KeptRelation],
        "data": dict[str, DataEntry],
        "programs": dict[str, ProgramEntry],
        "truncated": NotRequired[bool],
    },
)


class FieldWithLineage(TypedDict):
    """A current field of a dataset, and whether it has lineage in the window."""

    name: str
    lineage: bool


#: The fields with lineage (names, sorted), or with `includeCurrent` every current field too.
FieldsAnswer = list[str] | list[FieldWithLineage]


class RecordingProgram(TypedDict):
    """A job that recorded an operation set, with its latest run."""

    job: DatasetName
    lastRunId: str
    lastRunStartedAt: str | None


class OperationGroup(TypedDict):
    dataset: DatasetName
    operations: list[OperationEntry]
    programs: list[RecordingProgram]


class FieldOperationsAnswer(TypedDict):
    """The operations a field was made by (`incoming`) or went through (`outgoing`)."""

    incoming: NotRequired[list[OperationGroup]]
    outgoing: NotRequired[list[OperationGroup]]
    #: Only for a token limited to some namespaces, as in `FieldPathsAnswer`.
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class Flow(TypedDict):
    """Data moving from one dataset to another through a program (null: a declared flow
    without a job), with its run count; `inferred` unless some run stated it explicitly."""

    source: str
    target: str
    program: str | None
    runs: int
    inferred: bool


class JobLink(TypedDict):
    source: str
    target: str


class MapGroup(TypedDict):
    """The datasets under one container: `containers` from the namespace down; `deeper`
    when some of them sit in deeper containers (the group can be drilled down)."""

    key: str
    containers: list[str]
    datasets: int
    flowsWithin: int
    deeper: bool


class MapEdge(TypedDict):
    """`flows` distinct dataset-to-dataset flows from a group to another."""

    source: str
    target: str
    flows: int


class HierarchyMapAnswer(TypedDict):
    """Datasets grouped by their level-N container (design §4.7)."""

    level: int
    within: list[str]
    depth: int
    groups: list[MapGroup]
    edges: list[MapEdge]
    #: Only for a token limited to some namespaces: the hidden datasets and jobs the flows
    #: of the shown ones met, and those flows (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class GraphAnswer(TypedDict):
    """Every dataset and the data flows between them (`upstream export`)."""

    data: dict[str, ProgramEntry]
    programs: dict[str, ProgramEntry]
    flows: list[Flow]
    links: list[JobLink]
    truncated: NotRequired[bool]
    #: Only for a token limited to some namespaces: the hidden datasets and jobs named by a
    #: flow or link of a shown one, and those flows and links (never named).
    hiddenNodes: NotRequired[int]
    hiddenRelations: NotRequired[int]


class NamespaceCounts(TypedDict):
    name: str
    datasets: int
    jobs: int
    updatedAt: str | None


class NamespaceCountsAnswer(TypedDict):
    """Namespaces by name, with how many datasets and jobs each holds."""

    namespaces: list[NamespaceCounts]
    totalCount: int


class WrittenDataset(TypedDict):
    namespace: str
    name: str
    writtenAt: str | None


class WrittenDatasetsAnswer(TypedDict):
    """Datasets by the time a run last wrote them, newest first."""

    datasets: list[WrittenDataset]
    totalCount: int


class JobName(TypedDict):
    namespace: str
    name: str


class LatestRun(TypedDict):
    id: str
    job: JobName
    state: str | None
    startedAt: str | None
    endedAt: str | None


class LatestRunsAnswer(TypedDict):
    """Each job's latest run, those that failed or were aborted first, then newest first."""

    runs: list[LatestRun]
    totalCount: int
    failedCount: int


class TokenAnswer(TypedDict):
    """An issued access token (design §5), never its secret but in `token`, in the answer
    that creates it."""

    id: str
    name: str
    #: The first characters of the token, to tell tokens apart in lists and logs.
    prefix: str
    #: read:<namespace pattern>, write:<namespace pattern> or admin.
    scopes: list[str]
    createdAt: str
    expiresAt: str | None
    revokedAt: str | None
    #: Only in the answer that creates it: the token itself, shown this once.
    token: NotRequired[str]


class TokensAnswer(TypedDict):
    """Every issued token, oldest first."""

    tokens: list[TokenAnswer]
