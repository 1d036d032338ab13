"""lineage set edges without a key, found by their set; SQLite's run months without a row id

A set's edges are written once, all together, and read and deleted only as a whole set
(`upstream.store.lineage_writer`): their key, (set_id, position), was only ever used as an
index of the set. A plain index of `set_id` replaces it: on PostgreSQL a B-tree keeps each set's
id once with its rows' places (deduplication, which a unique index does not do), 13 B an event
on the medium benchmark where the key took 61. On SQLite `run_months` keeps its rows in the
key's own B-tree (WITHOUT ROWID), not in a table and again in the key's index.

On PostgreSQL the key is dropped and the index made in place. On SQLite both tables are made
again by SQLite's procedure (`upstream.store.sqlite_tables`, as 0031 did), with their rows,
indexes and the planner's statistics; the edges' new index is analysed where the store was.
A table already made so is left alone, so the migration can run again (after 0031, cut
short). Nothing else changes: no rebuild is needed.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-05
"""

from __future__ import annotations

import re

from alembic import op
from sqlalchemy.engine import Connection

from upstream.store.sqlite_tables import remake, table_statement

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

_EDGES, _MONTHS = "lineage_set_edges", "run_months"
_KEY = "CONSTRAINT pk_lineage_set_edges PRIMARY KEY (set_id, position)"
_INDEX = "ix_lineage_set_edges_set_id"
_ROWLESS = re.compile(r"\s*WITHOUT ROWID\s*$")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        op.execute(f"ALTER TABLE {_EDGES} DROP CONSTRAINT IF EXISTS pk_{_EDGES}")
        op.execute(f"CREATE INDEX IF NOT EXISTS {_INDEX} ON {_EDGES} (set_id)")
        return
    if _KEY in table_statement(bind, _EDGES):
        remake(bind, _EDGES, f"_{_EDGES}_{revision}", _without_key)
        op.create_index(_INDEX, _EDGES, ["set_id"])
        if _analysed(bind):
            bind.exec_driver_sql(f"ANALYZE {_EDGES}")
    if not _ROWLESS.search(table_statement(bind, _MONTHS)):
        remake(bind, _MONTHS, f"_{_MONTHS}_{revision}", lambda made: made + " WITHOUT ROWID")


def downgrade() -> None:
    bind = op.get_bind()
    op.drop_index(_INDEX, _EDGES)
    if bind.dialect.name != "sqlite":
        op.create_primary_key("pk_lineage_set_edges", _EDGES, ["set_id", "position"])
        return
    remake(bind, _EDGES, f"_{_EDGES}_{revision}", _with_key)
    if _analysed(bind):
        bind.exec_driver_sql(f"ANALYZE {_EDGES}")
    remake(bind, _MONTHS, f"_{_MONTHS}_{revision}", _with_rowid)


def _without_key(made: str) -> str:
    statement, found = re.subn(rf"\s*{re.escape(_KEY)},", "", made)
    assert found == 1, made
    return statement


def _with_key(made: str) -> str:
    statement, found = re.subn(r"(\n\s*CONSTRAINT fk_)", rf"\n\t{_KEY}, \1", made, count=1)
    assert found == 1, made
    return statement


def _with_rowid(made: str) -> str:
    statement, found = _ROWLESS.subn("", made)
    assert found == 1, made
    return statement


def _analysed(bind: Connection) -> bool:
    """The store holds the planner's statistics of the edges (an `ANALYZE` ran), which
    their new index should have too."""
    stat = "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'"
    if bind.exec_driver_sql(stat).first() is None:
        return False
    edges = bind.exec_driver_sql("SELECT 1 FROM sqlite_stat1 WHERE tbl = ?", (_EDGES,))
    return edges.first() is not None
