"""dataset versions keep their fields and facets once per distinct content

Of the small workload's 1,335 version rows only 275 contents were distinct: a COMPLETE repeats
its START's version, and every run of a job writes the schema and facets the last one did.
Each version now names its content (`version_contents`, keyed by the hash of its text,
`upstream.store.version_contents`), and a content already stored is not written again.

The rows stored before are moved: each version's fields and facets, as stored, become its
content (once per distinct one), the version names it, and its own columns go. Nothing read
changes: no rebuild is needed.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-04
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from upstream.store.version_contents import content_id

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_FK = "fk_dataset_versions_content_id_version_contents"
#: Versions moved per page.
_CHUNK = 2000


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _versions() -> sa.TableClause:
    """`dataset_versions` with both its columns of before and its content's."""
    return sa.table(
        "dataset_versions",
        sa.column("id", sa.Uuid),
        sa.column("month", sa.Integer),
        sa.column("fields", _json()),
        sa.column("facets", _json()),
        sa.column("content_id", sa.Uuid),
    )


def upgrade() -> None:
    bind = op.get_bind()
    contents = op.create_table(
        "version_contents",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("fields", _json(), nullable=False),
        sa.Column("facets", _json(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_version_contents"),
    )
    op.add_column("dataset_versions", sa.Column("content_id", sa.Uuid()))
    _move_contents(bind, contents)
    if bind.dialect.name == "postgresql":
        op.alter_column("dataset_versions", "content_id", nullable=False)
        op.create_foreign_key(
            _FK,
            "dataset_versions",
            "version_contents",
            ["content_id"],
            ["id"],
            deferrable=True,
            initially="IMMEDIATE",
        )
        op.drop_column("dataset_versions", "fields")
        op.drop_column("dataset_versions", "facets")
        return
    with op.batch_alter_table("dataset_versions") as batch:
        batch.alter_column("content_id", existing_type=sa.Uuid(), nullable=False)
        batch.create_foreign_key(_FK, "version_contents", ["content_id"], ["id"])
        batch.drop_column("fields")
        batch.drop_column("facets")


def _move_contents(bind: sa.Connection, contents: sa.Table) -> None:
    """Each version's content, stored once, and the version pointed at it; the versions
    are read a page at a time, in key order."""
    versions = _versions()
    v = versions.c
    query = sa.select(v.id, v.month, v.fields, v.facets).order_by(v.month, v.id).limit(_CHUNK)
    known: set[uuid.UUID] = set()
    after: tuple[int, uuid.UUID] | None = None
    while True:
        page = query
        if after is not None:
            page = query.where(
                sa.or_(v.month > after[0], sa.and_(v.month == after[0], v.id > after[1]))
            )
        rows = bind.execute(page).all()
        if not rows:
            return
        new: list[dict[str, Any]] = []
        links: list[dict[str, Any]] = []
        for version, month, fields, facets in rows:
            key = content_id(fields, facets)
            if key not in known:
                known.add(key)
                new.append({"id": key, "fields": fields, "facets": facets})
            links.append({"b_id": version, "b_month": month, "b_content": key})
        if new:
            bind.execute(contents.insert(), new)
        bind.execute(
            versions.update()
            .where(v.id == sa.bindparam("b_id"), v.month == sa.bindparam("b_month"))
            .values(content_id=sa.bindparam("b_content")),
            links,
        )
        after = (rows[-1].month, rows[-1].id)


def downgrade() -> None:
    bind = op.get_bind()
    op.add_column("dataset_versions", sa.Column("fields", _json()))
    op.add_column("dataset_versions", sa.Column("facets", _json()))
    contents = sa.table(
        "version_contents",
        sa.column("id", sa.Uuid),
        sa.column("fields", _json()),
        sa.column("facets", _json()),
    )
    versions = _versions()
    for column in ("fields", "facets"):
        stored = (
            sa.select(contents.c[column])
            .where(contents.c.id == versions.c.content_id)
            .scalar_subquery()
        )
        bind.execute(versions.update().values({column: stored}))
    if bind.dialect.name == "postgresql":
        op.drop_constraint(_FK, "dataset_versions", type_="foreignkey")
        op.alter_column("dataset_versions", "fields", nullable=False)
        op.alter_column("dataset_versions", "facets", nullable=False)
        op.drop_column("dataset_versions", "content_id")
    else:
        with op.batch_alter_table("dataset_versions") as batch:
            batch.alter_column("fields", existing_type=_json(), nullable=False)
            batch.alter_column("facets", existing_type=_json(), nullable=False)
            batch.drop_constraint(_FK, type_="foreignkey")
            batch.drop_column("content_id")
    op.drop_table("version_contents")
