"""declaration history and named dataset versions

Every declaration is kept from now on (`upstream.store.declaration_history`), and relations
keep the dataset version a producer named. Both are derived from the events: a store that
holds events is rebuilt from them on the next start (derivation rules "3"), which records
every declaration its events ever made, replaced ones included.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


#: What the derivation rules of this revision are called in store_state.derived_version.
DERIVED_VERSION = "3"


def upgrade() -> None:
    op.create_table(
        "declarations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("owner_id", sa.Uuid(), nullable=False),
        sa.Column("declared_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("replaced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("has_lineage_facet", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_declarations")),
    )
    with op.batch_alter_table("declarations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_declarations_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "declared_edges",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("scope", sa.Text(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("job_id", sa.Uuid(), nullable=True),
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
        sa.Column(
            "transformations",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("declaration_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["declaration_id"],
            ["declarations.id"],
            name=op.f("fk_declared_edges_declaration_id_declarations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_declared_edges")),
    )
    with op.batch_alter_table("declared_edges", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_declared_edges_declaration_id"), ["declaration_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_declared_edges_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_declared_edges_run_id"), ["run_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_declared_edges_source_dataset_id"), ["source_dataset_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_declared_edges_source_job_id"), ["source_job_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_declared_edges_target_dataset_id"), ["target_dataset_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_declared_edges_target_job_id"), ["target_job_id"], unique=False
        )

    op.create_table(
        "declared_flows",
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
        sa.Column("declaration_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["declaration_id"],
            ["declarations.id"],
            name=op.f("fk_declared_flows_declaration_id_declarations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_declared_flows")),
    )
    with op.batch_alter_table("declared_flows", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_declared_flows_declaration_id"), ["declaration_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_declared_flows_owner_id"), ["owner_id"], unique=False)

    op.create_table(
        "declared_relations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("access", sa.Text(), nullable=False),
        sa.Column("component", sa.Text(), nullable=False),
        sa.Column(
            "lifecycles",
            sa.JSON(none_as_null=True).with_variant(
                postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
            ),
            nullable=True,
        ),
        sa.Column("temporary", sa.Boolean(), nullable=False),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("event_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("version", sa.Text(), nullable=True),
        sa.Column("declaration_id", sa.Uuid(), nullable=False),
        sa.ForeignKeyConstraint(
            ["declaration_id"],
            ["declarations.id"],
            name=op.f("fk_declared_relations_declaration_id_declarations"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_declared_relations")),
    )
    with op.batch_alter_table("declared_relations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_declared_relations_dataset_id"), ["dataset_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_declared_relations_declaration_id"), ["declaration_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_declared_relations_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_declared_relations_run_id"), ["run_id"], unique=False)

    with op.batch_alter_table("relations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("version", sa.Text(), nullable=True))
    # With no events there is nothing to rebuild: the empty derived tables are current.
    op.execute(
        sa.text(
            "UPDATE store_state SET value = :version WHERE key = 'derived_version' "
            "AND NOT EXISTS (SELECT 1 FROM events)"
        ).bindparams(version=DERIVED_VERSION)
    )


def downgrade() -> None:
    with op.batch_alter_table("relations", schema=None) as batch_op:
        batch_op.drop_column("version")

    with op.batch_alter_table("declared_relations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_declared_relations_run_id"))
        batch_op.drop_index(batch_op.f("ix_declared_relations_job_id"))
        batch_op.drop_index(batch_op.f("ix_declared_relations_declaration_id"))
        batch_op.drop_index(batch_op.f("ix_declared_relations_dataset_id"))

    op.drop_table("declared_relations")
    with op.batch_alter_table("declared_flows", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_declared_flows_owner_id"))
        batch_op.drop_index(batch_op.f("ix_declared_flows_declaration_id"))

    op.drop_table("declared_flows")
    with op.batch_alter_table("declared_edges", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_declared_edges_target_job_id"))
        batch_op.drop_index(batch_op.f("ix_declared_edges_target_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_declared_edges_source_job_id"))
        batch_op.drop_index(batch_op.f("ix_declared_edges_source_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_declared_edges_run_id"))
        batch_op.drop_index(batch_op.f("ix_declared_edges_job_id"))
        batch_op.drop_index(batch_op.f("ix_declared_edges_declaration_id"))

    op.drop_table("declared_edges")
    with op.batch_alter_table("declarations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_declarations_owner_id"))

    op.drop_table("declarations")
