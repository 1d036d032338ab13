"""How walks are planned (`upstream.store.dialect`): once per connection on PostgreSQL, and
with SQLite told that a walk's frontier keeps few rows. Neither may change an answer."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from upstream.store.dialect import constant, few_rows, planned_once
from upstream.store.engine import Store

VALUES = sa.table("v", sa.column("n", sa.Integer))


def test_few_rows_is_a_hint_to_sqlite_and_the_condition_itself_elsewhere() -> None:
    condition = few_rows(VALUES.c.n < 3)
    on_sqlite = str(condition.compile(dialect=sqlite.dialect()))
    on_postgresql = str(condition.compile(dialect=postgresql.dialect()))
    assert on_sqlite == "likelihood(v.n < ?, 0.001)"
    assert on_postgresql == "(v.n < %(n_1)s::INTEGER)"
    # Not compared to 1 as a boolean function would be: a compared likelihood is no hint.
    query = sa.select(VALUES.c.n).where(condition, VALUES.c.n > 0)
    assert "likelihood(v.n < ?, 0.001) AND" in str(query.compile(dialect=sqlite.dialect()))


def test_a_hinted_condition_keeps_the_same_rows(store: Store) -> None:
    numbers = sa.union_all(*(sa.select(sa.literal(n).label("n")) for n in (1, 2, 5))).subquery()
    with store.read() as conn:
        plain = conn.execute(sa.select(numbers.c.n).where(numbers.c.n < 3)).scalars().all()
        hinted = conn.execute(sa.select(numbers.c.n).where(few_rows(numbers.c.n < 3)))
        assert sorted(hinted.scalars()) == sorted(plain) == [1, 2]


def test_a_constant_is_written_into_the_statement() -> None:
    query = sa.select(VALUES.c.n).where(sa.column("kind") == constant("job"))
    compiled = query.compile(
        dialect=postgresql.dialect(), compile_kwargs={"render_postcompile": True}
    )
    assert "kind = 'job'" in str(compiled)
    assert compiled.params == {}


def _plan_mode(conn: sa.Connection) -> str:
    return str(conn.exec_driver_sql("SHOW plan_cache_mode").scalar())


def test_statements_inside_are_planned_once_and_the_setting_ends_with_them(store: Store) -> None:
    with store.read() as conn:
        if store.dialect != "postgresql":
            with planned_once(conn):  # nothing to set: SQLite plans each statement anew
                assert conn.execute(sa.select(sa.literal(1))).scalar() == 1
            return
        driver = conn.connection.dbapi_connection
        threshold = driver.prepare_threshold
        before = _plan_mode(conn)
        with planned_once(conn):
            assert _plan_mode(conn) == "force_generic_plan"
            assert driver.prepare_threshold == 0  # prepared at its first run
        assert (_plan_mode(conn), driver.prepare_threshold) == (before, threshold)
        # A walk as of a time is planned for its values.
        with planned_once(conn, as_of=datetime(2026, 11, 1, tzinfo=UTC)):
            assert _plan_mode(conn) == before
