"""The Lineage Job Facet and Lineage Dataset Facet as stored edges (design §3.2).

Each entry names one target and only the sources that feed it, so exactly those edges are
stored and no inputs x outputs product is inferred for the event. A `JOB` reference without
namespace and name is the event's own job (and run). A dataset source of a field-level edge
also feeds the target dataset as a whole: that dataset edge is stored, marked `implied`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from upstream.ingest.context import Owner
from upstream.model.facets import (
    LineageDatasetEntry,
    LineageDatasetFacet,
    LineageDatasetInput,
    LineageInput,
    LineageJobEntry,
    LineageJobFacet,
    LineageJobInput,
)
from upstream.model.facts import DatasetNode, EdgeFact, JobNode, Node, Origin
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.lineage_sets import EdgePart


@dataclass
class FacetLineage:
    """Edges of one facet, plus the boundary of the own job it reveals."""

    edges: list[EdgeFact] = field(default_factory=list)
    #: Datasets the own job reads / writes according to the entries.
    reads: set[DatasetRef] = field(default_factory=set)
    writes: set[DatasetRef] = field(default_factory=set)
    #: Output datasets the facet describes: columnLineage does not apply to them.
    targets: set[DatasetRef] = field(default_factory=set)


def job_facet_edges(
    facet: LineageJobFacet, owner: Owner, origin: Origin = "lineage_facet"
) -> FacetLineage:
    """Edges of `job.facets.lineage` on a RunEvent (observed) or JobEvent (declared)."""
    result = FacetLineage()
    for entry in facet.entries:
        if isinstance(entry, LineageDatasetEntry):
            _dataset_target(
                DatasetRef(entry.namespace, entry.name), entry.inputs, entry, owner, origin, result
            )
        else:
            _job_target(entry, owner, origin, result)
    return result


@dataclass(frozen=True)
class LineageFacetReading:
    """A job's `lineage` facet as read once (`upstream.ingest.parts`): the facet, and, when
    its edges join datasets only (no `JOB` reference, whose run is the event's), what it
    gives any owner: its edges, stated by the owner that first sent it, each with the part
    of its target (`upstream.model.lineage_sets.EdgePart`), and the datasets it reads,
    writes and describes."""

    facet: LineageJobFacet
    shared: FacetLineage | None


def read_job_facet(facet: LineageJobFacet, owner: Owner) -> LineageFacetReading:
    """What `facet` gives every owner, read with the first one."""
    lineage = job_facet_edges(facet, owner)
    ends = [node for edge in lineage.edges for node in (edge.source, edge.target)]
    if not all(isinstance(node, DatasetNode) for node in ends):
        return LineageFacetReading(facet, None)
    into: dict[DatasetRef | None, list[EdgeFact]] = {}
    for edge in lineage.edges:
        into.setdefault(edge.target_dataset, []).append(edge)
    parts = {
        target: EdgePart(
            "lineage_facet", [(e.source, e.target, e.transformations, e.implied) for e in edges]
        )
        for target, edges in into.items()
    }
    shared = FacetLineage(
        [replace(edge, part=parts[edge.target_dataset]) for edge in lineage.edges],
        lineage.reads,
        lineage.writes,
        lineage.targets,
    )
    return LineageFacetReading(facet, shared)


def owned_job_facet(reading: LineageFacetReading, owner: Owner) -> FacetLineage:
    """The edges of a read `lineage` facet, stated by `owner`."""
    shared = reading.shared
    if shared is None:
        return job_facet_edges(reading.facet, owner)
    edges = [
        owner.edge(e.origin, e.source, e.target, e.transformations, implied=e.implied, part=e.part)
        for e in shared.edges
    ]
    return FacetLineage(edges, set(shared.reads), set(shared.writes), set(shared.targets))


def dataset_facet_edges(
    target: DatasetRef, facet: LineageDatasetFacet, owner: Owner
) -> FacetLineage:
    """Edges of `dataset.facets.lineage`: the same rules for one target dataset."""
    result = FacetLineage()
    _dataset_target(target, facet.inputs, facet, owner, "lineage_facet", result)
    return result


def _dataset_target(
    target: DatasetRef,
    inputs: list[LineageInput] | None,
    entry: LineageDatasetEntry | LineageDatasetFacet,
    owner: Owner,
    origin: Origin,
    result: FacetLineage,
) -> None:
    result.targets.add(target)
    whole = DatasetNode(target)
    sources: list[LineageInput] = list(inputs or [])
    for source in sources:
        node = _source_node(source, owner)
        _add(result, owner, origin, node, whole, source)
        if isinstance(node, DatasetNode) and node.field is not None:
            # A dataset-wide dependency on one field: the dataset feeds the target.
            _add(result, owner, origin, DatasetNode(node.dataset), whole, None, implied=True)
    for field_name, field_entry in sorted((entry.fields or {}).items()):
        target_field = DatasetNode(target, field_name)
        for source in field_entry.inputs:
            _add(result, owner, origin, _source_node(source, owner), target_field, source)
            sources.append(source)
            if isinstance(source, LineageDatasetInput):
                implied_source = DatasetNode(DatasetRef(source.namespace, source.name))
                _add(result, owner, origin, implied_source, whole, None, implied=True)
    if owner.job is not None and _written_by_own_job(sources):
        result.writes.add(target)


def _written_by_own_job(sources: list[LineageInput]) -> bool:
    """The own job writes a target unless every source names another job (a job -> dataset
    edge of someone else's)."""
    return not sources or any(isinstance(s, LineageDatasetInput) or s.is_own_job for s in sources)


def _job_target(entry: LineageJobEntry, owner: Owner, origin: Origin, result: FacetLineage) -> None:
    target = _job_node(entry, owner)
    for source in entry.inputs:
        _add(result, owner, origin, _source_node(source, owner), target, source)


def _source_node(source: LineageInput, owner: Owner) -> Node:
    if isinstance(source, LineageDatasetInput):
        return DatasetNode(DatasetRef(source.namespace, source.name), source.field)
    return _job_node(source, owner)


def _job_node(ref: LineageJobEntry | LineageJobInput, owner: Owner) -> JobNode:
    if ref.is_own_job:
        return owner.job_node()
    assert ref.namespace is not None
    assert ref.name is not None
    return JobNode(JobRef(ref.namespace, ref.name), ref.runId)


def _add(
    result: FacetLineage,
    owner: Owner,
    origin: Origin,
    source: Node,
    target: Node,
    described_by: LineageInput | None,
    *,
    implied: bool = False,
) -> None:
    transformations = (
        [t.model_dump(exclude_none=True) for t in described_by.transformations]
        if described_by is not None
        else []
    )
    result.edges.append(owner.edge(origin, source, target, transformations, implied=implied))
    # The own job reads a dataset that feeds a dataset it writes, or feeds the job itself.
    if (
        owner.job is not None
        and isinstance(source, DatasetNode)
        and (isinstance(target, DatasetNode) or target.job == owner.job)
    ):
        result.reads.add(source.dataset)
