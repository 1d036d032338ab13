"""A tag's reach (design §4.5): every dataset and field downstream of the fields carrying a tag,
through every origin of field edges — where a PII column's data went.

A tag on a dataset tags each field the dataset lists. The walk is the field summaries' walk
on the graph index (`field_reach`), started from all the tagged fields at once, so a field
reached from two of them is found once.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import NotFound
from upstream.query.answers import TagReachAnswer
from upstream.query.field_lineage import FieldQuery
from upstream.query.field_operation_sets import dataset_names
from upstream.query.field_summary import FieldNode, render_fields_by_dataset
from upstream.query.graph_index.field_walk import field_reach
from upstream.query.graph_index.index import graph_of
from upstream.store import schema as t
from upstream.store.deletion import visible


def tag_reach(conn: Connection, tag: str, query: FieldQuery) -> TagReachAnswer:
    """`{"tag", "levels", "tagged": [{dataset, fields}], "reach": [{dataset, fields}]}`;
    NotFound (404) for a tag that does not exist."""
    if conn.execute(sa.select(t.tags.c.name).where(t.tags.c.name == tag)).first() is None:
        raise NotFound(f"tag {tag!r} not found")
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
        tagged.update((row.id, field["name"]) for field in row.fields or [] if field.get("name"))
    reached = field_reach(graph_of(conn), tagged, "downstream", query.levels, query.window)
    names = dataset_names(conn, {d for d, _ in (*tagged, *reached)})
    return {
        "tag": tag,
        "levels": query.levels,
        "tagged": render_fields_by_dataset(names, tagged),
        "reach": render_fields_by_dataset(names, reached, reached),
    }
