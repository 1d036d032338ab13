"""Kafka message values into the store, without a broker: each message stands alone, the good
ones of a batch share one transaction, an outage is raised and never turned into refusals."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
import sqlalchemy as sa

from tests.builders import ds, run_event
from tests.readback import counts, dataset_flows
from upstream.ingest import service
from upstream.ingest.body import Limits
from upstream.kafka.messages import MessageOutcome, Refusal, ingest_messages
from upstream.store.engine import Store

LIMITS = Limits(max_bytes=10_000, max_events=3, max_values=1_000)


def value(document: Any) -> bytes:
    return json.dumps(document).encode("utf-8")


def event(name: str) -> dict[str, Any]:
    return run_event(
        ("etl", name), inputs=[ds("pg", f"{name}_in")], outputs=[ds("pg", f"{name}_out")]
    )


def test_good_messages_of_a_batch_are_stored_and_the_bad_refused_alone(store: Store) -> None:
    bad_run_id = event("b")
    bad_run_id["run"]["runId"] = "not-a-uuid"
    batch = [
        value(event("a")),
        b'{"eventType": "COMPLETE",',  # cut short
        value(bad_run_id),
        None,  # a tombstone
        value(event("c")),
    ]
    outcomes = ingest_messages(store, batch, LIMITS)
    assert outcomes[0] == MessageOutcome(events=1, stored=1)
    assert outcomes[1].refusal == Refusal(
        "malformed",
        "malformed JSON at line 1 column 26: Expecting property name enclosed in double quotes",
    )
    assert outcomes[2].refusal is not None
    assert outcomes[2].refusal.reason == "invalid"
    assert outcomes[2].refusal.message.startswith("run.runId:")
    assert outcomes[3].refusal == Refusal("malformed", "the message has no value (a tombstone)")
    assert outcomes[4] == MessageOutcome(events=1, stored=1)
    assert dataset_flows(store) == {("pg/a_in", "pg/a_out"), ("pg/c_in", "pg/c_out")}
    assert counts(store)["events"] == 2


def test_a_message_read_again_is_a_duplicate(store: Store) -> None:
    first = value(event("a"))
    assert ingest_messages(store, [first, first], LIMITS) == [
        MessageOutcome(events=1, stored=1),
        MessageOutcome(events=1, duplicates=1),
    ]
    assert ingest_messages(store, [first], LIMITS) == [MessageOutcome(events=1, duplicates=1)]
    assert counts(store)["events"] == 1


def test_an_array_value_is_stored_all_or_nothing(store: Store) -> None:
    broken = event("b")
    broken["job"]["name"] = ""
    outcomes = ingest_messages(
        store, [value([event("a"), event("c")]), value([event("d"), broken])], LIMITS
    )
    assert outcomes[0] == MessageOutcome(events=2, stored=2)
    assert outcomes[1].refusal is not None
    assert outcomes[1].refusal.reason == "invalid"
    assert outcomes[1].refusal.message.startswith("[1].job.name:")
    assert dataset_flows(store) == {("pg/a_in", "pg/a_out"), ("pg/c_in", "pg/c_out")}


def test_the_api_limits_apply_to_a_value(store: Store) -> None:
    too_many = value([event("a"), event("b"), event("c"), event("d")])
    too_big = value({**event("e"), "padding": "x" * LIMITS.max_bytes})
    bomb = gzip.compress(value({**event("f"), "padding": " " * (LIMITS.max_bytes * 10)}))
    outcomes = ingest_messages(store, [too_many, too_big, bomb, b"[]", b"\xff"], LIMITS)
    assert [o.refusal for o in outcomes] == [
        Refusal("too_large", "a batch may hold at most 3 events; this one holds more"),
        Refusal("too_large", "message value is larger than 10000 bytes"),
        Refusal("too_large", "message value inflates to more than 10000 bytes"),
        Refusal("malformed", "an empty array holds no events"),
        Refusal("malformed", "not valid UTF-8 at byte 0"),
    ]
    assert counts(store)["events"] == 0


def test_the_shape_limit_applies_to_a_value_and_refuses_it_alone(store: Store) -> None:
    """A small gzip value that would parse into many objects is refused on its bytes, as a
    request body is (`max_event_values`), and the messages around it are stored."""
    bomb = value(event("bomb")).replace(
        b'"facets": {}', b'"facets": {"x": [' + b"{}," * 2000 + b"{}]}", 1
    )
    assert len(gzip.compress(bomb)) < 1_000
    outcomes = ingest_messages(
        store, [value(event("a")), gzip.compress(bomb), value(event("c"))], LIMITS
    )
    assert outcomes[1].refusal == Refusal(
        "too_large",
        "the event holds more than 1000 JSON values (the server's max_event_values); "
        "split it into smaller events",
    )
    assert [o.stored for o in outcomes] == [1, 0, 1]
    assert counts(store)["events"] == 2


def test_a_repeated_key_refuses_the_value_naming_its_path(store: Store) -> None:
    repeated = value(event("r")).replace(b'"name": "r"', b'"name": "r", "name": "s"', 1)
    in_array = b"[" + value(event("a")) + b"," + repeated + b"]"
    outcomes = ingest_messages(store, [repeated, in_array, value(event("c"))], LIMITS)
    assert [o.refusal for o in outcomes] == [
        Refusal("malformed", "job.name: repeated key"),
        Refusal("malformed", "[1].job.name: repeated key"),
        None,
    ]
    assert counts(store)["events"] == 1


def test_a_gzip_value_is_inflated(store: Store) -> None:
    outcomes = ingest_messages(store, [gzip.compress(value(event("a")))], LIMITS)
    assert outcomes == [MessageOutcome(events=1, stored=1)]


def test_a_message_the_store_refuses_does_not_fail_the_others(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the shared transaction fails for a reason of the data, each message is written
    alone: the one at fault is refused, the others are stored."""
    real = service.store_facts

    def refusing(target: Store, facts: list[Any]) -> Any:
        if any(f.record.job and f.record.job.name == "b" for f in facts):
            raise sa.exc.IntegrityError("INSERT …", {}, Exception("value too long"))
        return real(target, facts)

    monkeypatch.setattr(service, "store_facts", refusing)
    outcomes = ingest_messages(store, [value(event("a")), value(event("b"))], LIMITS)
    assert outcomes[0] == MessageOutcome(events=1, stored=1)
    assert outcomes[1].refusal == Refusal(
        "refused_by_store", "the store refused it: value too long"
    )
    assert dataset_flows(store) == {("pg/a_in", "pg/a_out")}


def test_an_outage_is_raised_not_refused(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    def away(target: Store, facts: list[Any], also: Any = None) -> Any:
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("connection refused"))

    monkeypatch.setattr(service, "store_facts", away)
    with pytest.raises(sa.exc.OperationalError):
        ingest_messages(store, [value(event("a")), b"not json"], LIMITS)
