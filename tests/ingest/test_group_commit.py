"""Group commit: posts that wait for a write in flight share one transaction, and each still
gets the answer a transaction of its own would have given."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
import sqlalchemy as sa

from tests.builders import ds, run_event
from tests.readback import dataset_flows
from upstream.ingest import service
from upstream.ingest.group_commit import GroupCommit
from upstream.ingest.service import prepare
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.writer import WriteResult

JOB = ("airflow://host", "load")


def facts(*documents: dict[str, Any]) -> list[EventFacts]:
    return prepare(list(documents), batch=len(documents) > 1)


def copy_job(source: str, target: str, **kwargs: Any) -> dict[str, Any]:
    return run_event(
        ("airflow://host", f"copy_{source}_{target}"),
        inputs=[ds("pg://db", source)],
        outputs=[ds("pg://db", target)],
        **kwargs,
    )


@pytest.fixture
def transactions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of events written by each transaction the group commit opened."""
    sizes: list[int] = []
    real = service.store_facts

    def counting(store: Store, batch: Sequence[EventFacts], **more: Any) -> WriteResult:
        sizes.append(len(batch))
        return real(store, batch, **more)

    monkeypatch.setattr(service, "store_facts", counting)
    return sizes


async def post_all(writer: GroupCommit, posts: list[list[EventFacts]]) -> list[Any]:
    """Every post at once, as concurrent requests would; exceptions are returned."""
    return await asyncio.gather(*(writer.write(p) for p in posts), return_exceptions=True)


def stored_events(store: Store) -> int:
    with store.read() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(t.events)).scalar_one())


def test_waiting_posts_share_one_transaction(store: Store, transactions: list[int]) -> None:
    writer = GroupCommit(store, max_events=100)
    posts = [facts(copy_job(f"a{i}", f"b{i}")) for i in range(5)]
    results = asyncio.run(post_all(writer, posts))
    # The five posts arrived before the first write began, so they went together.
    assert transactions == [5]
    # Each is answered with the position the shared transaction committed at: its runs and
    # its entities were appended, at 1 and 2.
    assert results == [
        WriteResult(1, 0, frozenset({post[0].record.key}), position=2) for post in posts
    ]
    assert dataset_flows(store) == {(f"pg://db/a{i}", f"pg://db/b{i}") for i in range(5)}


def test_an_idle_writer_writes_a_post_at_once_and_alone(
    store: Store, transactions: list[int]
) -> None:
    writer = GroupCommit(store, max_events=100)

    async def one_after_another() -> list[WriteResult]:
        return [await writer.write(facts(copy_job(f"a{i}", "b"))) for i in range(3)]

    results = asyncio.run(one_after_another())
    assert transactions == [1, 1, 1]
    assert [(r.stored, r.duplicates) for r in results] == [(1, 0)] * 3


def test_groups_hold_at_most_max_events_and_a_larger_post_goes_alone(
    store: Store, transactions: list[int]
) -> None:
    writer = GroupCommit(store, max_events=4)
    three = [facts(*(copy_job(f"p{p}a{i}", f"p{p}b{i}") for i in range(3))) for p in range(2)]
    big = facts(*(copy_job(f"big{i}", "sink") for i in range(6)))
    singles = [facts(copy_job(f"s{i}", "sink")) for i in range(2)]
    results = asyncio.run(post_all(writer, [*three, big, *singles]))
    # 3 + 3 > 4: apart; the post of 6 exceeds the limit and goes alone; then 1 + 1.
    assert transactions == [3, 3, 6, 2]
    assert [(r.stored, r.duplicates) for r in results] == [(3, 0), (3, 0), (6, 0), (1, 0), (1, 0)]
    assert stored_events(store) == 14


def test_an_event_in_two_posts_of_a_group_is_stored_for_the_first_only(
    store: Store, transactions: list[int]
) -> None:
    shared = copy_job("x", "y")
    first = facts(shared, copy_job("a", "b"))
    second = facts(copy_job("c", "d"), shared)
    already = copy_job("old", "new")
    asyncio.run(GroupCommit(store, max_events=100).write(facts(already)))
    transactions.clear()
    results = asyncio.run(
        post_all(GroupCommit(store, max_events=100), [first, second, facts(already)])
    )
    assert transactions == [5]
    assert [(r.stored, r.duplicates) for r in results] == [(2, 0), (1, 1), (0, 1)]
    assert stored_events(store) == 4  # old->new, x->y, a->b, c->d


def test_a_refused_post_fails_alone_and_the_others_are_stored(
    store: Store, transactions: list[int]
) -> None:
    """The store refuses a run reported for a second job (design §3.1) only when it writes:
    the shared transaction fails, and each post is written again alone, in arrival order."""
    run_id = "0190d6a8-0000-7000-8000-000000000001"
    good_before = facts(copy_job("a", "b"))
    claims_run = facts(run_event(JOB, run_id=run_id, outputs=[ds("pg://db", "c")]))
    steals_run = facts(run_event(("airflow://host", "other"), run_id=run_id))
    good_after = facts(copy_job("d", "e"))
    results = asyncio.run(
        post_all(
            GroupCommit(store, max_events=100), [good_before, claims_run, steals_run, good_after]
        )
    )
    assert transactions == [4, 1, 1, 1, 1]
    assert [(r.stored, r.duplicates) for r in results if isinstance(r, WriteResult)] == [
        (1, 0),
        (1, 0),
        (1, 0),
    ]
    refused = results[2]
    assert isinstance(refused, InvalidInput)
    assert refused.problems[0].path == "run.runId"
    assert "already reported for a different job" in refused.problems[0].message
    assert stored_events(store) == 3
    assert dataset_flows(store) == {("pg://db/a", "pg://db/b"), ("pg://db/d", "pg://db/e")}


def test_a_post_whose_client_went_away_is_still_stored(store: Store) -> None:
    """The write a post shares with others is not cancelled with the request."""

    async def hang_up() -> None:
        writer = GroupCommit(store, max_events=100)
        request = asyncio.ensure_future(writer.write(facts(copy_job("a", "b"))))
        await asyncio.sleep(0)
        request.cancel()
        with pytest.raises(asyncio.CancelledError):
            await request
        await writer.close()

    asyncio.run(hang_up())
    assert stored_events(store) == 1
