"""edge transformations kept once: a set edge names its transformations by id

Every lineage set edge held its transformations as a JSON document (`jsonb` on PostgreSQL,
text on SQLite): 59 bytes a row on PostgreSQL, 1.5 rows an event, for ten distinct values in
all of the medium benchmark's 65,000 edges. They are now kept once per distinct value in
`edge_transformations`, named by the hash of their JSON text
(`upstream.store.lineage_writer.transformations_id`), and each edge holds the id: 64 bytes
less of each medium event's derived rows on PostgreSQL, 23 on SQLite (where an id is 32
characters of text). The declarations' edges (`declared_edges`, few) keep theirs in place.

Each stored value is kept as it reads back: on PostgreSQL the `jsonb` document, on SQLite its
text exactly as stored, so every edge reads back what it did. The space given up is reused by
the store, and given back to the file system by `VACUUM FULL` or SQLite's `VACUUM`.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from upstream.model.json_text import parse
from upstream.store.lineage_writer import transformations_id

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    conn = op.get_bind()
    sqlite = conn.dialect.name == "sqlite"
    op.create_table(
        "edge_transformations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("transformations", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_edge_transformations"),
    )
    # SQLite's text is copied as it is (the JSON type would write it again); PostgreSQL's
    # documents compare as `jsonb`, whatever their text.
    kept = sa.table(
        "edge_transformations",
        sa.column("id", sa.Uuid()),
        sa.column("transformations", sa.Text() if sqlite else _JSON),
    )
    texts = conn.execute(
        sa.text("SELECT DISTINCT CAST(transformations AS TEXT) FROM lineage_set_edges")
    ).scalars()
    rows = [
        {"id": transformations_id(parse(text)), "transformations": text if sqlite else parse(text)}
        for text in texts
    ]
    if rows:
        conn.execute(kept.insert(), rows)
    # SQLite adds a NOT NULL column only with a default, and cannot add the constraint later.
    op.add_column(
        "lineage_set_edges",
        sa.Column(
            "transformations_id",
            sa.Uuid(),
            nullable=not sqlite,
            server_default=sa.text("''") if sqlite else None,
        ),
    )
    _fill("transformations_id", "x.id", "x.transformations = e.transformations", sqlite)
    if sqlite:
        op.execute("ALTER TABLE lineage_set_edges DROP COLUMN transformations")
    else:
        op.alter_column("lineage_set_edges", "transformations_id", nullable=False)
        op.drop_column("lineage_set_edges", "transformations")


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.add_column(
        "lineage_set_edges",
        sa.Column(
            "transformations",
            _JSON,
            nullable=not sqlite,
            server_default=sa.text("'[]'") if sqlite else None,
        ),
    )
    _fill("transformations", "x.transformations", "x.id = e.transformations_id", sqlite)
    if sqlite:
        op.execute("ALTER TABLE lineage_set_edges DROP COLUMN transformations_id")
    else:
        op.alter_column("lineage_set_edges", "transformations", nullable=False)
        op.drop_column("lineage_set_edges", "transformations_id")
    op.drop_table("edge_transformations")


def _fill(column: str, value: str, match: str, sqlite: bool) -> None:
    """Set every edge's `column` to `value` of the `edge_transformations` row x that
    `match`es the edge e."""
    if sqlite:
        op.execute(
            f"UPDATE lineage_set_edges AS e SET {column} = "
            f"(SELECT {value} FROM edge_transformations AS x WHERE {match})"
        )
    else:
        op.execute(
            f"UPDATE lineage_set_edges AS e SET {column} = {value} "
            f"FROM edge_transformations AS x WHERE {match}"
        )
