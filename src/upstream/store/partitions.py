"""PostgreSQL's monthly partitions of the tables kept by month (`upstream.store.months`).

Each such table is partitioned by LIST on `month`: one partition per month
(`events_202611`), one for `KEEP` (`events_kept`: declarations, never pruned) and a default
one (`events_other`) that takes a month no partition was made for, such as a rebuild of
raw events kept past a prune. Partitions are made ahead (`AHEAD` months after the current
one) by `db upgrade`, at every server start and once a day by the server, so a write never
waits for one to be made. SQLite keeps these tables whole; its prune deletes rows.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store.months import KEEP, RUN_COLUMN, month_of, next_month

#: How many months after the current one have their partitions made ahead.
AHEAD = 2


def partition_name(table: str, month: int | None) -> str:
    """The partition of `table` for `month` (None: the default partition)."""
    if month is None:
        return f"{table}_other"
    return f"{table}_kept" if month == KEEP else f"{table}_{month}"


def make_ahead(conn: Connection, now: datetime | None = None) -> list[str]:
    """Make the partitions for `KEEP`, this month and the `AHEAD` after it, and the default
    partitions, where missing; the names of those made."""
    month = month_of(now or datetime.now(UTC))
    months = [month]
    for _ in range(AHEAD):
        months.append(next_month(months[-1]))
    return make_partitions(conn, [KEEP, *months])


def make_partitions(conn: Connection, months: list[int]) -> list[str]:
    """Make each table's partition for each of `months` (and its default partition) where
    missing. A month already held in the default partition gets none: its rows stay there
    (making one would fail), and a prune deletes them row by row. Nothing on SQLite."""
    made: list[str] = []
    if conn.dialect.name != "postgresql":
        return made
    existing = set(
        conn.execute(
            sa.text(
                "SELECT relname FROM pg_class "
                "WHERE relnamespace = CAST(current_schema() AS regnamespace)"
            )
        ).scalars()
    )
    quote = conn.dialect.identifier_preparer.quote
    for table in RUN_COLUMN:
        other = partition_name(table, None)
        if other not in existing:
            conn.execute(
                sa.text(f"CREATE TABLE {quote(other)} PARTITION OF {quote(table)} DEFAULT")
            )
            made.append(other)
        for month in months:
            name = partition_name(table, month)
            if name in existing:
                continue
            held = conn.execute(
                sa.text(f"SELECT EXISTS (SELECT 1 FROM {quote(other)} WHERE month = :m)"),
                {"m": month},
            ).scalar()
            if held:
                continue
            conn.execute(
                sa.text(
                    f"CREATE TABLE {quote(name)} PARTITION OF {quote(table)} "
                    f"FOR VALUES IN ({int(month)})"
                )
            )
            made.append(name)
    return made


def month_partitions(conn: Connection, table: str) -> dict[int, str]:
    """`table`'s partitions of one month each (not `KEEP`, not the default), by month; none
    on SQLite."""
    if conn.dialect.name != "postgresql":
        return {}
    names = conn.execute(
        sa.text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "WHERE i.inhparent = CAST(:t AS regclass)"
        ),
        {"t": table},
    ).scalars()
    prefix = f"{table}_"
    return {
        int(name[len(prefix) :]): name
        for name in names
        if name.startswith(prefix) and name[len(prefix) :].isdigit()
    }


def is_partition(name: str | None) -> bool:
    """`name` is one of the partitions made here (schema comparisons leave them out: the
    code declares the partitioned tables, not their months)."""
    table, _, suffix = (name or "").rpartition("_")
    return table in RUN_COLUMN and (suffix in {"kept", "other"} or suffix.isdigit())


def not_a_partition(name: str | None, kind: str, parents: Mapping[Any, str | None]) -> bool:
    """Alembic's `include_name` hook: compare everything but the partitions (and their
    indexes, which belong to them)."""
    if kind == "table":
        return not is_partition(name)
    return not is_partition(parents.get("table_name"))


def whole_months(
    conn: Connection, table: str, column: str, doomed: str, months: Collection[int]
) -> dict[int, str]:
    """`table`'s partitions, among those of `months`, every row of which belongs to a run
    listed in the table `doomed` (by `column`): those a prune may drop whole. Each is read
    until a row that stays turns up, so a month that stays costs little and one that goes one
    scan."""
    quote = conn.dialect.identifier_preparer.quote
    whole: dict[int, str] = {}
    for month, name in sorted(month_partitions(conn, table).items()):
        if month not in months:
            continue
        stays = conn.execute(
            sa.text(
                f"SELECT EXISTS (SELECT 1 FROM {quote(name)} p WHERE NOT EXISTS "
                f"(SELECT 1 FROM {quote(doomed)} d WHERE d.id = p.{quote(column)}))"
            )
        ).scalar()
        if not stays:
            whole[month] = name
    return whole


def rows_in(conn: Connection, partition: str) -> int:
    quote = conn.dialect.identifier_preparer.quote
    return int(conn.execute(sa.text(f"SELECT count(*) FROM {quote(partition)}")).scalar_one())


def drop_partition(conn: Connection, partition: str) -> None:
    quote = conn.dialect.identifier_preparer.quote
    conn.execute(sa.text(f"DROP TABLE {quote(partition)}"))
