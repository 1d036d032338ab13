"""Field lineage summaries across datasets (DESIGN §4.3): the fields one field comes from
(incoming) and flows to (outgoing), up to `levels` hops away.

Every kind of field edge counts alike — recorded operations, the lineage facet's `fields`,
`columnLineage`, the parsed `sql` facet — because they are all stored as dataset-field ->
dataset-field edges; each reached field says by which origins' edges it was reached. The walk
is breadth-first with a visited set (cycles end), one statement per hop for the whole frontier.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.facts import ORIGIN_SHOWN
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
    """`{"incoming": [{"dataset", "fields", "origins"}], "outgoing": [...]}`, the side not
    asked for left out; UnknownField (404) for an unknown dataset or field."""
    with store.read() as conn:
        dataset = existing_dataset(conn, namespace, name)
        require_field(conn, dataset, field_name)
        start = (dataset.id, field_name)
        result: dict[str, Any] = {}
        for side, direction in (("incoming", "upstream"), ("outgoing", "downstream")):
            if query.direction in (side, "both"):
                reached = field_walk(conn, start, direction, query.levels, query.window)  # type: ignore[arg-type]
                result[side] = _render(conn, reached)
    return result


def field_walk(
    conn: Connection,
    start: FieldNode,
    direction: Literal["upstream", "downstream"],
    levels: int,
    window: Window | None,
) -> dict[FieldNode, set[str]]:
    """The fields reached from `start` against (upstream) or along (downstream) field edges
    in at most `levels` hops, each with the origins of the edges that reached it at its
    nearest hop; `start` itself is not part of the answer."""
    reached: dict[FieldNode, set[str]] = {}
    frontier: set[FieldNode] = {start}
    for _ in range(levels):
        if not frontier:
            break
        step = {
            node: origins
            for node, origins in _neighbours(conn, frontier, direction, window).items()
            if node != start and node not in reached
        }
        reached.update(step)
        frontier = set(step)
    return reached


def _neighbours(
    conn: Connection,
    nodes: Collection[FieldNode],
    direction: Literal["upstream", "downstream"],
    window: Window | None,
) -> dict[FieldNode, set[str]]:
    e = t.edges
    near, far = ("target", "source") if direction == "upstream" else ("source", "target")
    fields = sorted({f for _, f in nodes})
    found: dict[FieldNode, set[str]] = {}
    for matches in id_filters(conn, e.c[f"{near}_dataset_id"], {d for d, _ in nodes}):
        query = (
            sa.select(
                e.c[f"{near}_dataset_id"],
                e.c[f"{near}_field"],
                e.c[f"{far}_dataset_id"],
                e.c[f"{far}_field"],
                e.c.origin,
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
        for near_id, near_field, far_id, far_field, origin in conn.execute(query):
            if (near_id, near_field) in nodes:
                found.setdefault((far_id, far_field), set()).add(ORIGIN_SHOWN[origin])
    return found


def _render(conn: Connection, reached: dict[FieldNode, set[str]]) -> list[dict[str, Any]]:
    names = dataset_names(conn, {d for d, _ in reached})
    by_dataset: dict[uuid.UUID, dict[str, set[str]]] = {}
    for (dataset_id, field_name), origins in reached.items():
        by_dataset.setdefault(dataset_id, {})[field_name] = origins
    ordered = sorted(by_dataset.items(), key=lambda item: names[item[0]])
    return [
        {
            "dataset": {"namespace": names[d].namespace, "name": names[d].name},
            "fields": sorted(fields),
            "origins": {name: sorted(origins) for name, origins in sorted(fields.items())},
        }
        for d, fields in ordered
    ]
