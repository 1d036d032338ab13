"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "edges",
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
        sa.PrimaryKeyConstraint("id", name=op.f("pk_edges")),
    )
    with op.batch_alter_table("edges", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_edges_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_edges_run_id"), ["run_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_edges_source_dataset_id"), ["source_dataset_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_edges_source_job_id"), ["source_job_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_edges_target_dataset_id"), ["target_dataset_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_edges_target_job_id"), ["target_job_id"], unique=False)

    op.create_table(
        "events",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("event_key", sa.String(length=64), nullable=False),
        sa.Column("event_type", sa.Text(), nullable=False),
        sa.Column("event_kind", sa.Text(), nullable=True),
        sa.Column("event_time", sa.DateTime(timezone=True), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("job_namespace", sa.Text(), nullable=True),
        sa.Column("job_name", sa.Text(), nullable=True),
        sa.Column("dataset_namespace", sa.Text(), nullable=True),
        sa.Column("dataset_name", sa.Text(), nullable=True),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_events")),
        sa.UniqueConstraint("event_key", name=op.f("uq_events_event_key")),
    )
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_events_event_time"), ["event_time"], unique=False)
        batch_op.create_index(batch_op.f("ix_events_run_id"), ["run_id"], unique=False)

    op.create_table(
        "namespaces",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_namespaces")),
    )
    op.create_table(
        "datasets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("namespace_id", sa.Uuid(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("source_name", sa.Text(), nullable=True),
        sa.Column(
            "fields",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("declared_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["namespaces.id"], name=op.f("fk_datasets_namespace_id_namespaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_datasets")),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("namespace_id", sa.Uuid(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("job_type", sa.Text(), nullable=True),
        sa.Column("integration", sa.Text(), nullable=True),
        sa.Column("processing_type", sa.Text(), nullable=True),
        sa.Column("seen_as_parent", sa.Boolean(), nullable=False),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("declared_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("declared_lineage_facet", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["namespace_id"], ["namespaces.id"], name=op.f("fk_jobs_namespace_id_namespaces")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_table(
        "dataset_symlinks",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("namespace", sa.Text(), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("type", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_dataset_symlinks_dataset_id_datasets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dataset_symlinks")),
    )
    with op.batch_alter_table("dataset_symlinks", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_dataset_symlinks_dataset_id"), ["dataset_id"], unique=False
        )

    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column(
            "fields",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("lifecycle", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_dataset_versions_dataset_id_datasets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dataset_versions")),
    )
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_dataset_versions_dataset_id"), ["dataset_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_dataset_versions_run_id"), ["run_id"], unique=False)

    op.create_table(
        "operation_sets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("checksum", sa.Text(), nullable=False),
        sa.Column(
            "operations",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_operation_sets_dataset_id_datasets")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operation_sets")),
        sa.UniqueConstraint(
            "dataset_id", "checksum", name=op.f("uq_operation_sets_dataset_id_checksum")
        ),
    )
    with op.batch_alter_table("operation_sets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_operation_sets_dataset_id"), ["dataset_id"], unique=False
        )

    op.create_table(
        "relations",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("dataset_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=True),
        sa.Column("access", sa.Text(), nullable=False),
        sa.Column("component", sa.Text(), nullable=False),
        sa.Column("lifecycle", sa.Text(), nullable=True),
        sa.Column("temporary", sa.Boolean(), nullable=False),
        sa.Column("origin", sa.Text(), nullable=False),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("event_time", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["dataset_id"], ["datasets.id"], name=op.f("fk_relations_dataset_id_datasets")
        ),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_relations_job_id_jobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_relations")),
    )
    with op.batch_alter_table("relations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_relations_dataset_id"), ["dataset_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_relations_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_relations_run_id"), ["run_id"], unique=False)

    op.create_table(
        "runs",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("parent_run_id", sa.Uuid(), nullable=True),
        sa.Column("root_run_id", sa.Uuid(), nullable=True),
        sa.Column("state", sa.Text(), nullable=True),
        sa.Column("state_time", sa.DateTime(timezone=True), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("nominal_start", sa.DateTime(timezone=True), nullable=True),
        sa.Column("nominal_end", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "facets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("has_events", sa.Boolean(), nullable=False),
        sa.Column("has_lineage_facet", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name=op.f("fk_runs_job_id_jobs")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_runs_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_runs_parent_run_id"), ["parent_run_id"], unique=False)
        batch_op.create_index("ix_runs_window", ["started_at", "ended_at"], unique=False)

    op.create_table(
        "run_operation_sets",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("operation_set_id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("job_id", sa.Uuid(), nullable=False),
        sa.Column("component", sa.Text(), nullable=False),
        sa.Column("event_time", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name=op.f("fk_run_operation_sets_job_id_jobs")
        ),
        sa.ForeignKeyConstraint(
            ["operation_set_id"],
            ["operation_sets.id"],
            name=op.f("fk_run_operation_sets_operation_set_id_operation_sets"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_run_operation_sets")),
    )
    with op.batch_alter_table("run_operation_sets", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_run_operation_sets_operation_set_id"), ["operation_set_id"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_run_operation_sets_run_id"), ["run_id"], unique=False)


def downgrade() -> None:

    with op.batch_alter_table("run_operation_sets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_run_operation_sets_run_id"))
        batch_op.drop_index(batch_op.f("ix_run_operation_sets_operation_set_id"))

    op.drop_table("run_operation_sets")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_window")
        batch_op.drop_index(batch_op.f("ix_runs_parent_run_id"))
        batch_op.drop_index(batch_op.f("ix_runs_job_id"))

    op.drop_table("runs")
    with op.batch_alter_table("relations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_relations_run_id"))
        batch_op.drop_index(batch_op.f("ix_relations_job_id"))
        batch_op.drop_index(batch_op.f("ix_relations_dataset_id"))

    op.drop_table("relations")
    with op.batch_alter_table("operation_sets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_operation_sets_dataset_id"))

    op.drop_table("operation_sets")
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_versions_run_id"))
        batch_op.drop_index(batch_op.f("ix_dataset_versions_dataset_id"))

    op.drop_table("dataset_versions")
    with op.batch_alter_table("dataset_symlinks", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_symlinks_dataset_id"))

    op.drop_table("dataset_symlinks")
    op.drop_table("jobs")
    op.drop_table("datasets")
    op.drop_table("namespaces")
    with op.batch_alter_table("events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_events_run_id"))
        batch_op.drop_index(batch_op.f("ix_events_event_time"))

    op.drop_table("events")
    with op.batch_alter_table("edges", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_edges_target_job_id"))
        batch_op.drop_index(batch_op.f("ix_edges_target_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_edges_source_job_id"))
        batch_op.drop_index(batch_op.f("ix_edges_source_dataset_id"))
        batch_op.drop_index(batch_op.f("ix_edges_run_id"))
        batch_op.drop_index(batch_op.f("ix_edges_job_id"))

    op.drop_table("edges")
