"""runs' rows kept by month: partitions on PostgreSQL, so retention drops whole months

Every row a run owns (raw events, runs, relations, lineage links, flows, dataset versions,
recorded field operations) gets the month its run was first received in, `yyyymm`
(`upstream.store.months`); rows of no run (declarations) get 0 and are never pruned.
`run_months` records each run's month: here, the month of the run's `created_at` (when it was
first received), or of its first kept event for a run pruned with its events kept.

Each table is rebuilt with its rows kept: renamed aside, made again with `month` in its key
(on PostgreSQL partitioned by LIST on `month`, with a partition per month its rows name, the
months ahead, `KEEP` and a default one), filled from the old one, which is then dropped. The
columns, indexes and foreign keys are read from the database, so the tables come back as they
were, with the month added. Nothing derived changes meaning: no rebuild is needed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.engine import Connection

from upstream.store.months import RUN_COLUMN
from upstream.store.partitions import make_ahead, make_partitions

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

#: The tables whose key the month joins on both databases; on SQLite `events` and `flows`
#: keep their autoincrement key alone (SQLite numbers only a one-column integer key).
_MONTH_IN_KEY_ON_SQLITE = {
    "runs",
    "relations",
    "lineage_links",
    "dataset_versions",
    "run_operation_sets",
}


def _month(bind: Connection, column: str) -> str:
    """SQL for the `yyyymm` of a timestamp column, in UTC."""
    if bind.dialect.name == "postgresql":
        utc = f"({column} AT TIME ZONE 'UTC')"
        return f"CAST(EXTRACT(YEAR FROM {utc}) * 100 + EXTRACT(MONTH FROM {utc}) AS INTEGER)"
    return f"CAST(strftime('%Y%m', {column}) AS INTEGER)"


def upgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        "run_months",
        sa.Column("run_id", sa.Uuid(), nullable=False),
        sa.Column("month", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_months")),
    )
    bind.execute(
        sa.text(
            f"INSERT INTO run_months (run_id, month) "
            f"SELECT id, {_month(bind, 'created_at')} FROM runs"
        )
    )
    bind.execute(
        sa.text(
            f"INSERT INTO run_months (run_id, month) "
            f"SELECT run_id, {_month(bind, 'MIN(received_at)')} FROM events "
            f"WHERE run_id IS NOT NULL AND run_id NOT IN (SELECT run_id FROM run_months) "
            f"GROUP BY run_id"
        )
    )
    for table in RUN_COLUMN:
        _rebuild(bind, table, month=True)
    if bind.dialect.name == "postgresql":
        months = sa.text("SELECT DISTINCT month FROM run_months")
        make_partitions(bind, sorted(bind.execute(months).scalars()))
        make_ahead(bind)
    for table in RUN_COLUMN:
        _refill(bind, table)


def downgrade() -> None:
    bind = op.get_bind()
    for table in RUN_COLUMN:
        _rebuild(bind, table, month=False)
    for table in RUN_COLUMN:
        _refill(bind, table)
    op.drop_table("run_months")


def _rebuild(bind: Connection, table: str, *, month: bool) -> None:
    """Move `table` aside (as `<table>_old`, without its indexes and key) and make it again,
    with `month` in its key or without it, empty."""
    old = sa.Table(table, sa.MetaData(), autoload_with=bind)
    aside = f"{table}_old"
    for index in old.indexes:
        op.drop_index(str(index.name), table_name=table)
    op.rename_table(table, aside)
    postgresql = bind.dialect.name == "postgresql"
    if postgresql:
        # The key's and unique constraints' indexes are named after the table: free the names.
        for constraint in [old.primary_key, *_uniques(old)]:
            op.drop_constraint(str(constraint.name), aside)
    columns = [_column(c) for c in old.columns if c.name != "month"]
    key = [c.name for c in old.primary_key.columns if c.name != "month"]
    uniques = [[c.name for c in u.columns if c.name != "month"] for u in _uniques(old)]
    extra: dict[str, Any] = {}
    if month:
        columns.append(sa.Column("month", sa.Integer(), nullable=False))
        if postgresql or table in _MONTH_IN_KEY_ON_SQLITE:
            key.append("month")
        uniques = [[*u, "month"] for u in uniques]
        if postgresql:
            extra["postgresql_partition_by"] = "LIST (month)"
    constraints: list[sa.Constraint] = [
        sa.PrimaryKeyConstraint(*key, name=f"pk_{table}"),
        *(sa.UniqueConstraint(*u, name=f"uq_{table}_{'_'.join(u)}") for u in uniques),
        *(
            sa.ForeignKeyConstraint(
                [c.parent.name for c in fk.elements],
                [f"{c.column.table.name}.{c.column.name}" for c in fk.elements],
                name=fk.name,
            )
            for fk in old.foreign_key_constraints
        ),
    ]
    op.create_table(table, *columns, *constraints, **extra)
    for index in old.indexes:
        names = [c.name for c in index.columns]
        op.create_index(index.name, table, names, unique=bool(index.unique))
    if postgresql:
        # A serial column's sequence belongs to its table: hand it to the new one.
        for column in old.columns:
            default = column.server_default
            if default is not None and "nextval" in str(getattr(default, "arg", "")):
                bind.execute(
                    sa.text(
                        f"ALTER SEQUENCE {table}_{column.name}_seq OWNED BY {table}.{column.name}"
                    )
                )


def _refill(bind: Connection, table: str) -> None:
    """Copy `<table>_old` into `table` (with each row's run's month, when it has the column)
    and drop it."""
    target = sa.Table(table, sa.MetaData(), autoload_with=bind)
    names = [c.name for c in target.columns if c.name != "month"]
    listed = ", ".join(names)
    picked = ", ".join(f"o.{name}" for name in names)
    if "month" in target.c:
        run = RUN_COLUMN[table]
        bind.execute(
            sa.text(
                f"INSERT INTO {table} ({listed}, month) SELECT {picked}, COALESCE(m.month, 0) "
                f"FROM {table}_old o LEFT JOIN run_months m ON m.run_id = o.{run}"
            )
        )
    else:
        bind.execute(sa.text(f"INSERT INTO {table} ({listed}) SELECT {picked} FROM {table}_old o"))
    op.drop_table(f"{table}_old")


def _uniques(table: sa.Table) -> list[sa.UniqueConstraint]:
    return [c for c in table.constraints if isinstance(c, sa.UniqueConstraint)]


def _column(column: sa.Column[object]) -> sa.Column[object]:
    """A copy of a reflected column, with its type and server default, outside any key."""
    return sa.Column(
        column.name,
        column.type,
        nullable=column.nullable if not column.primary_key else False,
        server_default=column.server_default,
        autoincrement=False,
    )
