"""dataset aliases: the groups of names the symlinks facet makes one dataset

`dataset_aliases` holds every identity that a `symlinks` facet named or that reported one,
with the canonical identity of its group (`upstream.store.aliases`). It is derived from the
events: a store that holds events is rebuilt from them on the next start (derivation rules
"5"), which also points the runs' accesses, edges and flows at the canonical identities.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dataset_aliases",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("canonical_id", sa.Uuid(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("reported", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dataset_aliases")),
    )
    with op.batch_alter_table("dataset_aliases", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_dataset_aliases_canonical_id"), ["canonical_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("dataset_aliases", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_aliases_canonical_id"))
    op.drop_table("dataset_aliases")
