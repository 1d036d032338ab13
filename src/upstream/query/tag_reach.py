"""A tag's reach (design §4.5): every dataset and field downstream of the fields carrying a tag,
through every origin of field edges — where a PII column's data went.

A tag on a dataset tags each field the dataset lists. Tags come from both places people see
them: those set through the API, and those of the datasets' `tags` facets (design §3.3; a
facet tag naming a `field` tags that field, one naming none the whole dataset). The walk is
the field summaries' walk on the graph index (`FieldEdges.reach`), started from all the
tagged fields at once, so a field reached from two of them is found once.

A reader limited to some namespaces sees the tagged fields of the datasets it may see only,
and the walk from them does not step onto a field of a hidden dataset; the answer counts the
fields and edges it stopped at (`hiddenNodes`, `hiddenRelations`). A tag only facets of
hidden datasets name is 404 like an unknown one.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import NotFound
from upstream.model.ownership import TAGS_FACET, tags_in
from upstream.query.answers import TagReachAnswer
from upstream.query.field_lineage import FieldQuery
from upstream.query.field_operation_sets import dataset_names
from upstream.query.field_summary import FieldNode, render_fields_by_dataset
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.store import schema as t
from upstream.store.deletion import visible
from upstream.store.dialect import has_json_key


def tag_reach(
    conn: Connection, tag: str, query: FieldQuery, visibility: Visibility = EVERYTHING
) -> TagReachAnswer:
    """`{"tag", "levels", "tagged": [{dataset, fields}], "reach": [{dataset, fields}]}`;
    NotFound (404) for a tag neither set through the API nor named by a `tags` facet of a
    dataset `visibility` shows."""
    tagged = tagged_fields(conn, tag, visibility)
    if tagged is None:
        raise NotFound(f"tag {tag!r} not found")
    graph = graph_of(conn)
    edges = FieldEdges(graph, query.window, VisibleNodes.of(conn, graph, visibility))
    reached = edges.reach(tagged, "downstream", query.levels)
    names = dataset_names(conn, {d for d, _ in (*tagged, *reached)})
    answer: TagReachAnswer = {
        "tag": tag,
        "levels": query.levels,
        "tagged": render_fields_by_dataset(names, tagged),
        "reach": render_fields_by_dataset(names, reached, reached),
    }
    if edges.visible is not None:
        answer["hiddenNodes"] = edges.hidden_nodes
        answer["hiddenRelations"] = edges.hidden_relations
    return answer


def tagged_fields(
    conn: Connection, tag: str, visibility: Visibility = EVERYTHING
) -> set[FieldNode] | None:
    """Every field of a dataset not deleted, and shown by `visibility`, that carries `tag`
    (set on it or on its dataset, through the API or a `tags` facet); None for a tag neither
    set through the API nor named by a `tags` facet of a dataset `visibility` shows."""
    from_facets = _facet_tagged(conn, tag, visibility)
    known = conn.execute(sa.select(t.tags.c.name).where(t.tags.c.name == tag)).first()
    if known is None and from_facets is None:
        return None
    f, d = t.field_tags, t.datasets
    on_fields = sa.select(f.c.dataset_id, f.c.field, d.c.namespace).join(
        d, d.c.id == f.c.dataset_id
    )
    tagged: set[FieldNode] = {
        (row.dataset_id, row.field)
        for row in conn.execute(on_fields.where(f.c.tag == tag, visible(d)))
        if visibility.shows(row.namespace)
    }
    on_datasets = sa.select(d.c.id, d.c.fields, d.c.namespace).join(
        t.dataset_tags, t.dataset_tags.c.dataset_id == d.c.id
    )
    for row in conn.execute(on_datasets.where(t.dataset_tags.c.tag == tag, visible(d))):
        if visibility.shows(row.namespace):
            tagged.update(_every_field(row.id, row.fields))
    tagged |= from_facets or set()
    return tagged


def _facet_tagged(conn: Connection, tag: str, visibility: Visibility) -> set[FieldNode] | None:
    """The fields the `tags` facets of the datasets `visibility` shows tag `tag` (every
    field of a dataset tagged whole); None when none of them names the tag at all."""
    d = t.datasets
    query = sa.select(d.c.id, d.c.fields, d.c.facets, d.c.namespace).where(
        has_json_key(conn, d.c.facets, TAGS_FACET), visible(d)
    )
    found: set[FieldNode] | None = None
    for row in conn.execute(query):
        if not visibility.shows(row.namespace):
            continue
        for facet_tag in tags_in(row.facets or {}):
            if facet_tag.name != tag:
                continue
            found = found or set()
            if facet_tag.field is None:
                found.update(_every_field(row.id, row.fields))
            else:
                found.add((row.id, facet_tag.field))
    return found


def _every_field(dataset: uuid.UUID, fields: list[dict[str, Any]] | None) -> set[FieldNode]:
    """Each field `dataset` lists, for a tag on the whole dataset."""
    return {(dataset, field["name"]) for field in fields or [] if field.get("name")}
