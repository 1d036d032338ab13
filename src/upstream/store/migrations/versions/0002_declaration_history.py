"""declaration history and named dataset versions

Every declaration is kept from now on (`upstream.store.declaration_history`); those already
stored are copied into the history, each in force since its owner's declared_at.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from upstream.model.identity import stable_id
from upstream.store import schema as t
from upstream.store.declaration_history import declaration_id

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


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
        "declared_relations",
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
    _copy_current_declarations()


def _copy_current_declarations() -> None:
    """The declarations in force become the first entries of the history. The tables are
    the code's own (`upstream.store.schema`), whose column types read and write ids and
    times alike on both databases; at this revision they are what the database holds."""
    conn = op.get_bind()
    jobs, datasets, edges, relations = t.jobs, t.datasets, t.edges, t.relations
    tables = {
        "declarations": t.declarations,
        "declared_edges": t.declared_edges,
        "declared_relations": t.declared_relations,
    }
    owners = [
        ("job", row.id, row.declared_at, row.declared_lineage_facet)
        for row in conn.execute(
            sa.select(jobs.c.id, jobs.c.declared_at, jobs.c.declared_lineage_facet).where(
                jobs.c.declared_at.is_not(None)
            )
        )
    ] + [
        ("dataset", row.id, row.declared_at, False)
        for row in conn.execute(
            sa.select(datasets.c.id, datasets.c.declared_at).where(
                datasets.c.declared_at.is_not(None)
            )
        )
    ]
    for scope, owner, declared_at, has_facet in owners:
        decl_id = declaration_id(scope, owner, declared_at)
        conn.execute(
            tables["declarations"]
            .insert()
            .values(
                id=decl_id,
                scope=scope,
                owner_id=owner,
                declared_at=declared_at,
                replaced_at=None,
                has_lineage_facet=bool(has_facet),
            )
        )
        if scope == "job":
            edge_rows = sa.select(edges).where(edges.c.scope == "job", edges.c.job_id == owner)
            relation_rows = sa.select(relations).where(
                relations.c.job_id == owner, relations.c.run_id.is_(None)
            )
            copies = [
                (tables["declared_edges"], edge_rows),
                (tables["declared_relations"], relation_rows),
            ]
        else:
            edge_rows = sa.select(edges).where(
                edges.c.scope == "dataset", edges.c.target_dataset_id == owner
            )
            copies = [(tables["declared_edges"], edge_rows)]
        for target, query in copies:
            rows = [
                {
                    **row._asdict(),
                    "id": stable_id("declared", row.id, decl_id),
                    "declaration_id": decl_id,
                }
                for row in conn.execute(query)
            ]
            if rows:
                conn.execute(target.insert(), rows)


def downgrade() -> None:
    with op.batch_alter_table("relations", schema=None) as batch_op:
        batch_op.drop_column("version")

    with op.batch_alter_table("declared_relations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_declared_relations_run_id"))
        batch_op.drop_index(batch_op.f("ix_declared_relations_job_id"))
        batch_op.drop_index(batch_op.f("ix_declared_relations_declaration_id"))
        batch_op.drop_index(batch_op.f("ix_declared_relations_dataset_id"))

    op.drop_table("declared_relations")
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
