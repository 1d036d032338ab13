"""A tag's reach (design §4.5): every dataset and field downstream of the fields carrying a tag,
through every origin of field edges — where a PII column's data went.

A tag on a dataset tags each field the dataset lists. Tags come from both places people see
them: those set through the API, and those of the datasets' `tags` facets (design §3.3; a
facet tag naming a `field` tags that field, one naming none the whole dataset). The walk is
the field summaries' walk on the graph index (`field_reach`), started from all the tagged
fields at once, so a field reached from two of them is found once.
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import NotFound
from upstream.model.ownership import TAGS_FACET, tags_in
from upstream.query.answers import TagReachAnswer
from upstream.query.field_lineage import FieldQuery
from upstream.query.field_operation_sets import dataset_names
from upstream.query.field_summary import FieldNode, render_fields_by_dataset
from upstream.query.graph_index.field_walk import field_reach
from upstream.query.graph_index.index import graph_of
from upstream.store import schema as t
from upstream.store.deletion import visible
from upstream.store.dialect import has_json_key


def tag_reach(conn: Connection, tag: str, query: FieldQuery) -> TagReachAnswer:
    """`{"tag", "levels", "tagged": [{dataset, fields}], "reach": [{dataset, fields}]}`;
    NotFound (404) for a tag neither set through the API nor named by a `tags` facet."""
    tagged = tagged_fields(conn, tag)
    if tagged is None:
        raise NotFound(f"tag {tag!r} not found")
    reached = field_reach(graph_of(conn), tagged, "downstream", query.levels, query.window)
    names = dataset_names(conn, {d for d, _ in (*tagged, *reached)})
    return {
        "tag": tag,
        "levels": query.levels,
        "tagged": render_fields_by_dataset(names, tagged),
        "reach": render_fields_by_dataset(names, reached, reached),
    }


def tagged_fields(conn: Connection, tag: str) -> set[FieldNode] | None:
    """Every field of a dataset not deleted that carries `tag` (set on it or on its
    dataset, through the API or a `tags` facet); None for a tag neither set through the
    API nor named by a `tags` facet."""
    from_facets = _facet_tagged(conn, tag)
    known = conn.execute(sa.select(t.tags.c.name).where(t.tags.c.name == tag)).first()
    if known is None and from_facets is None:
        return None
    f, d = t.field_tags, t.datasets
    on_fields = sa.select(f.c.dataset_id, f.c.field).join(d, d.c.id == f.c.dataset_id)
    tagged: set[FieldNode] = {
        (row.dataset_id, row.field)
        for row in conn.execute(on_fields.where(f.c.tag == tag, visible(d)))
    }
    on_datasets = sa.select(d.c.id, d.c.fields).join(
        t.dataset_tags, t.dataset_tags.c.dataset_id == d.c.id
    )
    for row in conn.execute(on_datasets.where(t.dataset_tags.c.tag == tag, visible(d))):
        tagged.update(_every_field(row.id, row.fields))
    tagged |= from_facets or set()
    return tagged


def _facet_tagged(conn: Connection, tag: str) -> set[FieldNode] | None:
    """The fields the datasets' `tags` facets tag `tag` (every field of a dataset tagged
    whole); None when no facet names the tag at all."""
    d = t.datasets
    query = sa.select(d.c.id, d.c.fields, d.c.facets).where(
        has_json_key(conn, d.c.facets, TAGS_FACET), visible(d)
    )
    found: set[FieldNode] | None = None
    for row in conn.execute(query):
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
