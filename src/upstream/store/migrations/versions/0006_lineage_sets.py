"""repeated lineage stored once

The edges a run (or a declaration) states for an output are kept once per distinct content, in
`lineage_sets` and `lineage_set_edges`, and `lineage_links` links each owner and output to its
set (design §6). The old `edges` table goes: its rows are derived from the events, and a store
that holds events is rebuilt from them on the next start (derivation rules "6"), which fills
the new tables. The few edges with a job end, which every dataset walk steps over, are
indexed apart: without that the walk's recursive statement scanned every field edge for them.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

#: Partial indexes on the edges with a job end: (name, column, condition).
_JOB_ENDS = (
    ("ix_lineage_set_edges_from_job", "target_dataset_id", "source_type = 'job'"),
    ("ix_lineage_set_edges_to_job", "source_dataset_id", "target_type = 'job'"),
)

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
_INDEXED_ENDS = ("source_dataset_id", "source_job_id", "target_dataset_id", "target_job_id")


def _edge_ends() -> list[sa.Column[object]]:
    return [
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column("rank", sa.SmallInteger(), nullable=False),
        sa.Column("implied", sa.Boolean(), nullable=False),
        sa.Column("source_type", sa.Text(), nullable=False),
        sa.Column("source_dataset_id", sa.Uuid(), nullable=True),
        sa.Column("source_field", sa.Text(), nullable=True),
        sa.Column("source_job_id", sa.Uuid(), nullable=True),
        sa.Column("source_run_id", sa.Uuid(), nullable=True),
        sa.Column("target_type", sa.Text(), nullable=False),
        sa.Column("target_dataset_id", sa.Uuid(), nullable=True),
        sa.Column("target_field", sa.Text(), nullable=True),
        sa.Column("target_job_id", sa.Uuid(), nullable=True),
        sa.Column("target_run_id", sa.Uuid(), nullable=True),
        sa.Column("transformations", _JSON, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "lineage_sets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=False),
        sa.Column("target_dataset_id", sa.Uuid(), nullable=True),
        sa.Column("rank", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lineage_sets")),
    )
    op.create_table(
        "lineage_set_edges",
        sa.Column("set_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        *_edge_ends(),
        sa.ForeignKeyConstraint(
            ["set_id"], ["lineage_sets.id"], name=op.f("fk_lineage_set_edges_set_id_lineage_sets")
        ),
        sa.PrimaryKeyConstraint("set_id", "position", name=op.f("pk_lineage_set_edges")),
    )
    with op.batch_alter_table("lineage_set_edges", schema=None) as batch_op:
        for column in _INDEXED_ENDS:
            batch_op.create_index(batch_op.f(f"ix_lineage_set_edges_{column}"), [column])
    for name, column, condition in _JOB_ENDS:
        op.create_index(
            name,
            "lineage_set_edges",
            [column],
            postgresql_where=sa.text(condition),
            sqlite_where=sa.text(condition),
        )
    op.create_table(
        "lineage_links",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("target_dataset_id", sa.Uuid(), nullable=True),
        sa.Column("set_id", sa.Uuid(), nullable=False),
        sa.Column("rank", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["set_id"], ["lineage_sets.id"], name=op.f("fk_lineage_links_set_id_lineage_sets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lineage_links")),
    )
    with op.batch_alter_table("lineage_links", schema=None) as batch_op:
        for column in ("owner_id", "run_id", "job_id", "set_id"):
            batch_op.create_index(batch_op.f(f"ix_lineage_links_{column}"), [column])
    with op.batch_alter_table("edges", schema=None) as batch_op:
        for column in ("job_id", "run_id", *_INDEXED_ENDS):
            batch_op.drop_index(batch_op.f(f"ix_edges_{column}"))
    op.drop_table("edges")


def downgrade() -> None:
    """Back to one row per edge and owner, empty: the next start rebuilds them by its rules."""
    op.create_table(
        "edges",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        *_edge_ends(),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_edges")),
    )
    with op.batch_alter_table("edges", schema=None) as batch_op:
        for column in ("job_id", "run_id", *_INDEXED_ENDS):
            batch_op.create_index(batch_op.f(f"ix_edges_{column}"), [column])
    with op.batch_alter_table("lineage_links", schema=None) as batch_op:
        for column in ("owner_id", "run_id", "job_id", "set_id"):
            batch_op.drop_index(batch_op.f(f"ix_lineage_links_{column}"))
    op.drop_table("lineage_links")
    for name, _, _ in _JOB_ENDS:
        op.drop_index(name, table_name="lineage_set_edges")
    with op.batch_alter_table("lineage_set_edges", schema=None) as batch_op:
        for column in _INDEXED_ENDS:
            batch_op.drop_index(batch_op.f(f"ix_lineage_set_edges_{column}"))
    op.drop_table("lineage_set_edges")
    op.drop_table("lineage_sets")
    op.execute(sa.text("DELETE FROM store_state WHERE key = 'derived_version'"))
