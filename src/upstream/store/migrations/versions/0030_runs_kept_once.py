"""a run's flows and lineage links name their run once, as their owner; flows have no key
and no copy of their run's span

A flow's and a lineage link's `run_id` was the run whose row it is, equal to its `owner_id`
whenever its scope is "run" and NULL otherwise (a declaration's rows): every reader now takes
the run from the owner (`upstream.store.schema.owned_run`), and the writers' months come from
it (`upstream.store.months`). A flow's `started_at` and `ended_at` were copies of its run's,
written again whenever the run's events re-derive its flows (the only writes that change a
run's span): readers take them from the run's row (`schema.flows_with_runs`). A flow's `id`
(and on PostgreSQL its key, `(id, month)`) was read by nothing: an owner's flows are found,
deleted and inserted again by owner (`upstream.store.flow_writer`), never one by one. On
SQLite the key was the row id, which a table keeps anyway. The declarations' flows
(`declared_flows`), a copy of the flows' columns, lose the same four (their run and span were
always NULL).

Every stored fact is kept: no rebuild is needed. On SQLite the flows' tables are made again
with their rows (`batch_alter_table`); on PostgreSQL the columns are dropped in place, and
the space is reused (given back by `VACUUM FULL`).

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_FLOW_TABLES = ("flows", "declared_flows")
#: What the flows lose, but their key: their run and its span.
_COPIES = ("run_id", "started_at", "ended_at")


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in _FLOW_TABLES:
        if sqlite:
            with op.batch_alter_table(table, recreate="always") as batch:
                for column in ("id", *_COPIES):
                    batch.drop_column(column)
        else:
            dropped = ", ".join(f"DROP COLUMN {column}" for column in ("id", *_COPIES))
            op.execute(f"ALTER TABLE {table} {dropped}")
    op.drop_column("lineage_links", "run_id")


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.add_column("lineage_links", sa.Column("run_id", sa.Uuid(), nullable=True))
    op.execute("UPDATE lineage_links SET run_id = owner_id WHERE scope = 'run'")
    for table in _FLOW_TABLES:
        if sqlite:
            # The new key numbers the rows (SQLite's one-column integer key is the row id).
            with op.batch_alter_table(table, recreate="always") as batch:
                batch.add_column(sa.Column("id", sa.Integer(), nullable=False))
                batch.add_column(sa.Column("run_id", sa.Uuid(), nullable=True))
                for column in _COPIES[1:]:
                    batch.add_column(sa.Column(column, sa.DateTime(timezone=True)))
                batch.create_primary_key(f"pk_{table}", ["id"])
        else:
            key = "id, month" if table == "flows" else "id"
            op.execute(
                f"CREATE SEQUENCE {table}_id_seq; "
                f"ALTER TABLE {table} ADD COLUMN id BIGINT, ADD COLUMN run_id UUID, "
                f"ADD COLUMN started_at TIMESTAMPTZ, ADD COLUMN ended_at TIMESTAMPTZ; "
                f"UPDATE {table} SET id = nextval('{table}_id_seq'); "
                f"ALTER TABLE {table} ALTER COLUMN id SET NOT NULL, "
                f"ALTER COLUMN id SET DEFAULT nextval('{table}_id_seq'); "
                f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id; "
                f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY ({key})"
            )
    # A run's flows get their run and its span again (a declaration's have neither).
    op.execute("UPDATE flows SET run_id = owner_id WHERE scope = 'run'")
    run = "r.id = f.owner_id AND r.month = f.month AND f.scope = 'run'"
    if sqlite:
        op.execute(
            "UPDATE flows AS f SET (started_at, ended_at) = "
            f"(SELECT r.started_at, r.ended_at FROM runs AS r WHERE {run}) WHERE f.scope = 'run'"
        )
    else:
        spans = "started_at = r.started_at, ended_at = r.ended_at"
        op.execute(f"UPDATE flows AS f SET {spans} FROM runs AS r WHERE {run}")
