"""Field lineage summaries across datasets (design §4.3): the fields one field comes from
(incoming) and flows to (outgoing), up to `levels` hops away.

Every kind of field edge counts alike — recorded operations, the lineage facet's `fields`,
`columnLineage`, the parsed `sql` facet — because they are all stored as dataset-field ->
dataset-field edges; each reached field says by which origins' edges it was reached at its
nearest hop. The walk runs on the graph index (`query.graph_index.field_walk.FieldEdges`);
for a reader limited to some namespaces it does not pass through a field of a dataset the
reader may not see, and the answer counts the fields and edges it stopped at there.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import cast

from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.direction import Step
from upstream.model.identity import DatasetRef
from upstream.query.answers import FieldsOfDataset, FieldSummaryAnswer
from upstream.query.field_lineage import FieldQuery
from upstream.query.field_operation_sets import require_field
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.index import graph_of, names_of
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.lookup import existing_dataset

FieldNode = tuple[uuid.UUID, str]


def field_summary(
    conn: Connection,
    namespace: str,
    name: str,
    field_name: str,
    query: FieldQuery,
    visibility: Visibility = EVERYTHING,
) -> FieldSummaryAnswer:
    """`{"incoming": [{"dataset", "fields", "origins"}], "outgoing": [...]}`, the side not
    asked for left out; NotFound for an unknown dataset or field, and for a dataset
    `visibility` does not show, in the same words. A reader limited to some namespaces is
    also told `hiddenNodes` and `hiddenRelations`."""
    dataset = existing_dataset(conn, namespace, name, visibility)
    require_field(conn, dataset, field_name)
    start = (dataset.id, field_name)
    sides: tuple[tuple[str, Step], ...] = (("incoming", "upstream"), ("outgoing", "downstream"))
    graph = graph_of(conn)
    edges = FieldEdges(graph, query.window, VisibleNodes.of(conn, graph, visibility))
    reached = {
        side: edges.reach([start], step, query.levels)
        for side, step in sides
        if query.direction in (side, "both")
    }
    names = _names(conn, {d for found in reached.values() for d, _ in found})
    result: dict[str, object] = {
        side: render_fields_by_dataset(names, found, found) for side, found in reached.items()
    }
    if edges.visible is not None:
        result["hiddenNodes"] = edges.hidden_nodes
        result["hiddenRelations"] = edges.hidden_relations
    return cast(FieldSummaryAnswer, result)


def _names(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, DatasetRef]:
    """Each dataset's identity, as the process keeps the names (`graph_index.names`)."""
    names, _ = names_of(conn)
    texts = {str(i): i for i in ids}
    return {texts[text]: DatasetRef(*name) for text, name in names.of(conn, texts).items()}


def render_fields_by_dataset(
    names: Mapping[uuid.UUID, DatasetRef],
    fields: Collection[FieldNode],
    origins: Mapping[FieldNode, Collection[str]] | None = None,
) -> list[FieldsOfDataset]:
    """`[{"dataset": {namespace, name}, "fields": [...]}]`, by dataset name (`names`, read
    once for a whole answer), fields sorted; with `origins`, each entry also says, per field,
    what stated the edges that reached it."""
    by_dataset: dict[uuid.UUID, list[str]] = {}
    for dataset_id, field_name in fields:
        by_dataset.setdefault(dataset_id, []).append(field_name)
    rendered: list[FieldsOfDataset] = []
    for dataset_id, names_of_fields in sorted(by_dataset.items(), key=lambda i: names[i[0]]):
        ref = names[dataset_id]
        entry: FieldsOfDataset = {
            "dataset": {"namespace": ref.namespace, "name": ref.name},
            "fields": sorted(names_of_fields),
        }
        if origins is not None:
            entry["origins"] = {
                f: sorted(origins.get((dataset_id, f), ())) for f in sorted(names_of_fields)
            }
        rendered.append(entry)
    return rendered
