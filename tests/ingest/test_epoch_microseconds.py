"""`epoch_microseconds`: an instant as whole microseconds since 1970, the same on both
databases, so runs order by start time without a `datetime` made for each."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from upstream.model.identity import namespace_id
from upstream.store import schema as t
from upstream.store.dialect import epoch_microseconds
from upstream.store.engine import Store

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_instants_as_microseconds(store: Store) -> None:
    instants = {
        "whole": datetime(2026, 10, 1, tzinfo=UTC),
        "fraction": datetime(2026, 10, 1, 12, 30, 5, 123456, tzinfo=UTC),
        "one apart": datetime(2026, 10, 1, 12, 30, 5, 123457, tzinfo=UTC),
        "before 1970": datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    }
    rows = [
        {"id": namespace_id(name), "name": name, "created_at": at, "updated_at": at}
        for name, at in instants.items()
    ]
    store.write(lambda conn: conn.execute(sa.insert(t.namespaces), rows))
    c = t.namespaces.c
    with store.read() as conn:
        query = sa.select(c.name, epoch_microseconds(c.created_at, conn.dialect.name))
        found = dict(conn.execute(query).all())
    expected = {name: (at - EPOCH) // timedelta(microseconds=1) for name, at in instants.items()}
    assert found == expected
    assert found["one apart"] - found["fraction"] == 1
    assert found["before 1970"] == -1
