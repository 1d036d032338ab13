"""derived flow graph: flows, store_state, every lifecycle state of a relation

The flow graph is derived from the raw events, which this migration keeps; it clears the
other derived tables, and `upstream db rebuild` (run on start when the derived tables were
not built by the running code) fills them again from the events.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

#: Every table derived from the raw events, children before the tables they refer to.
DERIVED = (
    "run_operation_sets",
    "operation_sets",
    "dataset_versions",
    "dataset_symlinks",
    "edges",
    "relations",
    "runs",
    "datasets",
    "jobs",
    "namespaces",
)
#: What the derivation rules of this revision are called in store_state.derived_version.
DERIVED_VERSION = "2"


def upgrade() -> None:
    op.create_table(
        "flows",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("source_dataset_id", sa.Uuid(), nullable=False),
        sa.Column("target_dataset_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=True),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("inferred", sa.Boolean(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_flows")),
    )
    with op.batch_alter_table("flows", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_flows_owner_id"), ["owner_id"], unique=False)
        batch_op.create_index("ix_flows_source", ["source_dataset_id", "started_at"], unique=False)
        batch_op.create_index("ix_flows_target", ["target_dataset_id", "started_at"], unique=False)
    op.create_table(
        "store_state",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_store_state")),
    )
    for table in DERIVED:
        op.execute(sa.text(f"DELETE FROM {table}"))
    with op.batch_alter_table("relations", schema=None) as batch_op:
        batch_op.drop_column("lifecycle")
        batch_op.add_column(
            sa.Column(
                "lifecycles",
                sa.JSON(none_as_null=True).with_variant(
                    postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
                ),
                nullable=True,
            )
        )
    # With no events there is nothing to rebuild: the empty derived tables are current.
    op.execute(
        sa.text(
            "INSERT INTO store_state (key, value) SELECT 'derived_version', :version "
            "WHERE NOT EXISTS (SELECT 1 FROM events)"
        ).bindparams(version=DERIVED_VERSION)
    )


def downgrade() -> None:
    raise NotImplementedError(
        "0002 cannot be undone: the derived tables of revision 0001 were cleared and would "
        "have to be derived again from the events by the code of that revision; restore a "
        "backup taken before the upgrade instead"
    )
