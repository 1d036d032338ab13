"""The facets whose content Upstream interprets, parsed strictly with located errors.

Every other facet is stored as sent. Facet names of our own carry the `upstream_` prefix, as
the OpenLineage spec asks of custom facets.
"""

from __future__ import annotations

import threading
import uuid
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from upstream.model.errors import from_validation_error
from upstream.model.events import Name, RunId, parse_time
from upstream.model.json_text import dumps

#: Output dataset facet: the producer marks the dataset temporary to its workflow run (§3.4).
TEMPORARY_FACET = "upstream_temporary"
#: Dataset facet (OpenLineage): the kind of dataset (TABLE, VIEW, JOB_OUTPUT…) and a subtype
#: (TEMPORARY…); some kinds make the dataset temporary (design §3.4).
DATASET_TYPE_FACET = "datasetType"
#: Output dataset facet: the ordered field operations that made the dataset's fields (§3.5).
FIELD_OPERATIONS_FACET = "upstream_fieldOperations"
#: Output/input dataset facet: the part of the job (mapper, stage…) that touched the dataset.
COMPONENT_FACET = "upstream_component"


def _none_to_empty_list(value: Any) -> Any:
    return [] if value is None else value


class _Facet(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Transformation(_Facet):
    type: str
    subtype: str | None = None
    description: str | None = None
    masking: bool | None = None


Transformations = Annotated[list[Transformation], BeforeValidator(_none_to_empty_list)]


class _JobIdentity(_Facet):
    """A JOB reference: both namespace and name (another job) or neither (the event's job)."""

    type: Literal["JOB"]
    namespace: Name | None = None
    name: Name | None = None
    runId: RunId | None = None

    @model_validator(mode="after")
    def _both_or_neither(self) -> _JobIdentity:
        if (self.namespace is None) != (self.name is None):
            given, missing = ("namespace", "name") if self.name is None else ("name", "namespace")
            raise ValueError(
                f"a JOB reference with {given} must also have {missing} "
                "(omit both to mean the event's own job)"
            )
        return self

    @property
    def is_own_job(self) -> bool:
        return self.namespace is None


class LineageDatasetInput(_Facet):
    type: Literal["DATASET"]
    namespace: Name
    name: Name
    field: Name | None = None
    transformations: Transformations = Field(default_factory=list)


class LineageJobInput(_JobIdentity):
    transformations: Transformations = Field(default_factory=list)


#: A lineage input, told apart by its `type` (DATASET or JOB).
LineageInput = Annotated[LineageDatasetInput | LineageJobInput, Field(discriminator="type")]
LineageInputs = Annotated[list[LineageInput], BeforeValidator(_none_to_empty_list)]


class LineageFieldEntry(_Facet):
    inputs: LineageInputs


class LineageDatasetEntry(_Facet):
    type: Literal["DATASET"]
    namespace: Name
    name: Name
    # None: not stated; []: explicitly no upstream.
    inputs: list[LineageInput] | None = None
    fields: dict[Name, LineageFieldEntry] | None = None


class LineageJobEntry(_JobIdentity):
    inputs: LineageInputs = Field(default_factory=list)


LineageEntry = Annotated[LineageDatasetEntry | LineageJobEntry, Field(discriminator="type")]


class LineageJobFacet(_Facet):
    """`job.facets.lineage`: explicit edges owned by the job (design §3.2)."""

    entries: list[LineageEntry]


class LineageDatasetFacet(_Facet):
    """`dataset.facets.lineage`: explicit lineage of one target dataset."""

    inputs: list[LineageInput] | None = None
    fields: dict[Name, LineageFieldEntry] | None = None


class ColumnInputField(_Facet):
    namespace: Name
    name: Name
    field: Name
    transformations: Transformations = Field(default_factory=list)


class ColumnField(_Facet):
    inputFields: Annotated[list[ColumnInputField], BeforeValidator(_none_to_empty_list)]
    transformationDescription: str | None = None
    transformationType: str | None = None


class ColumnLineageFacet(_Facet):
    """`columnLineage`: output fields from input fields; `dataset` holds dataset-wide inputs."""

    fields: Annotated[dict[Name, ColumnField], BeforeValidator(lambda v: {} if v is None else v)]
    dataset: Annotated[list[ColumnInputField], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class SchemaField(_Facet):
    name: Name
    type: str | None = None
    description: str | None = None
    fields: Annotated[list[SchemaField], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class SchemaFacet(_Facet):
    fields: Annotated[list[SchemaField], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class SymlinkIdentifier(_Facet):
    namespace: Name
    name: Name
    type: str | None = None


class SymlinksFacet(_Facet):
    identifiers: Annotated[list[SymlinkIdentifier], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class LifecycleStateChangeFacet(_Facet):
    lifecycleStateChange: str


class ParentRef(_Facet):
    runId: RunId


class ParentJobRef(_Facet):
    namespace: Name
    name: Name


class ParentRoot(_Facet):
    run: ParentRef
    job: ParentJobRef


class ParentRunFacet(_Facet):
    """`run.facets.parent`: the run that started this one, and the root of the chain."""

    run: ParentRef
    job: ParentJobRef
    root: ParentRoot | None = None


#: What a streaming job's events hold (`jobType.emissionPattern`): all its lineage so far
#: (ACCUMULATIVE), or the whole of it as of the event (COMPLETE_SNAPSHOT).
ContentMode = Literal["ACCUMULATIVE", "COMPLETE_SNAPSHOT"]


class EmissionPattern(_Facet):
    """How a job emits events. The spec (JobTypeJobFacet 2-0-4) names the content mode
    `eventCompleteness`; `eventContentMode` is read as the same."""

    eventTrigger: str | None = None
    eventCompleteness: ContentMode | None = None
    eventContentMode: ContentMode | None = None
    windowDuration: Annotated[int, Field(ge=1)] | None = None

    @property
    def content_mode(self) -> ContentMode | None:
        return self.eventCompleteness or self.eventContentMode


class JobTypeFacet(_Facet):
    jobType: str | None = None
    integration: str | None = None
    processingType: str | None = None
    emissionPattern: EmissionPattern | None = None


class TemporaryFacet(_Facet):
    temporary: bool = True


class DatasetTypeFacet(_Facet):
    """`datasetType`: what kind of dataset this is, in the producer's words."""

    datasetType: str
    subType: str | None = None


class OwnerEntry(_Facet):
    name: Name
    type: str | None = None


class OwnershipFacet(_Facet):
    """`ownership` (job or dataset facet): who owns it, e.g. `team:data-eng`, MAINTAINER."""

    owners: Annotated[list[OwnerEntry], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class TagEntry(_Facet):
    key: Name
    value: str
    source: str | None = None
    #: Dataset tags only: the field of the dataset the tag applies to.
    field: Name | None = None


class TagsFacet(_Facet):
    """`tags` (dataset, job or run facet): key/value tags set by the producer."""

    tags: Annotated[list[TagEntry], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )


class HierarchyLevel(_Facet):
    type: str
    name: Name


class HierarchyFacet(_Facet):
    """`hierarchy` (dataset facet): the containers of the dataset, outermost first, ending
    with the dataset itself (DATABASE, SCHEMA, TABLE)."""

    hierarchy: list[HierarchyLevel]


class ComponentFacet(_Facet):
    name: Name


class DependencyRun(_Facet):
    runId: RunId


class DependencyJob(_Facet):
    namespace: Name
    name: Name


class JobDependency(_Facet):
    """One job (and, when known, run) another run waits for or is waited on by. The spec
    names the kind `dependency_type` (JobDependenciesRunFacet 1-0-1), `type` in 1-0-0."""

    job: DependencyJob
    run: DependencyRun | None = None
    dependency_type: str | None = None
    type: str | None = None
    sequence_trigger_rule: str | None = None
    status_trigger_rule: str | None = None

    @property
    def kind(self) -> str | None:
        return self.dependency_type or self.type


class JobDependenciesFacet(_Facet):
    """`run.facets.jobDependencies`: control flow between job runs, not data flow."""

    upstream: Annotated[list[JobDependency], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )
    downstream: Annotated[list[JobDependency], BeforeValidator(_none_to_empty_list)] = Field(
        default_factory=list
    )
    trigger_rule: str | None = None


FacetT = TypeVar("FacetT", bound=BaseModel)


#: Facets parsed lately, by model and JSON text. A run's COMPLETE resends its START's facets
#: and a job's runs resend the same `columnLineage` and `lineage` facets, whose validation
#: was the largest part of translating an event; the models are frozen, so one parse serves
#: every event that sends the same content. Only valid facets are kept: a refusal is located
#: anew at each path.
_PARSED: dict[tuple[type[BaseModel], str], BaseModel] = {}
_PARSED_MAX = 4096
_PARSED_LOCK = threading.Lock()


def parse_facet(model: type[FacetT], value: Any, path: str) -> FacetT:
    """Parse an interpreted facet; raise InvalidInput located at `path`."""
    key = (model, dumps(value))
    found = _PARSED.get(key)
    if found is not None:
        return found  # type: ignore[return-value]  # stored under its own model
    try:
        parsed = model.model_validate(value)
    except ValidationError as exc:
        raise from_validation_error(exc, path) from None
    with _PARSED_LOCK:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))  # the oldest
        _PARSED[key] = parsed
    return parsed


def lenient_time(value: Any) -> Any:
    """A facet timestamp we only display: parsed when it parses, else ignored."""
    try:
        return parse_time(value)
    except ValueError:
        return None


def description_of(facets: dict[str, Any]) -> str | None:
    """The `documentation` facet's description, when it is a string."""
    doc = facets.get("documentation")
    if isinstance(doc, dict) and isinstance(doc.get("description"), str):
        return str(doc["description"])
    return None


def same_uuid(a: uuid.UUID | None, b: uuid.UUID | None) -> bool:
    return a is not None and a == b
