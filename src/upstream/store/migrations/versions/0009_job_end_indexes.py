"""edges indexed by job end only where they have one

Nearly every edge (a field edge, or one between datasets) has no job at either end. With those
edges in the index of each job end, SQLite's statistics count their NULL ids as one value held
by every edge, so it judged a lookup of one job's edges to read the whole table and built an
index of its own at each walk (27 of a 30 ms walk at levels=1 on the medium store). The
indexes now hold only the edges with a job end, on both stores: the walk looks a job's edges
up, and writing an edge maintains two indexes fewer.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_INDEXED = [
    (table, column)
    for table in ("lineage_set_edges", "declared_edges")
    for column in ("source_job_id", "target_job_id")
]


def upgrade() -> None:
    for table, column in _INDEXED:
        name = f"ix_{table}_{column}"
        op.drop_index(name, table_name=table)
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(name, table, [column], postgresql_where=where, sqlite_where=where)


def downgrade() -> None:
    for table, column in _INDEXED:
        name = f"ix_{table}_{column}"
        op.drop_index(name, table_name=table)
        op.create_index(name, table, [column])
