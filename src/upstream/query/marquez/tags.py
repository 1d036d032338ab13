"""Reading tags: the tag list and the tags of datasets, their fields and jobs, in Marquez's
shapes."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.query.marquez.answers import TagsAnswer
from upstream.query.marquez.common import Page
from upstream.store import schema as t
from upstream.store.dialect import id_filters


@dataclass
class DatasetTags:
    """The tags of one dataset: on the dataset itself and on each of its fields, by name."""

    dataset: list[str] = field(default_factory=list)
    fields: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def tags_of(conn: Connection, dataset_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, DatasetTags]:
    """The tags of `dataset_ids`, each list sorted by name (two statements per id chunk)."""
    found: dict[uuid.UUID, DatasetTags] = defaultdict(DatasetTags)
    for matches in id_filters(conn, t.dataset_tags.c.dataset_id, dataset_ids):
        tagged = sa.select(t.dataset_tags.c.dataset_id, t.dataset_tags.c.tag).where(matches)
        for row in conn.execute(tagged.order_by(t.dataset_tags.c.tag)):
            found[row.dataset_id].dataset.append(row.tag)
    f = t.field_tags
    for matches in id_filters(conn, f.c.dataset_id, dataset_ids):
        fields = sa.select(f.c.dataset_id, f.c.field, f.c.tag).where(matches).order_by(f.c.tag)
        for on_field in conn.execute(fields):
            found[on_field.dataset_id].fields[on_field.field].append(on_field.tag)
    return found


def job_tags_of(conn: Connection, job_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, list[str]]:
    """The tags of each of `job_ids`, by name (one statement per id chunk)."""
    found: dict[uuid.UUID, list[str]] = defaultdict(list)
    j = t.job_tags
    for matches in id_filters(conn, j.c.job_id, job_ids):
        for row in conn.execute(sa.select(j.c.job_id, j.c.tag).where(matches).order_by(j.c.tag)):
            found[row.job_id].append(row.tag)
    return found


def list_tags(conn: Connection, page: Page) -> TagsAnswer:
    """`GET /tags`: every tag, by name."""
    query = sa.select(t.tags.c.name, t.tags.c.description).order_by(t.tags.c.name)
    rows = conn.execute(page.apply(query))
    return {"tags": [{"name": row.name, "description": row.description} for row in rows]}
