"""One accepted OpenLineage event -> the facts it contributes (design §3).

Pure: no database. The store applies the facts, including the rules that need what is already
stored (precedence across a run's events, the latest declaration winning).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from upstream.ingest.column_lineage import column_lineage_edges, column_lineage_reading
from upstream.ingest.context import Owner
from upstream.ingest.field_operations import record_field_operations
from upstream.ingest.lineage_facet import (
    FacetLineage,
    LineageFacetReading,
    dataset_facet_edges,
    owned_job_facet,
    read_job_facet,
)
from upstream.ingest.parts import (
    COLUMN_LINEAGE_PARTS,
    DATASET_PARTS,
    JOB_PARTS,
    LINEAGE_FACET_PARTS,
    SCHEMA_PARTS,
    ColumnLineageReading,
    DatasetReading,
    JobReading,
    owned_edges,
    part_key,
)
from upstream.ingest.sql_facet import sql_facet_text
from upstream.model.events import DatasetEvent, DatasetInfo, JobEvent, OpenLineageEvent, RunEvent
from upstream.model.facets import (
    COMPONENT_FACET,
    DATASET_TYPE_FACET,
    FIELD_OPERATIONS_FACET,
    TEMPORARY_FACET,
    ColumnLineageFacet,
    ComponentFacet,
    DatasetTypeFacet,
    HierarchyFacet,
    JobDependenciesFacet,
    JobTypeFacet,
    LifecycleStateChangeFacet,
    LineageDatasetFacet,
    LineageJobFacet,
    OwnershipFacet,
    ParentRunFacet,
    SchemaFacet,
    SchemaField,
    SymlinksFacet,
    TagsFacet,
    TemporaryFacet,
    description_of,
    lenient_time,
    parse_facet,
)
from upstream.model.facts import (
    DatasetFact,
    DatasetNode,
    Declaration,
    EventFacts,
    EventRecord,
    JobFact,
    RelationFact,
    RunFact,
    Scope,
    SqlRequest,
    SymlinkFact,
    VersionFact,
)
from upstream.model.hierarchy import HIERARCHY_FACET
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.job_dependencies import JOB_DEPENDENCIES_FACET, dependencies_stated
from upstream.model.merge_rules import DATASET_CONTENT, JOB_CONTENT, content_digest
from upstream.model.ownership import OWNERSHIP_FACET, TAGS_FACET
from upstream.model.workflow import temporary_by_type

log = logging.getLogger(__name__)


def facts_for(
    event: OpenLineageEvent, record: EventRecord, *, sql_lineage: bool = True
) -> EventFacts:
    """Everything `event` contributes; raises InvalidInput for interpreted facets that are
    malformed. `sql_lineage`: read the `sql` job facet for outputs without column lineage."""
    facts = EventFacts(record=record)
    if isinstance(event, RunEvent):
        _run_event(event, facts, sql_lineage)
    elif isinstance(event, JobEvent):
        _job_event(event, facts, sql_lineage)
    else:
        _dataset_event(event, facts)
    facts.namespaces.update(d.ref.namespace for d in facts.datasets)
    facts.namespaces.update(j.ref.namespace for j in facts.jobs)
    return facts


def _run_event(event: RunEvent, facts: EventFacts, sql_lineage: bool) -> None:
    job = JobRef(event.job.namespace, event.job.name)
    run_id = event.run.runId
    owner = Owner(job=job, run_id=run_id, scope="run", event_time=event.eventTime)
    reading = _job_reading(event.job.facets)
    facts.jobs.append(_job_fact(job, event.job.facets, reading))
    run = RunFact(
        run_id=run_id,
        job=job,
        event_time=event.eventTime,
        event_type=event.eventType,
        facets=dict(event.run.facets),
    )
    _nominal_time(run, event.run.facets)
    facts.snapshot = reading.content_mode == "COMPLETE_SNAPSHOT"
    if TAGS_FACET in event.run.facets:
        parse_facet(TagsFacet, event.run.facets[TAGS_FACET], f"run.facets.{TAGS_FACET}")
    facts.runs.append(run)
    _parent(event, run, facts)
    _job_dependencies(event, run, facts)
    lineage = _job_lineage(event.job.facets, reading, owner)
    run.has_lineage_facet = lineage is not None
    _inputs_outputs(event, owner, lineage, facts, sql_lineage)


def _job_event(event: JobEvent, facts: EventFacts, sql_lineage: bool) -> None:
    job = JobRef(event.job.namespace, event.job.name)
    owner = Owner(job=job, run_id=None, scope="job", event_time=event.eventTime)
    reading = _job_reading(event.job.facets)
    facts.jobs.append(_job_fact(job, event.job.facets, reading))
    lineage = _job_lineage(event.job.facets, reading, owner)
    if lineage is not None or event.inputs or event.outputs:
        # Only a JobEvent that states lineage replaces the declared one; a JobEvent carrying
        # just documentation or ownership leaves it alone.
        facts.declaration = Declaration("job", job, event.eventTime, lineage is not None)
    _inputs_outputs(event, owner, lineage, facts, sql_lineage)


def _dataset_event(event: DatasetEvent, facts: EventFacts) -> None:
    target = DatasetRef(event.dataset.namespace, event.dataset.name)
    reading = _dataset_reading(event.dataset, "dataset")
    facts.datasets.append(_dataset_fact(target, event.dataset, reading, facts))
    owner = Owner(job=None, run_id=None, scope="dataset", event_time=event.eventTime)
    raw = event.dataset.facets.get("lineage")
    if raw is not None:
        facet = parse_facet(LineageDatasetFacet, raw, "dataset.facets.lineage")
        facts.edges.extend(dataset_facet_edges(target, facet, owner).edges)
    elif "columnLineage" in event.dataset.facets:
        column = parse_facet(
            ColumnLineageFacet,
            event.dataset.facets["columnLineage"],
            "dataset.facets.columnLineage",
        )
        facts.edges.extend(column_lineage_edges(target, column, owner)[0])
    else:
        return  # metadata only: the dataset's declared lineage stays as it was
    facts.declaration = Declaration("dataset", target, event.eventTime, raw is not None)
    _register_edge_entities(facts)


def _job_lineage(job_facets: dict[str, Any], job: JobReading, owner: Owner) -> FacetLineage | None:
    if job.lineage_key is None:
        return None
    raw = job_facets["lineage"]
    reading = LINEAGE_FACET_PARTS.read(job.lineage_key, _read_job_lineage, raw, owner)
    return owned_job_facet(reading, owner)


def _read_job_lineage(raw: Any, owner: Owner) -> LineageFacetReading:
    """A job's `lineage` facet, read with the first owner that sends it."""
    return read_job_facet(parse_facet(LineageJobFacet, raw, "job.facets.lineage"), owner)


def _inputs_outputs(
    event: RunEvent | JobEvent,
    owner: Owner,
    lineage: FacetLineage | None,
    facts: EventFacts,
    sql_lineage: bool,
) -> None:
    """Relations for the event's inputs and outputs, and the edges of its facets, with the
    lineage facet taking precedence over columnLineage, and that over the `sql` facet, per
    output (design §3.2, §3.3)."""
    assert owner.job is not None
    time = event.eventTime
    for index, dataset in enumerate(event.inputs):
        path = f"inputs[{index}]"
        ref = DatasetRef(dataset.namespace, dataset.name)
        reading = _dataset_reading(dataset, path)
        facts.datasets.append(_dataset_fact(ref, dataset, reading, facts))
        facts.relations.append(
            RelationFact(
                dataset=ref,
                job=owner.job,
                run_id=owner.run_id,
                access="read",
                event_time=time,
                component=_component(dataset.inputFacets, f"{path}.inputFacets"),
                temporary=_temporary_of(reading, dataset.facets, path),
                facets=dict(dataset.inputFacets),
                version=_named_version(dataset.facets),
            )
        )
    described = lineage.targets if lineage else set()
    without_field_lineage: list[DatasetRef] = []
    for index, output in enumerate(event.outputs):
        path = f"outputs[{index}]"
        ref = DatasetRef(output.namespace, output.name)
        reading = _dataset_reading(output, path)
        fact = _dataset_fact(ref, output, reading, facts)
        if FIELD_OPERATIONS_FACET in output.outputFacets:
            unlisted = record_field_operations(output, fact, path, owner, event.inputs, facts)
            facts.relations.extend(_edge_relations(unlisted, "read", owner))
        facts.datasets.append(fact)
        all_facets = {**output.facets, **output.outputFacets}
        lifecycle = _lifecycle(all_facets, path)
        facts.relations.append(
            RelationFact(
                dataset=ref,
                job=owner.job,
                run_id=owner.run_id,
                access="write",
                event_time=time,
                component=_component(output.outputFacets, f"{path}.outputFacets"),
                lifecycle=lifecycle,
                temporary=(
                    _temporary(all_facets, path)
                    if _TEMPORARY_FACETS & output.outputFacets.keys()
                    else _temporary_of(reading, output.facets, path)
                ),
                facets=dict(output.outputFacets),
                version=_named_version(output.facets),
            )
        )
        if owner.run_id is not None:
            facts.versions.append(
                VersionFact(ref, owner.run_id, time, fact.fields, dict(output.facets), lifecycle)
            )
        if reading.column_lineage_key is not None and ref not in described:
            raw = output.facets["columnLineage"]
            column = COLUMN_LINEAGE_PARTS.read(
                reading.column_lineage_key,
                _read_column_lineage,
                ref,
                raw,
                f"{path}.facets.columnLineage",
            )
            facts.edges.extend(owned_edges(column, owner))
            facts.relations.extend(_edge_relations(set(column.sources), "read", owner))
        elif ref not in described and FIELD_OPERATIONS_FACET not in output.outputFacets:
            without_field_lineage.append(ref)
    if sql_lineage and without_field_lineage:
        _sql_request(event, without_field_lineage, facts)
    if lineage is not None:
        facts.edges.extend(lineage.edges)
        facts.relations.extend(_edge_relations(lineage.reads, "read", owner))
        facts.relations.extend(_edge_relations(lineage.writes, "write", owner))
    _drop_covered_edge_relations(facts)
    _register_edge_entities(facts)


def _sql_request(event: RunEvent | JobEvent, pending: list[DatasetRef], facts: EventFacts) -> None:
    """The `sql` facet, for the outputs nothing else describes (§3.3); read at write time
    (`with_sql_lineage`), when the run's datasets from its earlier events are known too."""
    text = sql_facet_text(event.job.facets)
    if text is not None:
        facts.sql = SqlRequest(
            query=text[0],
            dialect=text[1],
            pending=tuple(pending),
            inputs=tuple(DatasetRef(d.namespace, d.name) for d in event.inputs),
            outputs=tuple(DatasetRef(d.namespace, d.name) for d in event.outputs),
        )


def with_sql_lineage(
    facts: EventFacts, run_datasets: Mapping[DatasetRef, list[str] | None]
) -> EventFacts:
    """`facts` with the field edges of its `sql` request (a copy; `facts` itself only gets
    the statement counts). `run_datasets` are the datasets the run listed in its other
    events, with their fields: table names resolve against them too. A statement no parser
    can read is logged and counted, never an error for the producer."""
    request = facts.sql
    if request is None:
        return facts
    # Imported here: the SQL parsers weigh 33 MB, and most processes never meet a query.
    from upstream.ingest.sql_lineage import sql_lineage

    fields = {ref: names for ref, names in run_datasets.items() if names}
    fields.update({d.ref: [f["name"] for f in d.fields] for d in facts.datasets if d.fields})
    others = tuple(ref for ref in run_datasets if ref not in request.outputs)
    owner = _owner_of(facts)
    found = sql_lineage(
        request.query,
        request.dialect,
        request.pending,
        (*request.inputs, *others),
        request.outputs,
        fields,
        owner,
    )
    facts.sql_parsed = found.parsed
    facts.sql_unparsed = len(found.failures)
    if found.failures:
        log.warning(
            "could not read %d statement(s) of the sql facet of job %s (run %s) for column "
            "lineage: %s",
            len(found.failures),
            owner.job.name if owner.job else "",
            owner.run_id,
            "; ".join(found.failures),
            extra={"run_id": str(owner.run_id) if owner.run_id else None},
        )
    if not found.edges:
        return facts
    completed = replace(
        facts,
        edges=[*facts.edges, *found.edges],
        relations=[*facts.relations, *_edge_relations(found.sources, "read", owner)],
        datasets=list(facts.datasets),
        jobs=list(facts.jobs),
        runs=list(facts.runs),
    )
    _drop_covered_edge_relations(completed)
    _register_edge_entities(completed)
    return completed


def _owner_of(facts: EventFacts) -> Owner:
    record = facts.record
    scope: Scope = "run" if record.run_id is not None else "job"
    return Owner(job=record.job, run_id=record.run_id, scope=scope, event_time=record.event_time)


def _drop_covered_edge_relations(facts: EventFacts) -> None:
    """An edge-implied relation adds nothing for a dataset the event lists with that access,
    and would differ from the listed one by component (`upstream_component`), which edges
    cannot know: it would show as an extra component-less relation."""
    listed = {(r.dataset, r.access) for r in facts.relations if r.origin == "io"}
    facts.relations = [
        r for r in facts.relations if r.origin == "io" or (r.dataset, r.access) not in listed
    ]


def _edge_relations(datasets: set[DatasetRef], access: str, owner: Owner) -> list[RelationFact]:
    """Datasets the own job touches according to its edges, though not listed as inputs or
    outputs (dbt's columnLineage names sources its `inputs` omit)."""
    assert owner.job is not None
    return [
        RelationFact(
            dataset=ref,
            job=owner.job,
            run_id=owner.run_id,
            access="read" if access == "read" else "write",
            event_time=owner.event_time,
            origin="edge",
        )
        for ref in sorted(datasets)
    ]


def _register_edge_entities(facts: EventFacts) -> None:
    """Datasets and jobs named only by edges still become entities; runs named by JOB
    references become (event-less) runs of their job."""
    known_datasets = {d.ref for d in facts.datasets}
    known_jobs = {j.ref for j in facts.jobs}
    known_runs = {r.run_id for r in facts.runs}
    refs: set[DatasetRef] = {r.dataset for r in facts.relations}
    before = None
    for edge in facts.edges:
        if edge.part is not None:  # a part lists its datasets once
            if edge.part is not before:
                refs |= edge.part.datasets
                before = edge.part
            continue
        for node in (edge.source, edge.target):
            if isinstance(node, DatasetNode):
                refs.add(node.dataset)
            else:
                if node.job not in known_jobs:
                    known_jobs.add(node.job)
                    facts.jobs.append(JobFact(node.job))
                if node.run_id is not None and node.run_id not in known_runs:
                    known_runs.add(node.run_id)
                    facts.runs.append(
                        RunFact(node.run_id, node.job, facts.record.event_time, has_events=False)
                    )
    for ref in sorted(refs - known_datasets):
        facts.datasets.append(DatasetFact(ref))


def _parent(event: RunEvent, run: RunFact, facts: EventFacts) -> None:
    """The parent facet: the run's place in a workflow (design §3.4). A run naming itself or
    its own job as parent is not its own workflow, so such a link is not stored."""
    raw = event.run.facets.get("parent")
    if raw is None:
        return
    parent = parse_facet(ParentRunFacet, raw, "run.facets.parent")
    parent_job = JobRef(parent.job.namespace, parent.job.name)
    if parent.run.runId == run.run_id or parent_job == run.job:
        return
    run.parent_run_id = parent.run.runId
    facts.jobs.append(JobFact(parent_job, seen_as_parent=True))
    parent_run = RunFact(parent.run.runId, parent_job, event.eventTime, has_events=False)
    facts.runs.append(parent_run)
    if parent.root is None:
        return
    root_job = JobRef(parent.root.job.namespace, parent.root.job.name)
    root_id = parent.root.run.runId
    if root_id in (parent.run.runId, run.run_id) or root_job == run.job:
        return
    run.root_run_id = root_id
    if root_job != parent_job:
        parent_run.parent_run_id = root_id
        parent_run.root_run_id = root_id
        facts.jobs.append(JobFact(root_job, seen_as_parent=True))
        facts.runs.append(RunFact(root_id, root_job, event.eventTime, has_events=False))


def _job_dependencies(event: RunEvent, run: RunFact, facts: EventFacts) -> None:
    """The `jobDependencies` facet: control-flow edges between job runs (design §3.3). The
    jobs it names become jobs, as jobs a lineage facet names do; the runs stay ids."""
    raw = event.run.facets.get(JOB_DEPENDENCIES_FACET)
    if raw is None:
        return
    facet = parse_facet(JobDependenciesFacet, raw, f"run.facets.{JOB_DEPENDENCIES_FACET}")
    stated = dependencies_stated(facet, run.run_id, run.job, event.eventTime)
    facts.job_dependencies.extend(stated)
    named = {ref for fact in stated for ref in (fact.upstream_job, fact.downstream_job)}
    facts.jobs.extend(JobFact(ref) for ref in sorted(named - {run.job}))


def _nominal_time(run: RunFact, facets: dict[str, Any]) -> None:
    nominal = facets.get("nominalTime")
    if isinstance(nominal, dict):
        run.nominal_start = lenient_time(nominal.get("nominalStartTime"))
        run.nominal_end = lenient_time(nominal.get("nominalEndTime"))


def _job_reading(facets: dict[str, Any]) -> JobReading:
    return JOB_PARTS.read(part_key(facets), _read_job, facets)


def _read_job(facets: dict[str, Any]) -> JobReading:
    """A job's facets: its type, and what its events hold (`jobType.emissionPattern`,
    design §3.3), if it says; its owners and tags are checked."""
    job_type = None
    if "jobType" in facets:
        job_type = parse_facet(JobTypeFacet, facets["jobType"], "job.facets.jobType")
    _check_owners_and_tags(facets, "job.facets")
    pattern = job_type.emissionPattern if job_type is not None else None
    reading = JobReading(
        description=description_of(facets),
        job_type=job_type.jobType if job_type is not None else None,
        integration=job_type.integration if job_type is not None else None,
        processing_type=job_type.processingType if job_type is not None else None,
        content_mode=pattern.content_mode if pattern is not None else None,
        lineage_key=part_key(facets["lineage"]) if "lineage" in facets else None,
        content_digest="",
    )
    # The row content `_job_fact` gives the writer.
    row = {
        "facets": facets,
        "description": reading.description,
        "job_type": reading.job_type,
        "integration": reading.integration,
        "processing_type": reading.processing_type,
        "seen_as_parent": False,
    }
    return replace(reading, content_digest=content_digest(row, JOB_CONTENT))


def _job_fact(job: JobRef, facets: dict[str, Any], reading: JobReading) -> JobFact:
    return JobFact(
        job,
        facets=dict(facets),
        description=reading.description,
        job_type=reading.job_type,
        integration=reading.integration,
        processing_type=reading.processing_type,
        content_digest=reading.content_digest,
    )


def _check_owners_and_tags(facets: dict[str, Any], path: str) -> None:
    """Refuse a malformed `ownership` or `tags` facet (read as owners and tags, design §3.3);
    both are kept as sent, and read when answers show them (`upstream.model.ownership`)."""
    if OWNERSHIP_FACET in facets:
        parse_facet(OwnershipFacet, facets[OWNERSHIP_FACET], f"{path}.{OWNERSHIP_FACET}")
    if TAGS_FACET in facets:
        parse_facet(TagsFacet, facets[TAGS_FACET], f"{path}.{TAGS_FACET}")


def _dataset_reading(dataset: DatasetInfo, path: str) -> DatasetReading:
    key = part_key(dataset.namespace, dataset.name, dataset.facets)
    return DATASET_PARTS.read(key, _read_dataset, dataset, path)


def _read_dataset(dataset: DatasetInfo, path: str) -> DatasetReading:
    """A dataset's facets: its schema, symlinks and data source; its type, owners, tags and
    containers are checked."""
    facets = dataset.facets
    fields = None
    if "schema" in facets:
        raw = facets["schema"]
        fields = SCHEMA_PARTS.read(part_key(raw), _read_schema, raw, f"{path}.facets.schema")
    symlinks: tuple[tuple[str, str, str | None], ...] = ()
    if "symlinks" in facets:
        listed = parse_facet(SymlinksFacet, facets["symlinks"], f"{path}.facets.symlinks")
        symlinks = tuple((s.namespace, s.name, s.type) for s in listed.identifiers)
    temporary = None
    if DATASET_TYPE_FACET in facets:  # interpreted (§3.4): refused when malformed
        temporary = _temporary(facets, path)
    _check_owners_and_tags(facets, f"{path}.facets")
    if HIERARCHY_FACET in facets:  # read as the dataset's containers (§4.7)
        parse_facet(HierarchyFacet, facets[HIERARCHY_FACET], f"{path}.facets.{HIERARCHY_FACET}")
    source = facets.get("dataSource")
    column_lineage = facets.get("columnLineage")
    description = description_of(facets)
    source_name = (
        source["name"] if isinstance(source, dict) and isinstance(source.get("name"), str) else None
    )
    # The row content `_dataset_fact` gives the writer.
    row = {
        "facets": facets,
        "fields": [] if fields is None else list(fields),
        "description": description,
        "source_name": source_name,
    }
    return DatasetReading(
        description=description,
        fields=fields,
        symlinks=symlinks,
        source_name=source_name,
        temporary=temporary,
        column_lineage_key=(
            None
            if column_lineage is None
            else part_key(dataset.namespace, dataset.name, column_lineage)
        ),
        content_digest=content_digest(row, DATASET_CONTENT),
    )


def _dataset_fact(
    ref: DatasetRef, dataset: DatasetInfo, reading: DatasetReading, facts: EventFacts
) -> DatasetFact:
    fact = DatasetFact(
        ref,
        facets=dict(dataset.facets),
        fields=None if reading.fields is None else list(reading.fields),
        description=reading.description,
        source_name=reading.source_name,
        content_digest=reading.content_digest,
    )
    facts.symlinks.extend(SymlinkFact(ref, *symlink) for symlink in reading.symlinks)
    return fact


def _read_schema(raw: Any, path: str) -> tuple[dict[str, Any], ...]:
    """The fields of a `schema` facet, nested fields included."""
    return tuple(_field_dict(f) for f in parse_facet(SchemaFacet, raw, path).fields)


def _read_column_lineage(ref: DatasetRef, raw: Any, path: str) -> ColumnLineageReading:
    """The edges of an output's `columnLineage` facet, without their owner."""
    return column_lineage_reading(ref, parse_facet(ColumnLineageFacet, raw, path))


def _field_dict(schema_field: SchemaField) -> dict[str, Any]:
    result: dict[str, Any] = {"name": schema_field.name}
    if schema_field.type is not None:
        result["type"] = schema_field.type
    if schema_field.description is not None:
        result["description"] = schema_field.description
    if schema_field.fields:
        result["fields"] = [_field_dict(f) for f in schema_field.fields]
    return result


def _lifecycle(facets: dict[str, Any], path: str) -> str | None:
    raw = facets.get("lifecycleStateChange")
    if raw is None:
        return None
    facet = parse_facet(LifecycleStateChangeFacet, raw, f"{path}.facets.lifecycleStateChange")
    return facet.lifecycleStateChange


#: The facets that say whether a dataset is temporary.
_TEMPORARY_FACETS = frozenset((TEMPORARY_FACET, DATASET_TYPE_FACET))


def _temporary_of(reading: DatasetReading, facets: dict[str, Any], path: str) -> bool:
    """`_temporary(facets, path)` of the dataset `reading` was read from."""
    return _temporary(facets, path) if reading.temporary is None else reading.temporary


def _temporary(facets: dict[str, Any], path: str) -> bool:
    """Whether the producer marks the dataset temporary (design §3.4): our own facet, or
    OpenLineage's `datasetType` (`upstream.model.workflow.temporary_by_type`)."""
    raw = facets.get(TEMPORARY_FACET)
    own = f"{path}.facets.{TEMPORARY_FACET}"
    if raw is not None and parse_facet(TemporaryFacet, raw, own).temporary:
        return True
    raw = facets.get(DATASET_TYPE_FACET)
    if raw is None:
        return False
    kind = parse_facet(DatasetTypeFacet, raw, f"{path}.facets.{DATASET_TYPE_FACET}")
    return temporary_by_type(kind.datasetType, kind.subType)


def _named_version(facets: dict[str, Any]) -> str | None:
    """The `version` facet's datasetVersion: which version of the dataset a run read or
    wrote, in the producer's words (run lineage, design §4.5). A facet we only use to link
    versions: a malformed one names no version rather than refusing the event."""
    raw = facets.get("version")
    named = raw.get("datasetVersion") if isinstance(raw, dict) else None
    return named if isinstance(named, str) and named.strip() else None


def _component(facets: dict[str, Any], path: str) -> str:
    raw = facets.get(COMPONENT_FACET)
    if raw is None:
        return ""
    return parse_facet(ComponentFacet, raw, f"{path}.{COMPONENT_FACET}").name
