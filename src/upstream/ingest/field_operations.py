"""The `upstream_fieldOperations` output facet as stored facts (design §3.5).

The operations are validated and resolved by the same rules as the recorder's; they give the
operation set (stored once per destination and checksum, linked to the run), field edges from
each source field to each destination field made from it, the implied dataset edges, and the
destination's fields (those alive after the last operation, unless the producer listed them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upstream.ingest.context import Owner
from upstream.model.errors import InvalidInput
from upstream.model.events import InputDataset, OutputDataset
from upstream.model.facets import (
    COMPONENT_FACET,
    FIELD_OPERATIONS_FACET,
    ComponentFacet,
    parse_facet,
)
from upstream.model.facts import DatasetFact, DatasetNode, EdgeFact, EventFacts, OperationSetFact
from upstream.model.field_operations import (
    FieldOrigin,
    OperationSet,
    SourceRef,
    operations_from_json,
    resolve,
)
from upstream.model.identity import DatasetRef


def record_field_operations(
    output: OutputDataset,
    fact: DatasetFact,
    path: str,
    owner: Owner,
    inputs: Sequence[InputDataset],
    facts: EventFacts,
) -> set[DatasetRef]:
    """Add the facts of `output`'s field operations to `facts` and set its fields; return the
    sources the event's `inputs` do not list (the own job reads them too).

    Raises InvalidInput located at `<path>.outputFacets.upstream_fieldOperations…`."""
    facet_path = f"{path}.outputFacets.{FIELD_OPERATIONS_FACET}"
    raw = output.outputFacets[FIELD_OPERATIONS_FACET]
    try:
        operations, stated_fields = _parse(raw)
    except InvalidInput as exc:
        raise exc.within(facet_path) from None
    destination = DatasetRef(output.namespace, output.name)
    fields = stated_fields if stated_fields is not None else list(operations.alive)
    facts.edges.extend(field_operation_edges(destination, operations, fields, owner))
    if stated_fields is not None or "schema" not in output.facets:
        fact.fields = [{"name": name} for name in fields]
        fact.content_digest = None  # the event's own fields now: the writer hashes them
    if owner.run_id is not None and owner.job is not None:
        component_path = f"{path}.outputFacets.{COMPONENT_FACET}"
        component = output.outputFacets.get(COMPONENT_FACET)
        facts.operation_sets.append(
            OperationSetFact(
                dataset=destination,
                checksum=operations.checksum,
                operations=operations.to_json(),
                run_id=owner.run_id,
                job=owner.job,
                event_time=owner.event_time,
                component=parse_facet(ComponentFacet, component, component_path).name
                if component is not None
                else "",
            )
        )
    listed = {DatasetRef(i.namespace, i.name) for i in inputs}
    return {_ref(s) for s in operations.sources} - listed


def _parse(raw: Any) -> tuple[OperationSet, list[str] | None]:
    if not isinstance(raw, dict):
        raise InvalidInput.at("", "must be an object with an `operations` array")
    operations = resolve(operations_from_json(raw.get("operations")))
    fields = raw.get("fields")
    if fields is not None and (
        not isinstance(fields, list) or not all(isinstance(f, str) and f.strip() for f in fields)
    ):
        raise InvalidInput.at("fields", "must be an array of non-empty field names")
    return operations, fields


def field_operation_edges(
    destination: DatasetRef, operations: OperationSet, fields: Sequence[str], owner: Owner
) -> list[EdgeFact]:
    """Source field -> destination field for each field made from it, the dataset edges those
    imply, and a dataset edge from each source no destination field comes from (it was still
    read to make the destination). The same edges as the lineage facet the recorder derives."""
    field_lineage, unreached = operations.field_lineage(fields)
    whole = DatasetNode(destination)
    edges: list[EdgeFact] = []
    implied: set[DatasetRef] = set()
    for name, origins in field_lineage.items():
        for origin in origins:
            source = _ref(origin.source)
            edges.append(
                _edge(
                    owner, DatasetNode(source, origin.field), DatasetNode(destination, name), origin
                )
            )
            if source not in implied:
                implied.add(source)
                edges.append(_edge(owner, DatasetNode(source), whole, None, implied=True))
    edges.extend(_edge(owner, DatasetNode(_ref(s)), whole, None) for s in unreached)
    return edges


def _edge(
    owner: Owner,
    source: DatasetNode,
    target: DatasetNode,
    origin: FieldOrigin | None,
    *,
    implied: bool = False,
) -> EdgeFact:
    transformations = [{"type": "DIRECT", "subtype": origin.subtype}] if origin else []
    return owner.edge("field_operations", source, target, transformations, implied=implied)


def _ref(source: SourceRef) -> DatasetRef:
    return DatasetRef(source.namespace, source.name)
