"""Field lineage summaries across datasets (DESIGN §4.3): the fields one field comes from
(incoming) and flows to (outgoing), up to `levels` hops away.

Every kind of field edge counts alike — recorded operations, the lineage facet's `fields`,
`columnLineage`, the parsed `sql` facet — because they are all stored as dataset-field ->
dataset-field edges; each reached field says by which origins' edges it was reached. The walk
is breadth-first with a visited set (cycles end), one statement per hop for the whole frontier.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
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
                reached = field_walk(conn, [start], direction, query.levels, query.window)  # type: ignore[arg-type]
                result[side] = render_fields_by_dataset(conn, reached, reached)
    return result


def field_walk(
    conn: Connection,
    starts: Collection[FieldNode],
    direction: Literal["upstream", "downstream"],
    levels: int,
    window: Window | None,
) -> dict[FieldNode, set[str]]:
    """The fields reached from `starts` against (upstream) or along (downstream) field edges
    in at most `levels` hops, each with the origins of the edges that reached it at its
    nearest hop; the starts themselves are not part of the answer."""
    reached: dict[FieldNode, set[str]] = {}
    begun = set(starts)
    frontier: set[FieldNode] = set(begun)
    for _ in range(levels):
        if not frontier:
            break
        step = {
            node: origins
            for node, origins in _neighbours(conn, frontier, direction, window).items()
            if node not in begun and node not in reached
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


def render_fields_by_dataset(
    conn: Connection,
    fields: Collection[FieldNode],
    origins: Mapping[FieldNode, Collection[str]] | None = None,
) -> list[dict[str, Any]]:
    """`[{"dataset": {namespace, name}, "fields": [...]}]`, by dataset name, fields sorted;
    with `origins`, each entry also says, per field, what stated the edges that reached it."""
    names = dataset_names(conn, {d for d, _ in fields})
    by_dataset: dict[uuid.UUID, list[str]] = {}
    for dataset_id, field_name in fields:
        by_dataset.setdefault(dataset_id, []).append(field_name)
    rendered = []
    for dataset_id, names_of_fields in sorted(by_dataset.items(), key=lambda i: names[i[0]]):
        ref = names[dataset_id]
        entry: dict[str, Any] = {
            "dataset": {"namespace": ref.namespace, "name": ref.name},
            "fields": sorted(names_of_fields),
        }
        if origins is not None:
            entry["origins"] = {
                f: sorted(origins.get((dataset_id, f), ())) for f in sorted(names_of_fields)
            }
        rendered.append(entry)
    return rendered
