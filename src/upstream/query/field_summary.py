"""Field lineage summaries across datasets (DESIGN §4.3): the fields one field comes from
(incoming) and flows to (outgoing), up to `levels` hops away.

Every kind of field edge counts alike — recorded operations, the lineage facet's `fields`,
`columnLineage` — because they are all stored as dataset-field -> dataset-field edges. The walk
is breadth-first with a visited set (cycles end), one statement per hop for the whole frontier.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.window import Window
from upstream.query.field_lineage import FieldQuery
from upstream.query.field_operation_sets import dataset_names, existing_dataset, require_field
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.engine import Store
from upstream.store.window import run_in_window

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
                reached = field_walk(conn, [start], direction, query.levels, query.window)  # type: ignore[arg-type]
                result[side] = render_fields_by_dataset(conn, reached)
    return result


def field_walk(
    conn: Connection,
    starts: Collection[FieldNode],
    direction: Literal["upstream", "downstream"],
    levels: int,
    window: Window | None,
) -> set[FieldNode]:
    """The fields reached from `starts` against (upstream) or along (downstream) field edges
    in at most `levels` hops; the starts themselves are not part of the answer."""
    seen: set[FieldNode] = set(starts)
    frontier: set[FieldNode] = set(starts)
    for _ in range(levels):
        if not frontier:
            break
        step = _neighbours(conn, frontier, direction, window) - seen
        seen |= step
        frontier = step
    return seen - set(starts)


def _neighbours(
    conn: Connection,
    nodes: Collection[FieldNode],
    direction: Literal["upstream", "downstream"],
    window: Window | None,
) -> set[FieldNode]:
    e = t.edges
    near, far = ("target", "source") if direction == "upstream" else ("source", "target")
    fields = sorted({f for _, f in nodes})
    found: set[FieldNode] = set()
    for matches in id_filters(conn, e.c[f"{near}_dataset_id"], {d for d, _ in nodes}):
        query = (
            sa.select(
                e.c[f"{near}_dataset_id"],
                e.c[f"{near}_field"],
                e.c[f"{far}_dataset_id"],
                e.c[f"{far}_field"],
            )
            .where(
                matches,
                e.c[f"{near}_field"].in_(fields),
                e.c[f"{far}_field"].is_not(None),
                e.c[f"{far}_dataset_id"].is_not(None),
                run_in_window(e.c.run_id, window),
            )
            .distinct()
        )
        for near_id, near_field, far_id, far_field in conn.execute(query):
            if (near_id, near_field) in nodes:
                found.add((far_id, far_field))
    return found


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
