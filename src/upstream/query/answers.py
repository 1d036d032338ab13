"""The shapes of the lineage answers (the `/v3` endpoints and the CLI), declared once.

Each service returns one of these; each route names it in `responses={200: {"model": …}}` so
the OpenAPI document (and docs/api.md) shows it, without validating answers at run time
(`response_model=None`: an answer is built right once, in its service, and sent as it is).
`frontend/src/api.ts` declares the same shapes; `tests/test_frontend_types.py` compares them.
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


class DataEntry(TypedDict):
    entityId: EntityId
    #: Only on a temporary dataset (design §3.4), which rollup hides.
    temporary: NotRequired[bool]


class ProgramEntry(TypedDict):
    entityId: EntityId


class RelationEntry(TypedDict):
    """A dataset read or written by a program: by which runs and components."""

    data: str
    program: str
    accesses: list[str]
    runs: list[str]
    components: list[str]


class LineageAnswer(TypedDict):
    """Dataset or job lineage, CDAP's relations (design §4.2)."""

    start: int
    end: int
    asOf: NotRequired[str]
    relations: list[RelationEntry]
    data: dict[str, DataEntry]
    programs: dict[str, ProgramEntry]
    truncated: NotRequired[bool]
    omittedNodes: NotRequired[int]
    omittedRelations: NotRequired[int]


class FieldsOfDataset(TypedDict):
    """Fields of one dataset; `origins` names, per field, what stated the edges to it."""

    dataset: DatasetName
    fields: list[str]
    origins: NotRequired[dict[str, list[str]]]


class FieldSummaryAnswer(TypedDict):
    """Where a field comes from and goes to (design §4.3); the side not asked for is absent."""

    incoming: NotRequired[list[FieldsOfDataset]]
    outgoing: NotRequired[list[FieldsOfDataset]]


class TagReachAnswer(TypedDict):
    """The fields a tag marks and the fields their data reached (design §4.5)."""

    tag: str
    levels: int
    tagged: list[FieldsOfDataset]
    reach: list[FieldsOfDataset]


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


class RunLineageAnswer(TypedDict):
    """Runs and the dataset versions between them around one run (design §4.5)."""

    runId: str
    direction: Direction
    levels: int
    asOf: NotRequired[str]
    runs: list[RunOfRunLineage]
    datasetVersions: list[DatasetVersion]
    edges: list[RunLineageEdge]
    truncated: NotRequired[bool]
