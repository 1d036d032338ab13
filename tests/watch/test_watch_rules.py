"""The rules of watching lineage, without a database: comparing radii, signatures,
backoff, which answers are retried, and private addresses."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import timedelta

import pytest

from upstream.model.errors import Problem
from upstream.model.watch import (
    CHANGE_KINDS,
    FailedRun,
    FieldEdgeKey,
    Radius,
    RadiusRelation,
    RetryPolicy,
    SchemaBreak,
    Seen,
    SubscriptionSpec,
    compare,
    digest_seconds,
    parse_subscription,
    private_address,
    retryable,
    schema_field_names,
    sign,
    vanished,
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


EDGE = FieldEdgeKey("orders", "total", "dash", "revenue", "columnLineage")
SQL_EDGE = FieldEdgeKey("orders", "total", "dash", "revenue", "sql")


def test_field_edges_added_and_removed_by_origin() -> None:
    """The same edge stated by a second origin is a new edge of that origin."""
    before = Radius(field_edges=frozenset({EDGE}))
    now = Seen(frozenset(), frozenset({"orders"}), frozenset(), field_edges=frozenset({SQL_EDGE}))
    change, kept = compare(before, now)
    assert change.field_added == {SQL_EDGE}
    assert change.field_removed == {EDGE}
    assert change.kinds(["field_edges_changed", "relation_added"]) == ["field_edges_changed"]
    assert kept.field_edges == {SQL_EDGE}
    again, _ = compare(kept, now)
    assert again.kinds(["field_edges_changed"]) == []


def test_a_schema_break_is_the_most_significant_after_a_deletion() -> None:
    broken = SchemaBreak("orders", "total", (("dash", "revenue", 1),))
    now = Seen(frozenset({READ}), frozenset({"orders"}), frozenset(), breaks=(broken,))
    change, _ = compare(Radius(), now)
    assert change.kinds(["relation_added", "schema_break"]) == ["schema_break", "relation_added"]


def test_vanished_fields_are_those_still_watched() -> None:
    before = frozenset({("orders", "id"), ("orders", "total"), ("gone", "x")})
    now = frozenset({("orders", "id")})
    assert vanished(before, now, lambda f: f[0] != "gone") == [("orders", "total")]


def test_a_radius_with_fields_reads_back_and_an_old_one_reads_without() -> None:
    radius = Radius(field_edges=frozenset({EDGE}), schema=frozenset({("orders", "total")}))
    assert Radius.from_json(radius.as_json()) == radius
    old = {"relations": [], "deleted": [], "failedRuns": [], "since": 3}
    assert Radius.from_json(old) == Radius(since=3)
    # Stored before the schema was one flat list: (dataset, field) pairs.
    paired = {**old, "schema": [["orders", "total"]]}
    assert Radius.from_json(paired) == Radius(since=3, schema=frozenset({("orders", "total")}))


@pytest.mark.parametrize(
    ("asked", "seconds"),
    [(None, None), (3600, 3600), ("PT1H", 3600), ("PT15M", 900), ("P1D", 86400), ("P1DT1M", 86460)],
)
def test_a_digest_is_seconds_or_a_duration(asked: object, seconds: int | None) -> None:
    problems: list[Problem] = []
    assert digest_seconds(asked, problems) == seconds
    assert problems == []


@pytest.mark.parametrize("asked", [59, "PT59S", "P8D", "PT", "P", "1h", "PT1.5H", False, 3.5])
def test_a_digest_out_of_bounds_or_unreadable_is_a_problem(asked: object) -> None:
    problems: list[Problem] = []
    digest_seconds(asked, problems)
    assert [p.path for p in problems] == ["digest"]


@pytest.mark.parametrize(
    ("watch", "kinds"),
    [
        ({"dataset": {"namespace": "n", "name": "d"}}, list(CHANGE_KINDS)),
        ({"namespace": "n"}, list(CHANGE_KINDS)),
        (
            {"field": {"namespace": "n", "name": "d", "field": "f"}},
            ["schema_break", "field_edges_changed"],
        ),
        ({"tag": "PII"}, ["schema_break", "field_edges_changed"]),
    ],
)
def test_each_watch_defaults_to_its_own_kinds_and_reads_back(
    watch: dict[str, object], kinds: list[str]
) -> None:
    body = {"watch": watch, "deliver": {"kafka": {"topic": "t"}}}
    spec, _ = parse_subscription(body, max_levels=10)
    assert list(spec.changes) == kinds
    assert spec.as_json()["watch"] == watch
    assert SubscriptionSpec.from_json(spec.as_json()) == spec


def test_schema_field_names_name_nested_fields_by_their_dotted_path() -> None:
    stored = [
        {"name": "id", "type": "int"},
        {
            "name": "address",
            "type": "struct",
            "fields": [
                {"name": "city"},
                {"name": "geo", "fields": [{"name": "lat"}, {"name": "lon"}]},
            ],
        },
        {"type": "nameless"},
    ]
    assert list(schema_field_names(stored)) == [
        "id",
        "address",
        "address.city",
        "address.geo",
        "address.geo.lat",
        "address.geo.lon",
    ]
    assert list(schema_field_names(None)) == []
