"""a run's flows and lineage links name their run once, as their owner; flows have no key

A flow's and a lineage link's `run_id` was the run whose row it is, equal to its `owner_id`
whenever its scope is "run" and NULL otherwise (a declaration's rows): every reader now takes
the run from the owner (`upstream.store.schema.owned_run`), and the writers' months come from
it (`upstream.store.months`). A flow's `id` (and on PostgreSQL its key, `(id, month)`) was
read by nothing: an owner's flows are found, deleted and inserted again by owner
(`upstream.store.flow_writer`), never one by one. On SQLite the key was the row id, which a
table keeps anyway. The declarations' flows (`declared_flows`), a copy of the flows'
columns, lose the same two (their `run_id` was always NULL).

Each medium event's derived rows lose about 55 bytes on PostgreSQL and 40 on SQLite (after
`VACUUM FULL` / `VACUUM`). Every stored fact is kept: no rebuild is needed. On SQLite the
flows' tables are made again with their rows (`batch_alter_table`); on PostgreSQL the
columns are dropped in place, and the space is reused (given back by `VACUUM FULL`).

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


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in _FLOW_TABLES:
        if sqlite:
            with op.batch_alter_table(table, recreate="always") as batch:
                batch.drop_column("id")
                batch.drop_column("run_id")
        else:
            op.execute(f"ALTER TABLE {table} DROP COLUMN id, DROP COLUMN run_id")
    op.drop_column("lineage_links", "run_id")


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.add_column("lineage_links", sa.Column("run_id", sa.Uuid(), nullable=True))
    op.execute(_run_of_owner("lineage_links"))
    for table in _FLOW_TABLES:
        if sqlite:
            # The new key numbers the rows (SQLite's one-column integer key is the row id).
            with op.batch_alter_table(table, recreate="always") as batch:
                batch.add_column(sa.Column("id", sa.Integer(), nullable=False))
                batch.add_column(sa.Column("run_id", sa.Uuid(), nullable=True))
                batch.create_primary_key(f"pk_{table}", ["id"])
        else:
            key = "id, month" if table == "flows" else "id"
            op.execute(
                f"CREATE SEQUENCE {table}_id_seq; "
                f"ALTER TABLE {table} ADD COLUMN id BIGINT, ADD COLUMN run_id UUID; "
                f"UPDATE {table} SET id = nextval('{table}_id_seq'); "
                f"ALTER TABLE {table} ALTER COLUMN id SET NOT NULL, "
                f"ALTER COLUMN id SET DEFAULT nextval('{table}_id_seq'); "
                f"ALTER SEQUENCE {table}_id_seq OWNED BY {table}.id; "
                f"ALTER TABLE {table} ADD CONSTRAINT pk_{table} PRIMARY KEY ({key})"
            )
        op.execute(_run_of_owner(table))


def _run_of_owner(table: str) -> str:
    """The statement that gives each of `table`'s rows of a run its run again."""
    return f"UPDATE {table} SET run_id = owner_id WHERE scope = 'run'"
