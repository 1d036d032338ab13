"""Recorded field operations as a standard OpenLineage RunEvent (design §3.5).

The recorder emits these events through openlineage-python's transports, and the server turns
the seed's JSON document into the very same event before ingesting it, so both producers take
one path. Any OpenLineage consumer sees correct lineage: the destination is an output, the
sources are inputs, `job.facets.lineage` holds the field-level edges the operations imply, and
the full ordered operations travel in the `upstream_fieldOperations` output facet.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import attr
from openlineage.client.event_v2 import (
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
)
from openlineage.client.generated import (
    documentation_dataset,
    job_type_job,
    lineage,
    parent_run,
    schema_dataset,
)
from openlineage.client.generated.base import (
    DatasetFacet,
    InputDatasetFacet,
    JobFacet,
    OutputDatasetFacet,
    RunFacet,
)

from upstream._version import __version__
from upstream.model.facets import COMPONENT_FACET, FIELD_OPERATIONS_FACET, TEMPORARY_FACET
from upstream.model.field_operations import Destination, OperationSet, SourceRef

PRODUCER = f"https://github.com/upstream-lineage/upstream/tree/{__version__}/recorder"
_FACET_SCHEMA = "https://github.com/upstream-lineage/upstream/blob/main/spec/{}.json"


@attr.define
class FieldOperationsFacet(OutputDatasetFacet):
    """`upstream_fieldOperations`: the full ordered operations that made the destination, and
    its field list when the program stated it."""

    operations: list[dict[str, Any]]
    fields: list[str] | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return _FACET_SCHEMA.format("FieldOperationsFacet")


@attr.define
class TemporaryFacet(OutputDatasetFacet):
    """`upstream_temporary`: the destination is temporary to the run's workflow run."""

    temporary: bool = True

    @staticmethod
    def _get_schema() -> str:
        return _FACET_SCHEMA.format("TemporaryFacet")


@attr.define
class ComponentOutputFacet(OutputDatasetFacet):
    """`upstream_component` on an output: the part of the job that wrote it."""

    name: str

    @staticmethod
    def _get_schema() -> str:
        return _FACET_SCHEMA.format("ComponentFacet")


@attr.define
class ComponentInputFacet(InputDatasetFacet):
    """`upstream_component` on an input: the part of the job that read it."""

    name: str

    @staticmethod
    def _get_schema() -> str:
        return _FACET_SCHEMA.format("ComponentFacet")


@dataclass(frozen=True)
class ParentRun:
    """The run (of a workflow) that a run belongs to."""

    namespace: str
    name: str
    run_id: uuid.UUID


@dataclass(frozen=True)
class RunIdentity:
    """Who emits: the job, the run, whether the job is a workflow, and its parent run."""

    namespace: str
    name: str
    run_id: uuid.UUID
    workflow: bool = False
    parent: ParentRun | None = None


@dataclass(frozen=True)
class Recording:
    """One `record` call: a destination and the validated operations that made it."""

    destination: Destination
    operations: OperationSet
    component: str | None = None

    @property
    def fields(self) -> list[str]:
        """The destination's fields: as stated, else those alive after the last operation."""
        if self.destination.fields is not None:
            return list(self.destination.fields)
        return list(self.operations.alive)


def run_event(
    identity: RunIdentity,
    state: str,
    time: datetime,
    recordings: Sequence[Recording] = (),
) -> RunEvent:
    """The RunEvent of `identity` in `state` at `time`, carrying `recordings`."""
    inputs: list[InputDataset] = []
    outputs: list[OutputDataset] = []
    entries: list[lineage.LineageEntry] = []
    for recording in recordings:
        inputs.extend(
            _input(source, recording.component) for source in recording.operations.sources
        )
        outputs.append(_output(recording))
        entries.append(lineage_entry(recording))
    job_facets: dict[str, JobFacet] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH",
            integration="UPSTREAM",
            jobType="WORKFLOW" if identity.workflow else "JOB",
            producer=PRODUCER,
        )
    }
    if entries:
        job_facets["lineage"] = lineage.LineageJobFacet(entries=entries, producer=PRODUCER)
    run_facets: dict[str, RunFacet] = {}
    if identity.parent is not None:
        run_facets["parent"] = parent_run.ParentRunFacet(
            run=parent_run.Run(runId=str(identity.parent.run_id)),
            job=parent_run.Job(namespace=identity.parent.namespace, name=identity.parent.name),
            producer=PRODUCER,
        )
    return RunEvent(
        eventType=RunState(state),
        eventTime=time.isoformat(),
        run=Run(runId=str(identity.run_id), facets=run_facets),
        job=Job(namespace=identity.namespace, name=identity.name, facets=job_facets),
        inputs=_unique_inputs(inputs),
        outputs=outputs,
        producer=PRODUCER,
    )


def lineage_entry(recording: Recording) -> lineage.LineageDatasetEntry:
    """The lineage facet entry for the destination: each field from the source fields it was
    made from; sources no field comes from feed the destination as a whole."""
    field_lineage, unreached = recording.operations.field_lineage(recording.fields)
    fields = {
        name: lineage.LineageFieldEntry(
            inputs=[
                lineage.LineageDatasetInput(
                    namespace=origin.source.namespace,
                    name=origin.source.name,
                    type="DATASET",
                    field=origin.field,
                    transformations=[
                        lineage.LineageTransformation(type="DIRECT", subtype=origin.subtype)
                    ],
                )
                for origin in origins
            ]
        )
        for name, origins in field_lineage.items()
    }
    inputs: list[lineage.LineageInput] | None = [
        lineage.LineageDatasetInput(namespace=s.namespace, name=s.name, type="DATASET")
        for s in unreached
    ] or None
    destination = recording.destination
    return lineage.LineageDatasetEntry(
        namespace=destination.namespace,
        name=destination.name,
        type="DATASET",
        inputs=inputs,
        fields=fields,
    )


def _input(source: SourceRef, component: str | None) -> InputDataset:
    facets: dict[str, DatasetFacet] = {}
    if source.description:
        facets["documentation"] = documentation_dataset.DocumentationDatasetFacet(
            description=source.description, producer=PRODUCER
        )
    input_facets: dict[str, InputDatasetFacet] = {}
    if component:
        input_facets[COMPONENT_FACET] = ComponentInputFacet(name=component, producer=PRODUCER)
    return InputDataset(
        namespace=source.namespace, name=source.name, facets=facets, inputFacets=input_facets
    )


def _unique_inputs(inputs: list[InputDataset]) -> list[InputDataset]:
    """A source read by several recordings (with the same component) is listed once."""
    seen: dict[tuple[str, str, str], InputDataset] = {}
    for item in inputs:
        component = (item.inputFacets or {}).get(COMPONENT_FACET)
        key = (item.namespace, item.name, getattr(component, "name", ""))
        seen.setdefault(key, item)
    return list(seen.values())


def _output(recording: Recording) -> OutputDataset:
    destination = recording.destination
    facets: dict[str, DatasetFacet] = {
        "schema": schema_dataset.SchemaDatasetFacet(
            fields=[schema_dataset.SchemaDatasetFacetFields(name=f) for f in recording.fields],
            producer=PRODUCER,
        )
    }
    if destination.description:
        facets["documentation"] = documentation_dataset.DocumentationDatasetFacet(
            description=destination.description, producer=PRODUCER
        )
    output_facets: dict[str, OutputDatasetFacet] = {
        FIELD_OPERATIONS_FACET: FieldOperationsFacet(
            operations=recording.operations.to_json(),
            fields=list(destination.fields) if destination.fields is not None else None,
            producer=PRODUCER,
        )
    }
    if destination.temporary:
        output_facets[TEMPORARY_FACET] = TemporaryFacet(producer=PRODUCER)
    if recording.component:
        output_facets[COMPONENT_FACET] = ComponentOutputFacet(
            name=recording.component, producer=PRODUCER
        )
    return OutputDataset(
        namespace=destination.namespace,
        name=destination.name,
        facets=facets,
        outputFacets=output_facets,
    )
