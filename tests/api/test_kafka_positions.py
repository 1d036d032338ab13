"""Kafka offsets as positions (issue 40 item 3): the text of a position, what the consumers
record with the events they store, a read that names offsets waiting for them (200 once
recorded, 503 with Retry-After past the bound, 400 for a malformed one), the 207 answer's
position, and the client carrying a publishing front's offsets into its next read. Both
stores; the broker's side is in tests/kafka/test_publishing_front.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.readback import counts
from upstream.api.app import create_app
from upstream.client.http import UpstreamClient
from upstream.ingest.body import Limits
from upstream.ingest.service import prepare, store_facts
from upstream.kafka.messages import ingest_messages
from upstream.model.errors import InvalidParameter, Problem
from upstream.model.json_text import dumps
from upstream.model.read_position import KafkaOffset, ReadPosition
from upstream.query.positions import Views
from upstream.settings import Settings
from upstream.store import kafka_offsets
from upstream.store import schema as t
from upstream.store.change_log import position
from upstream.store.engine import Store

HEADER = "X-Upstream-Position"
LIMITS = Limits(10_000_000, 10_000, 1_000_000)
READ = "/api/v1/namespaces/shop/datasets/totals"


def _load(job: str = "load") -> dict[str, object]:
    return run_event(("shop", job), inputs=[ds("shop", "orders")], outputs=[ds("shop", "totals")])


def _recorded(store: Store) -> dict[tuple[str, int], int]:
    with store.read() as conn:
        rows = conn.execute(sa.select(t.kafka_offsets)).all()
    return {(row.topic, row.partition): row.next_offset for row in rows}


@pytest.fixture
def app_client(db_url: str) -> Iterator[TestClient]:
    settings = Settings(db_url=db_url, position_wait=0.5)
    with TestClient(create_app(settings, migrate=False)) as client:
        while client.get("/ready").status_code != 200:  # the index loaded, as a balancer waits
            time.sleep(0.01)
        yield client


# -- the text ---------------------------------------------------------------------------------


def test_a_position_reads_and_writes_both_kinds() -> None:
    text = "7,kafka:lineage.v1:2:40,kafka:lineage.v1:0:9,kafka:lineage.v1:2:38"
    parsed = ReadPosition.parse(text)
    assert parsed == ReadPosition(
        7, (KafkaOffset("lineage.v1", 0, 9), KafkaOffset("lineage.v1", 2, 40))
    )
    assert str(parsed) == "7,kafka:lineage.v1:0:9,kafka:lineage.v1:2:40"
    assert str(ReadPosition.parse("12")) == "12"
    assert ReadPosition.parse("3,5") == ReadPosition(5)


def test_later_writes_keep_their_store_position_and_every_partitions_newest_offset() -> None:
    first = ReadPosition(9, (KafkaOffset("t", 0, 5), KafkaOffset("t", 1, 2)))
    later = ReadPosition(4, (KafkaOffset("t", 0, 3), KafkaOffset("t", 2, 1)))
    # A store started afresh gives smaller positions: the later write's is the one to read.
    assert first.then(later) == ReadPosition(
        4, (KafkaOffset("t", 0, 5), KafkaOffset("t", 1, 2), KafkaOffset("t", 2, 1))
    )
    assert first.then(ReadPosition(offsets=(KafkaOffset("t", 1, 7),))).change == 9
    # A read naming two positions waits for both: the larger store position.
    assert first.together(later).change == 9


@pytest.mark.parametrize(
    "bad",
    [
        "kafka:t:0",
        "kafka::0:1",
        "kafka:t:-1:2",
        "kafka:t:0:1,",
        "kafka:a b:0:1",
        "kafka:t:0:1.5",
        "Kafka:t:0:1",
        ",".join(["1"] * 1025),
    ],
)
def test_a_malformed_kafka_position_is_refused_naming_after(
    app_client: TestClient, bad: str
) -> None:
    answer = app_client.get(READ, params={"after": bad})
    assert answer.status_code == 400, answer.text
    assert answer.json()["errors"][0]["path"] == "after"
    assert app_client.get(READ, headers={HEADER: bad}).status_code == 400


# -- what consumers record --------------------------------------------------------------------


def test_a_consumer_records_its_offsets_with_the_events_it_stores(store: Store) -> None:
    values = [dumps(_load("a")).encode(), b"not json", dumps(_load("b")).encode()]
    outcomes = ingest_messages(store, values, LIMITS, {("t", 0): 12, ("t", 3): 4})
    assert [o.stored for o in outcomes] == [1, 0, 1]
    assert _recorded(store) == {("t", 0): 12, ("t", 3): 4}
    # Offsets only rise: a batch read again by a slower member of the group lowers nothing.
    ingest_messages(store, values[:1], LIMITS, {("t", 0): 10, ("t", 1): 1})
    assert _recorded(store) == {("t", 0): 12, ("t", 1): 1, ("t", 3): 4}


def test_a_batch_of_refused_messages_is_recorded_as_done(store: Store) -> None:
    ingest_messages(store, [b"{}", None], LIMITS, {("t", 0): 2})
    assert _recorded(store) == {("t", 0): 2}
    assert counts(store)["events"] == 0


def test_offsets_commit_with_the_events_or_not_at_all(store: Store) -> None:
    facts = prepare([_load()], batch=False)

    def failing(conn: sa.Connection) -> None:
        kafka_offsets.record(conn, {("t", 0): 1})
        raise RuntimeError("the transaction fails after recording")

    with pytest.raises(RuntimeError):
        store_facts(store, facts, also=failing)
    assert _recorded(store) == {}
    assert counts(store)["events"] == 0


# -- reads naming offsets ---------------------------------------------------------------------


def test_a_read_naming_offsets_waits_until_the_consumers_stored_them(
    app_client: TestClient, store: Store
) -> None:
    after = "kafka:t:0:4,kafka:t:1:0"
    store.write(lambda conn: kafka_offsets.record(conn, {("t", 0): 1}))  # the topic consumed

    def consumer() -> None:
        time.sleep(0.1)
        store.write(lambda conn: kafka_offsets.record(conn, {("t", 0): 5}))
        time.sleep(0.1)
        # The second partition's message stored with events, in one transaction.
        store_facts(
            store,
            prepare([_load()], batch=False),
            also=lambda conn: kafka_offsets.record(conn, {("t", 1): 1}),
        )

    thread = threading.Thread(target=consumer)
    thread.start()
    answer = app_client.get(READ, params={"after": after})
    thread.join()
    # Answered with the events stored with the second offset: it waited for them.
    assert answer.status_code == 200, answer.text
    assert answer.json()["name"] == "totals"


def test_a_read_naming_offsets_not_yet_stored_answers_503(
    app_client: TestClient, store: Store
) -> None:
    store.write(lambda conn: kafka_offsets.record(conn, {("t", 0): 3}))
    answer = app_client.get(READ, params={"after": "kafka:t:0:3"})
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "1"
    assert answer.json()["message"] == (
        "what the Kafka consumers stored includes position kafka:t:0:2, not yet kafka:t:0:3; "
        "retry later"
    )
    unseen = app_client.get(READ, headers={HEADER: "kafka:t:1:0"})
    assert unseen.status_code == 503
    assert "includes position none of their partitions" in unseen.json()["message"]
    # Stored: answered at once (the dataset is not there, hence 404, but not held back).
    assert app_client.get(READ, params={"after": "kafka:t:0:2"}).status_code == 404


def test_without_brokers_offsets_of_a_topic_never_stored_are_refused(
    app_client: TestClient, store: Store
) -> None:
    """A process that does not know the brokers cannot ask them; a topic no consumer ever
    stored anything of into its database is one nobody publishes to for it."""
    answer = app_client.get(READ, params={"after": "kafka:other:0:0,kafka:t:0:0"})
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {"path": "after", "message": "no Kafka consumer has stored anything of topic other"},
        {"path": "after", "message": "no Kafka consumer has stored anything of topic t"},
    ]
    store.write(lambda conn: kafka_offsets.record(conn, {("t", 0): 1}))
    assert app_client.get(READ, params={"after": "kafka:t:0:0"}).status_code == 404  # stored


def test_a_read_naming_offsets_kafka_never_gave_is_refused(app_client: TestClient) -> None:
    asked: list[KafkaOffset] = []

    def brokers(offsets: list[KafkaOffset]) -> None:
        asked.extend(offsets)
        raise InvalidParameter(
            [Problem("after", "offset 9 of t partition 0 is beyond the newest, 2")]
        )

    views: Views = app_client.app.state.views  # type: ignore[attr-defined]
    views.check_offsets_with(brokers)
    answer = app_client.get(READ, params={"after": "kafka:t:0:9"})
    assert answer.status_code == 400
    assert answer.json()["errors"] == [
        {"path": "after", "message": "offset 9 of t partition 0 is beyond the newest, 2"}
    ]
    assert asked == [KafkaOffset("t", 0, 9)]


def test_a_read_naming_both_kinds_waits_for_both(app_client: TestClient, store: Store) -> None:
    posted = app_client.post("/api/v1/lineage", json=_load())
    at = int(posted.headers[HEADER])
    store.write(lambda conn: kafka_offsets.record(conn, {("t", 0): 1}))
    both = f"{at},kafka:t:0:0"
    assert app_client.get(READ, params={"after": both}).status_code == 200
    assert app_client.get(READ, params={"after": f"{at + 5},kafka:t:0:0"}).status_code == 400
    assert app_client.get(READ, params={"after": f"{at},kafka:t:0:1"}).status_code == 503


# -- answers and the client -------------------------------------------------------------------


def test_a_batch_answer_carries_its_position_in_its_json(
    app_client: TestClient, store: Store
) -> None:
    answer = app_client.post(
        "/api/v1/lineage", params={"atomic": "false"}, json=[_load(), {"eventType": "START"}]
    )
    assert answer.status_code == 207
    with store.read() as conn:
        newest = position(conn)
    assert answer.json()["position"] == answer.headers[HEADER] == str(newest) == "2"


def test_the_client_carries_a_fronts_offsets_into_its_next_read() -> None:
    """A front answers each post with the offsets of the partitions it wrote to: the client
    keeps the newest offset of every partition, and sends them all with its reads."""
    answers = iter(["kafka:t:0:5", "kafka:t:1:2", "kafka:t:0:3"])
    sent: list[str | None] = []

    def front(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return httpx.Response(201, headers={HEADER: next(answers)})
        sent.append(request.headers.get(HEADER))
        return httpx.Response(200, json={"status": "ok"})

    with UpstreamClient("http://front", transport=httpx.MockTransport(front)) as client:
        for _ in range(3):
            client.post_events([_load()])
        client.health()
    assert sent == ["kafka:t:0:5,kafka:t:1:2"]
