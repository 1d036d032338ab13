"""A publishing front's batch has one fate: whoever decides first (the front committing, a
consumer abandoning) decides for good."""

from __future__ import annotations

import uuid

from upstream.store import published_batches
from upstream.store.engine import Store


def test_the_first_decision_is_the_only_one(store: Store) -> None:
    committed, abandoned, unknown = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    assert store.write(lambda c: published_batches.decide(c, committed, committed=True))
    assert not store.write(lambda c: published_batches.decide(c, abandoned, committed=False))
    # Too late either way: each keeps its first fate.
    assert store.write(lambda c: published_batches.decide(c, committed, committed=False))
    assert not store.write(lambda c: published_batches.decide(c, abandoned, committed=True))
    store.write(lambda c: published_batches.settle(c, [committed, abandoned], committed=False))
    with store.read() as conn:
        fates = published_batches.decided(conn, [committed, abandoned, unknown])
    assert fates == {committed: True, abandoned: False}
