"""The `columnLineage` dataset facet as field edges (design §3.3).

Every edge is kept, even when the schema facet does not list the column. `dataset` entries are
dataset-wide dependencies (a field that affects the whole output, e.g. a filter). A dataset a
field edge reads from is upstream of the output as a whole: that edge is stored as `implied`.
"""

from __future__ import annotations

from typing import Any

from upstream.ingest.context import Owner
from upstream.ingest.parts import ColumnLineageReading, EdgeShape, owned_edges
from upstream.model.facets import ColumnInputField, ColumnLineageFacet
from upstream.model.facts import DatasetNode, EdgeFact
from upstream.model.identity import DatasetRef
from upstream.model.lineage_sets import EdgePart


def column_lineage_edges(
    output: DatasetRef, facet: ColumnLineageFacet, owner: Owner
) -> tuple[list[EdgeFact], set[DatasetRef]]:
    """The field edges of one output's columnLineage and the source datasets they read."""
    reading = column_lineage_reading(output, facet)
    return owned_edges(reading, owner), set(reading.sources)


def column_lineage_reading(output: DatasetRef, facet: ColumnLineageFacet) -> ColumnLineageReading:
    """The edges of one output's columnLineage without their owner, which every run of a
    job that states the same facet shares (`ingest.parts`)."""
    edges: list[EdgeShape] = []
    sources: set[DatasetRef] = set()
    whole = DatasetNode(output)

    def add(source: ColumnInputField, target: DatasetNode, fallback: list[dict[str, Any]]) -> None:
        source_ref = DatasetRef(source.namespace, source.name)
        transformations = [t.model_dump(exclude_none=True) for t in source.transformations]
        edges.append(
            EdgeShape(DatasetNode(source_ref, source.field), target, transformations or fallback)
        )
        if source_ref not in sources:
            sources.add(source_ref)
            edges.append(EdgeShape(DatasetNode(source_ref), whole, [], implied=True))

    for field_name, column in sorted(facet.fields.items()):
        fallback = _deprecated_transformation(
            column.transformationType, column.transformationDescription
        )
        for source in column.inputFields:
            add(source, DatasetNode(output, field_name), fallback)
    for source in facet.dataset:
        add(source, whole, [])
    part = EdgePart(
        "column_lineage", ((e.source, e.target, e.transformations, e.implied) for e in edges)
    )
    return ColumnLineageReading(tuple(edges), frozenset(sources), part)


def _deprecated_transformation(kind: str | None, description: str | None) -> list[dict[str, Any]]:
    """Older producers describe the transformation per output field, not per input."""
    if kind is None and description is None:
        return []
    described: dict[str, Any] = {"type": kind or "UNKNOWN"}
    if description is not None:
        described["description"] = description
    return [described]
