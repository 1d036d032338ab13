"""The month each run's rows are kept under (design §5), so that retention drops whole months.

Every row a run owns — its raw events, the run itself, its reads and writes, lineage links,
flows, dataset versions and recorded field operations — carries the month the run was first
received in, as `yyyymm`. On PostgreSQL those tables are partitioned by it
(`upstream.store.partitions`), so a month whose runs all ended before a prune's cutoff goes as
whole partitions. Rows of no run (declarations) carry `KEEP`, which no prune drops.

A run's month is decided once, by the first write that names it, in `run_months`: an insert
that ignores conflicts, so two writers naming a new run at once agree on its month, and every
later row of the run (a later event, a rebuild replaying it) is filed under the same one. The
partitioned tables' keys include the month; since a run has one month, an id stays unique.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.dialect import ByIds, in_id_order, insert_rows_ignoring
from upstream.store.transaction_state import kept

#: The month of rows that belong to no run: declared lineage and its events, never pruned.
KEEP = 0

#: The tables kept by month, with the column that names the row's run (a flow's or a lineage
#: link's owner is its run when its scope is "run", `schema.owned_run`).
RUN_COLUMN: dict[str, str] = {
    "events": "run_id",
    "runs": "id",
    "relations": "run_id",
    "lineage_links": "owner_id",
    "flows": "owner_id",
    "dataset_versions": "run_id",
    "run_operation_sets": "run_id",
}

#: When a new run's first row was received, for the tables whose rows may be a run's first.
_RECEIVED = {"events": "received_at", "runs": "created_at"}

_MEMO = "upstream.run_months"


def month_of(moment: datetime) -> int:
    """`yyyymm` of `moment` in UTC (naive times are UTC, as SQLite hands them back)."""
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return utc.year * 100 + utc.month


def next_month(month: int) -> int:
    year, number = divmod(month, 100)
    return (year + 1) * 100 + 1 if number == 12 else month + 1


def with_months(
    conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`rows` of a table kept by month, each with its run's month (`KEEP` for no run)."""
    column = RUN_COLUMN[table.name]
    received = _RECEIVED.get(table.name)
    runs = [_run_of(row, column) for row in rows]
    first_seen: dict[uuid.UUID, int] = {}
    for row, run in zip(rows, runs, strict=True):
        if run is not None and run not in first_seen:
            stamp = row[received] if received else datetime.now(UTC)
            first_seen[run] = month_of(stamp)
    months = run_months(conn, first_seen)
    return [
        {**row, "month": KEEP if run is None else months[run]}
        for row, run in zip(rows, runs, strict=True)
    ]


def _run_of(row: Mapping[str, Any], column: str) -> uuid.UUID | None:
    """The run a row belongs to: `column`'s value, but a declaration's flow or link (scope
    "job" or "dataset") has none, whatever its owner."""
    return row[column] if row.get("scope", "run") == "run" else None


def insert_by_month(
    conn: Connection, table: sa.Table, rows: Sequence[Mapping[str, Any]], key: str
) -> set[Any]:
    """`insert_rows_ignoring` for a table kept by month: the rows get their month, and the
    conflict is on (`key`, month), the key the partitioned table can hold."""
    return insert_rows_ignoring(conn, table, with_months(conn, table, rows), key, (key, "month"))


_MONTHS = ByIds(
    t.run_months.c.run_id,
    lambda ids: sa.select(t.run_months.c.run_id, t.run_months.c.month).where(ids),
)


def run_months(conn: Connection, first_seen: Mapping[uuid.UUID, int]) -> dict[uuid.UUID, int]:
    """The month of each run in `first_seen`; a run not seen before is given the month
    `first_seen` names. Remembered for the transaction: a batch asks for the same runs once
    per table."""
    memo = _memo(conn)
    missing = in_id_order(run for run in first_seen if run not in memo)
    if missing:
        if conn.dialect.name == "postgresql":
            memo.update(_claim_or_read(conn, {run: first_seen[run] for run in missing}))
        else:
            # Read first: most runs a write names were filed by their earlier events, and
            # then the insert is not needed (one statement, not two, for a run's COMPLETE).
            for filed in _MONTHS.run(conn, missing):
                memo.update((row.run_id, row.month) for row in filed)
            rows = [{"run_id": run, "month": first_seen[run]} for run in missing if run not in memo]
            new = insert_rows_ignoring(conn, t.run_months, rows, "run_id")
            memo.update((run, first_seen[run]) for run in new)
        for late in _MONTHS.run(conn, set(missing) - memo.keys()):
            memo.update((row.run_id, row.month) for row in late)
    return {run: memo[run] for run in first_seen}


#: Insert the runs not filed yet, and read the months of those filed before, in one round
#: trip. The read sees what committed before the statement began: a run a concurrent writer
#: filed since (the insert waited for its commit, then skipped it) is in neither half.
_CLAIM_OR_READ = """
WITH new AS (
    INSERT INTO run_months (run_id, month)
    SELECT run_id, month FROM unnest(%(runs)s::uuid[], %(months)s::integer[]) AS u(run_id, month)
    ON CONFLICT (run_id) DO NOTHING RETURNING run_id, month
)
SELECT run_id, month FROM new
UNION ALL SELECT run_id, month FROM run_months WHERE run_id = ANY(%(runs)s::uuid[])
"""


def _claim_or_read(conn: Connection, first_seen: Mapping[uuid.UUID, int]) -> dict[uuid.UUID, int]:
    """The months of `first_seen`'s runs, each new one filed under the month given
    (PostgreSQL); a run a concurrent writer filed meanwhile is left out."""
    runs = in_id_order(first_seen)  # in id order, as every writer inserts them
    params = {"runs": runs, "months": [first_seen[run] for run in runs]}
    return dict(conn.exec_driver_sql(_CLAIM_OR_READ, params).tuples().all())


def _memo(conn: Connection) -> dict[uuid.UUID, int]:
    """The months looked up in the connection's current transaction (a new one starts
    empty: a prune may have forgotten a run since)."""
    memo: dict[uuid.UUID, int] = kept(conn, _MEMO, dict)
    return memo
