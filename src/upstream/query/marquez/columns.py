"""`GET /api/v1/column-lineage`: Marquez's field graph, from every kind of field edge.

Field edges come from the lineage facet's `fields` maps, from `columnLineage`, from the job's
parsed `sql` facet and from recorded field operations, over all runs; each input field says
which of these stated it (`origins`, our addition to Marquez's shape). Marquez builds this
graph from the schema's fields only, so an edge whose column the schema facet does not list
disappears there; here every stored edge counts, and such a field simply has no `fieldType`.

The walk goes upstream from the seed's fields, `depth` edges deep, and downstream too when
`withDownstream` is true. A dataset seed starts from all its fields (schema and edges); a job
seed from the fields of every dataset it wrote. Edges are oriented as Marquez writes them,
which its web UI relies on: an `outEdges` entry goes from the node to a field made from it, an
`inEdges` entry from the node to one of its inputs (`{origin: node, destination: input}`).

A reader limited to some namespaces finds a node it may not see missing, and is walked as the
field summaries are (`FieldEdges` with `VisibleNodes`): never onto a field of a dataset it may
not see, the fields and edges it stopped at there counted (`hiddenNodes`, `hiddenRelations`),
with a job seed's outputs it may not see counted as nodes and its writes to them as relations.

A Marquez `Dataset` answer lists the same inputs per field (`columnLineage`,
`dataset_column_lineage`): what each of its fields was made from, one level up.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.direction import Step
from upstream.model.errors import NotFound
from upstream.model.facts import ORIGIN_SHOWN
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.nodeid import field_node_id
from upstream.model.window import Window
from upstream.query.graph_index.field_walk import FieldEdge, FieldEdges
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.marquez.answers import (
    ColumnLineageAnswer,
    ColumnNode,
    FieldColumnLineage,
    InputField,
)
from upstream.query.marquez.common import Json, resolve_node
from upstream.store import schema as t
from upstream.store.dialect import id_filters

FieldKey = tuple[uuid.UUID, str]


@dataclass
class _FieldEdges:
    """Field -> field edges found so far, each with the union of its transformations and
    of the origins that stated it."""

    transformations: dict[tuple[FieldKey, FieldKey], list[Json]] = field(default_factory=dict)
    origins: dict[tuple[FieldKey, FieldKey], set[str]] = field(default_factory=dict)

    def add(
        self, source: FieldKey, target: FieldKey, transformations: list[Json], origin: str
    ) -> None:
        known = self.transformations.setdefault((source, target), [])
        for item in transformations:
            if item not in known:
                known.append(item)
        self.origins.setdefault((source, target), set()).add(ORIGIN_SHOWN[origin])


def column_lineage(
    conn: Connection,
    node_id: str,
    depth: int,
    with_downstream: bool,
    max_nodes: int,
    window: Window | None = None,
    visibility: Visibility = EVERYTHING,
) -> ColumnLineageAnswer:
    """The field graph around `node_id` (a dataset, a dataset field or a job); with a
    `window`, only its runs count (`Window.until(as_of)`: the graph as it stood then); of
    what `visibility` shows, saying how much it hid when it does not show everything."""
    graph = graph_of(conn)
    seeds, hidden_outputs = _seed_fields(conn, graph, node_id, visibility)
    nodes: set[FieldKey] = set()
    truncated = False
    for key in sorted(seeds):
        if len(nodes) >= max_nodes:
            truncated = True
            break
        nodes.add(key)
    found = _FieldEdges()
    directions: list[Step] = ["upstream", "downstream"] if with_downstream else ["upstream"]
    start = set(nodes)
    edges = FieldEdges(graph, window, VisibleNodes.of(conn, graph, visibility))
    for direction in directions:
        # Each direction walks from the seeds only: downstream of the seed, never of the
        # fields found upstream of it.
        frontier, seen = set(start), set(start)
        for _ in range(depth):
            following: set[FieldKey] = set()
            for source, target, transformations, origin in _edges_from(edges, frontier, direction):
                other = source if direction == "upstream" else target
                if other not in nodes:
                    if len(nodes) >= max_nodes:
                        truncated = True
                        continue
                    nodes.add(other)
                found.add(source, target, transformations, origin)
                if other not in seen:
                    seen.add(other)
                    following.add(other)
            if not following:
                break
            frontier = following
    answer: ColumnLineageAnswer = {
        "graph": cast(list[ColumnNode], _render(conn, nodes, found)),
        "truncated": truncated,
    }
    if edges.visible is not None:
        answer["hiddenNodes"] = edges.hidden_nodes + hidden_outputs
        answer["hiddenRelations"] = edges.hidden_relations + hidden_outputs
    return answer


def _seed_fields(
    conn: Connection, graph: Graph, node_id: str, visibility: Visibility
) -> tuple[set[FieldKey], int]:
    """The fields the walk starts from, and how many datasets a job seed wrote that
    `visibility` does not show (left out)."""
    node = resolve_node(conn, node_id, visibility)
    hidden = 0
    if node.kind == "job":
        r, d = t.relations, t.datasets
        written = (
            sa.select(d.c.id, d.c.namespace)
            .join(r, r.c.dataset_id == d.c.id)
            .where(r.c.job_id == JobRef(node.namespace, node.name).id, r.c.access == "write")
        )
        outputs = conn.execute(written.distinct()).all()
        datasets = {row.id for row in outputs if visibility.shows(row.namespace)}
        hidden = len(outputs) - len(datasets)
    else:
        datasets = {DatasetRef(node.namespace, node.name).id}
    fields = _known_fields(conn, graph, datasets)
    if node.kind != "datasetField":
        return fields, hidden
    key = (DatasetRef(node.namespace, node.name).id, node.field or "")
    if key not in fields:
        raise NotFound(
            f"nodeId: dataset {node.name!r} in namespace {node.namespace!r} has no field "
            f"{node.field!r}"
        )
    return {key}, hidden


def _known_fields(conn: Connection, graph: Graph, datasets: set[uuid.UUID]) -> set[FieldKey]:
    """Schema fields of `datasets` and every field a current edge names on them."""
    found: set[FieldKey] = set()
    for matches in id_filters(conn, t.datasets.c.id, datasets):
        rows = conn.execute(sa.select(t.datasets.c.id, t.datasets.c.fields).where(matches))
        for row in rows:
            found.update((row.id, name) for name in _names(row.fields))
    edges = FieldEdges(graph, None)
    found.update(edges.keys(edges.ends_on(edges.datasets(datasets))))
    return found


def _names(fields: list[Json] | None) -> Iterable[str]:
    for f in fields or []:
        if isinstance(f.get("name"), str):
            yield f["name"]


def _edges_from(edges: FieldEdges, frontier: set[FieldKey], direction: Step) -> list[FieldEdge]:
    """The field -> field edges whose near end (the target upstream) is one of the
    `frontier` fields and whose far end the reader may see, in the order of their ends'
    text."""
    near: Literal["source", "target"] = "target" if direction == "upstream" else "source"
    rows = edges.leading_to_shown(edges.edges_at(edges.nodes(frontier), near), direction)
    found = edges.as_edges(rows)
    return sorted(found, key=lambda x: (str(x[0]), str(x[1])))


def _dataset_names(conn: Connection, datasets: set[uuid.UUID]) -> dict[uuid.UUID, Any]:
    """Namespace, name and schema fields of each of `datasets`."""
    found: dict[uuid.UUID, Any] = {}
    d = t.datasets
    for matches in id_filters(conn, d.c.id, datasets):
        query = sa.select(d.c.id, d.c.namespace, d.c.name, d.c.fields).where(matches)
        found.update({row.id: row for row in conn.execute(query)})
    return found


def _input_fields(
    found: _FieldEdges, datasets: dict[uuid.UUID, Any], edges: Iterable[tuple[FieldKey, FieldKey]]
) -> dict[FieldKey, list[InputField]]:
    """Per target field: its input fields in Marquez's shape, by namespace, dataset, field;
    `transformationType`/`transformationDescription` are the edge's first transformation."""
    inputs: dict[FieldKey, list[InputField]] = defaultdict(list)
    for source, target in edges:
        transformations = found.transformations[(source, target)]
        first = transformations[0] if transformations else {}
        row = datasets[source[0]]
        inputs[target].append(
            {
                "namespace": row.namespace,
                "dataset": row.name,
                "datasetVersion": None,
                "field": source[1],
                "transformationDescription": first.get("description"),
                "transformationType": first.get("type"),
                "transformations": transformations,
                "origins": sorted(found.origins[(source, target)]),
            }
        )
    for listed in inputs.values():
        listed.sort(key=lambda i: (i["namespace"], i["dataset"], i["field"]))
    return inputs


def dataset_column_lineage(
    conn: Connection, dataset_ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, list[FieldColumnLineage]]:
    """Marquez's `columnLineage` of each dataset that has any: per field made from others
    (by name), its input fields; `transformationType`/`transformationDescription` are its
    first input's, as Marquez fills those deprecated keys."""
    found = _FieldEdges()
    edges = FieldEdges(graph_of(conn), None)
    for source, target, transformations, origin in edges.as_edges(
        edges.edges_at(edges.fields.nodes_of(edges.datasets(dataset_ids)), "target")
    ):
        found.add(source, target, transformations, origin)
    datasets = _dataset_names(conn, {d for edge in found.transformations for d, _ in edge})
    inputs = _input_fields(found, datasets, found.transformations)
    result: dict[uuid.UUID, list[FieldColumnLineage]] = defaultdict(list)
    for (dataset, name), listed in sorted(inputs.items(), key=lambda item: item[0][1]):
        result[dataset].append(
            {
                "name": name,
                "inputFields": listed,
                "transformationDescription": listed[0]["transformationDescription"],
                "transformationType": listed[0]["transformationType"],
            }
        )
    return result


def _render(conn: Connection, nodes: set[FieldKey], found: _FieldEdges) -> list[Json]:
    datasets = _dataset_names(conn, {d for d, _ in nodes})

    def node_id(key: FieldKey) -> str:
        row = datasets[key[0]]
        return field_node_id(row.namespace, row.name, key[1])

    within = [
        (source, target)
        for source, target in found.transformations
        if source in nodes and target in nodes
    ]
    inputs = _input_fields(found, datasets, within)
    incoming: dict[FieldKey, list[Json]] = defaultdict(list)
    outgoing: dict[FieldKey, list[Json]] = defaultdict(list)
    for source, target in within:
        # Marquez's orientation: each edge starts at the node that lists it.
        incoming[target].append({"origin": node_id(target), "destination": node_id(source)})
        outgoing[source].append({"origin": node_id(source), "destination": node_id(target)})
    graph: list[Json] = []
    for key in nodes:
        row = datasets[key[0]]
        types = {f.get("name"): f.get("type") for f in row.fields or []}
        field_inputs = inputs.get(key, [])
        first: InputField | dict[str, Any] = field_inputs[0] if field_inputs else {}
        graph.append(
            {
                "id": node_id(key),
                "type": "DATASET_FIELD",
                "data": {
                    "namespace": row.namespace,
                    "dataset": row.name,
                    "datasetVersion": None,
                    "field": key[1],
                    "fieldType": types.get(key[1]),
                    "transformationDescription": first.get("transformationDescription"),
                    "transformationType": first.get("transformationType"),
                    "inputFields": field_inputs,
                },
                "inEdges": sorted(incoming[key], key=lambda x: x["destination"]),
                "outEdges": sorted(outgoing[key], key=lambda x: x["destination"]),
            }
        )
    return sorted(graph, key=lambda n: str(n["id"]))
