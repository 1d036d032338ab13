"""job dependencies: control flow between job runs

The `jobDependencies` run facet's edges (design §3.3), one row per stating run and pair of
ends. Derived from the raw events: the derivation rules' version changes with it, so the next
start (or `upstream db rebuild`) fills it from the events already kept.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_dependencies",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("upstream_job_id", sa.Uuid(), nullable=False),
        sa.Column("upstream_run_id", sa.Uuid(), nullable=True),
        sa.Column("downstream_job_id", sa.Uuid(), nullable=False),
        sa.Column("downstream_run_id", sa.Uuid(), nullable=True),
        sa.Column("dependency_type", sa.Text(), nullable=True),
        sa.Column("sequence_trigger_rule", sa.Text(), nullable=True),
        sa.Column("status_trigger_rule", sa.Text(), nullable=True),
        sa.Column("trigger_rule", sa.Text(), nullable=True),
        sa.Column("stated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_dependencies")),
    )
    for column in (
        "run_id",
        "upstream_job_id",
        "upstream_run_id",
        "downstream_job_id",
        "downstream_run_id",
    ):
        op.create_index(op.f(f"ix_job_dependencies_{column}"), "job_dependencies", [column])


def downgrade() -> None:
    op.drop_table("job_dependencies")
