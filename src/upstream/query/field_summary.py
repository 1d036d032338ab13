"""Field lineage summaries across datasets (DESIGN §4.3): the fields one field comes from
(incoming) and flows to (outgoing), up to `levels` hops away.

Every kind of field edge counts alike — recorded operations, the lineage facet's `fields`,
`columnLineage` — because they are all stored as dataset-field -> dataset-field edges. The walk
is one recursive statement (`store.walks.field_reach`) whatever `levels` is.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.engine import Connection

from upstream.query.field_lineage import FieldQuery
from upstream.query.field_operation_sets import dataset_names, existing_dataset, require_field
from upstream.store.engine import Store
from upstream.store.walks import field_reach

FieldNode = tuple[uuid.UUID, str]


def field_summary(
    store: Store, namespace: str, name: str, field_name: str, query: FieldQuery
) -> dict[str, Any]:
    """`{"incoming": [{"dataset", "fields"}], "outgoing": [...]}`, the side not asked for
    left out; UnknownField (404) for an unknown dataset or field."""
    with store.read() as conn:
        dataset = existing_dataset(conn, namespace, name)
        require_field(conn, dataset, field_name)
        start = (dataset.id, field_name)
        result: dict[str, Any] = {}
        for side, direction in (("incoming", "upstream"), ("outgoing", "downstream")):
            if query.direction in (side, "both"):
                reached = field_reach(conn, [start], direction, query.levels, query.window)  # type: ignore[arg-type]
                result[side] = render_fields_by_dataset(conn, reached)
    return result


def render_fields_by_dataset(conn: Connection, reached: set[FieldNode]) -> list[dict[str, Any]]:
    """`[{"dataset": {namespace, name}, "fields": [...]}]`, by dataset name, fields sorted."""
    names = dataset_names(conn, {d for d, _ in reached})
    by_dataset: dict[uuid.UUID, list[str]] = {}
    for dataset_id, field_name in reached:
        by_dataset.setdefault(dataset_id, []).append(field_name)
    ordered = sorted(by_dataset.items(), key=lambda item: names[item[0]])
    return [
        {
            "dataset": {"namespace": names[d].namespace, "name": names[d].name},
            "fields": sorted(fields),
        }
        for d, fields in ordered
    ]
