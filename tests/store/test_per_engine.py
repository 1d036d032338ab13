"""What a process keeps per database engine (`upstream.store.per_engine`)."""

from __future__ import annotations

import gc

import sqlalchemy as sa

from upstream.store.per_engine import PerEngine


def test_each_engine_gets_one_object_made_once_and_dropped_with_the_engine() -> None:
    made: list[sa.Engine] = []

    def make(engine: sa.Engine) -> list[str]:
        made.append(engine)
        return [str(engine.url)]

    kept = PerEngine(make)
    first, second = sa.create_engine("sqlite://"), sa.create_engine("sqlite:///other.db")
    assert kept(first) is kept(first)
    assert kept(second) == ["sqlite:///other.db"]
    assert made == [first, second]
    made.clear()  # the test's own last reference to `first`, besides its name
    first.dispose()
    del first
    gc.collect()
    assert len(kept._kept) == 1  # only `second` is still kept


def test_an_engine_can_share_another_engines_object() -> None:
    kept = PerEngine(lambda _engine: object())
    primary, replica = sa.create_engine("sqlite://"), sa.create_engine("sqlite://")
    kept.share(replica, kept(primary))
    assert kept(replica) is kept(primary)
