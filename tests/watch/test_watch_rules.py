"""The rules of watching lineage, without a database: comparing radii, signatures,
backoff, which answers are retried, and private addresses."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta

import pytest

from upstream.model.watch import (
    FailedRun,
    Radius,
    RadiusRelation,
    RetryPolicy,
    Seen,
    compare,
    private_address,
    retryable,
    sign,
    verify,
)

READ = RadiusRelation("orders", "report", "read")
WRITE = RadiusRelation("dash", "report", "write")
ETL = RadiusRelation("orders", "etl", "write")


def seen(
    relations: frozenset[RadiusRelation],
    deleted: frozenset[str] = frozenset(),
    failed: Sequence[FailedRun] = (),
) -> Seen:
    """The radius found now, watching the dataset "orders"."""
    return Seen(relations, frozenset({"orders"}), deleted, failed)


def test_added_and_removed_relations() -> None:
    change, kept = compare(
        Radius(frozenset({ETL, READ})), seen(frozenset({READ, WRITE}), frozenset(), [])
    )
    assert change.added == {WRITE}
    assert change.removed == {ETL}
    assert change.kinds(["relation_added", "relation_removed"]) == [
        "relation_removed",
        "relation_added",
    ]
    assert change.kinds(["relation_added"]) == ["relation_added"]
    assert kept == Radius(frozenset({READ, WRITE}))


def test_the_same_radius_is_no_change() -> None:
    change, kept = compare(Radius(frozenset({READ})), seen(frozenset({READ}), frozenset(), []))
    assert change.kinds(["relation_added", "relation_removed", "deleted", "revived"]) == []
    assert kept == Radius(frozenset({READ}))


def test_deleted_then_revived() -> None:
    change, kept = compare(
        Radius(frozenset({READ, WRITE})), seen(frozenset(), frozenset({"report"}), [])
    )
    assert change.deleted == {"report"}
    assert change.removed == {READ, WRITE}
    assert kept.deleted == {"report"}
    again, back = compare(kept, seen(frozenset({READ}), frozenset(), []))
    assert again.revived == {"report"}
    assert again.added == {READ}
    assert back.deleted == frozenset()


def test_an_entity_outside_the_radius_deleted_is_not_told() -> None:
    change, _ = compare(
        Radius(frozenset({READ})), seen(frozenset({READ}), frozenset({"elsewhere"}), [])
    )
    assert change.deleted == frozenset()


def test_the_starting_position_is_kept() -> None:
    _, kept = compare(Radius(since=7), seen(frozenset({READ}), frozenset(), []))
    assert kept.since == 7


def test_a_failed_run_is_told_once() -> None:
    failure = FailedRun("run-1", "report", "FAIL", ("dash",))
    change, kept = compare(
        Radius(frozenset({WRITE})), seen(frozenset({WRITE}), frozenset(), [failure])
    )
    assert change.failed == (failure,)
    assert kept.failed_runs == ("run-1",)
    again, _ = compare(kept, seen(frozenset({WRITE}), frozenset(), [failure]))
    assert again.failed == ()


def test_a_radius_reads_back_what_it_wrote() -> None:
    radius = Radius(frozenset({READ, WRITE}), frozenset({"x"}), ("run-1",), since=12)
    assert Radius.from_json(radius.as_json()) == radius


def test_signature() -> None:
    # echo -n '{"a":1}' | openssl dgst -sha256 -hmac 'key'
    signed = sign("key", b'{"a":1}')
    assert signed == "sha256=88a67f24bbcdaed0e6c997404bb79a743baf44c6bab2f4c27328e3009d22e342"
    assert verify("key", b'{"a":1}', signed)
    assert not verify("key", b'{"a":2}', signed)
    assert not verify("other", b'{"a":1}', signed)


def test_backoff_doubles_with_jitter_up_to_the_cap_then_gives_up() -> None:
    policy = RetryPolicy(timedelta(seconds=10), timedelta(seconds=60), 4, random.Random(1))
    steps = [10, 20, 40, 60, 60]
    for tries, step in enumerate(steps, start=1):
        delay = policy.delay(tries).total_seconds()
        assert step / 2 <= delay <= step
    assert [policy.exhausted(n) for n in (1, 3, 4, 5)] == [False, False, True, True]


@pytest.mark.parametrize(
    ("status", "again"),
    [
        (None, True),
        (500, True),
        (503, True),
        (408, True),
        (429, True),
        (404, False),
        (400, False),
        (301, False),
    ],
)
def test_which_answers_are_retried(status: int | None, again: bool) -> None:
    assert retryable(status) is again


@pytest.mark.parametrize(
    ("addresses", "private"),
    [
        (["93.184.216.34"], None),
        (["93.184.216.34", "10.0.0.1"], "10.0.0.1"),
        (["127.0.0.1"], "127.0.0.1"),
        (["169.254.169.254"], "169.254.169.254"),
        (["::1"], "::1"),
        (["fe80::1%eth0"], "fe80::1%eth0"),
        (["192.168.1.5"], "192.168.1.5"),
        (["100.64.0.1"], "100.64.0.1"),
    ],
)
def test_private_addresses(addresses: list[str], private: str | None) -> None:
    assert private_address(addresses) == private
