"""`upstream serve --publish-to-kafka`: posts validated as always, published to the topic
keyed as OpenLineage's Kafka transport keys them, answered once the broker has them, and
stored by a consumer; a refused batch publishes nothing; Kafka away is a 503."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
from openlineage.client.facet_v2 import parent_run
from openlineage.client.serde import Serde

from tests.builders import dataset_event, ds, job_event, run_event
from tests.kafka.test_kafka_consume import consuming, eventually, transport
from tests.kafka_support import TansuBroker, TcpProxy, free_port
from tests.readback import counts
from upstream.api.app import create_app
from upstream.kafka.keys import message_key
from upstream.model.read_position import KafkaOffset, ReadPosition
from upstream.settings import Settings, SettingsError, load_settings
from upstream.store.engine import Store

JSON = {"Content-Type": "application/json"}


def _child_run(root: bool) -> RunEvent:
    """A run of `etl/child` whose parent is `etl/parent`, and with `root` a root `etl/dag`."""
    parent = parent_run.ParentRunFacet(
        run=parent_run.Run(runId=str(uuid.uuid4())),
        job=parent_run.Job(namespace="etl", name="parent"),
        root=parent_run.Root(
            run=parent_run.RootRun(runId=str(uuid.uuid4())),
            job=parent_run.RootJob(namespace="etl", name="dag"),
        )
        if root
        else None,
    )
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime="2024-05-01T10:00:00Z",
        run=Run(runId=str(uuid.uuid4()), facets={"parent": parent}),
        job=Job(namespace="etl", name="child"),
        producer="https://example.com/producer",
    )


def _canonical(event: object) -> str:
    return json.dumps(event, sort_keys=True)


def test_keys_are_openlineages() -> None:
    plain = run_event(("etl", "load"))
    parented = run_event(("etl", "load"), parent=(("etl", "nightly"), str(uuid.uuid4())))
    rooted = json.loads(Serde.to_json(_child_run(root=True)))
    assert message_key(plain) == "run:etl/load"
    assert message_key(parented) == "run:etl/nightly"
    assert message_key(rooted) == "run:etl/dag"
    assert message_key(job_event(("etl", "load"))) == "job:etl/load"
    assert message_key(dataset_event("warehouse", "orders")) == "dataset:warehouse/orders"


def test_the_front_publishes_keyed_as_the_transport_and_a_consumer_stores_it(
    front: TestClient, kafka_broker: TansuBroker, front_topic: str, db_url: str, store: Store
) -> None:
    events = [
        json.loads(Serde.to_json(_child_run(root=True))),
        json.loads(Serde.to_json(_child_run(root=False))),
        run_event(("etl", "load"), outputs=[ds("warehouse", "orders")]),
        job_event(("etl", "load")),
        dataset_event("warehouse", "orders"),
    ]
    answer = front.post("/api/v1/lineage", json=events)
    assert answer.status_code == 201, answer.text
    # Published, not stored: the front writes nothing itself.
    assert counts(store)["events"] == 0
    published = kafka_broker.read_all(front_topic, len(events))
    by_value = {_canonical(json.loads(m.value())): m.key().decode() for m in published}  # type: ignore[attr-defined]
    assert len(published) == len(events)
    # The keys OpenLineage's own transport gives the same events.
    reference_topic = kafka_broker.create_topic(partitions=2)
    own = transport(kafka_broker, reference_topic)
    for event in (_child_run(root=True), _child_run(root=False)):
        own.emit(event)
    reference = sorted(m.key().decode() for m in kafka_broker.read_all(reference_topic, 2))  # type: ignore[attr-defined]
    assert reference == ["run:etl/dag", "run:etl/parent"]
    assert [by_value[_canonical(e)] for e in events] == [
        "run:etl/dag",
        "run:etl/parent",
        "run:etl/load",
        "job:etl/load",
        "dataset:warehouse/orders",
    ]
    with consuming(db_url, kafka_broker.bootstrap, front_topic) as consumer:
        eventually(lambda: consumer.totals.consumed == len(events), "every event consumed")
    assert consumer.totals.refused == 0
    assert counts(store)["events"] == len(events)
    assert front.get("/api/v1/namespaces/warehouse/datasets/orders").status_code == 200


def test_the_front_answers_kafka_offsets_and_a_read_after_them_waits_for_the_consumers(
    kafka_broker: TansuBroker, front_topic: str, db_url: str
) -> None:
    settings = Settings(
        db_url=db_url,
        publish_to_kafka=True,
        kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=front_topic,
        position_wait=0.3,
    )
    events = [
        run_event(("etl", "load"), outputs=[ds("warehouse", "orders")]),
        job_event(("etl", "report")),
        run_event(("etl", "load"), outputs=[ds("warehouse", "orders")]),
    ]
    read = "/api/v1/namespaces/warehouse/datasets/orders"
    with TestClient(create_app(settings, migrate=False)) as front:
        posted = front.post("/api/v1/lineage", json=events)
        assert posted.status_code == 201, posted.text
        # Where Kafka put them: the newest offset of each partition written to.
        published = kafka_broker.read_all(front_topic, len(events))
        where = [KafkaOffset(m.topic(), m.partition(), m.offset()) for m in published]  # type: ignore[attr-defined]
        assert posted.headers["X-Upstream-Position"] == str(ReadPosition.of_offsets(where))
        assert posted.headers["X-Upstream-Position"].startswith(f"kafka:{front_topic}:")
        # Tansu gives a partition's newest offset as the last batch's first, plus one (Kafka:
        # its last message's): one event alone in its batch keeps the two the same.
        alone = front.post("/api/v1/lineage", json=events[0])
        position = alone.headers["X-Upstream-Position"]
        (last,) = ReadPosition.parse(position).offsets
        assert last.offset == max(o.offset for o in where if o.partition == last.partition) + 1
        # Nothing consumed yet: the read waits its bound, then says so.
        held = front.get(read, params={"after": position})
        assert held.status_code == 503
        assert held.headers["Retry-After"] == "1"
        assert "what the Kafka consumers stored" in held.json()["message"]
        # Offsets Kafka never gave are refused, naming after.
        beyond = f"kafka:{front_topic}:{last.partition}:{last.offset + 1}"
        refused = front.get(read, params={"after": beyond})
        assert refused.status_code == 400
        assert refused.json()["errors"] == [
            {
                "path": "after",
                "message": f"offset {last.offset + 1} of {front_topic} partition "
                f"{last.partition} is beyond the newest, {last.offset}",
            }
        ]
        nowhere = front.get(read, headers={"X-Upstream-Position": f"kafka:{front_topic}:9:0"})
        assert nowhere.status_code == 400, nowhere.text
        assert nowhere.json()["errors"][0]["path"] == "after"
        with consuming(db_url, kafka_broker.bootstrap, front_topic):
            eventually(
                lambda: front.get(read, params={"after": position}).status_code == 200,
                "the read after the front's offsets answered",
            )
        answered = front.get(read, params={"after": position})
        assert answered.json()["name"] == "orders"


def test_a_refused_batch_publishes_nothing(
    front: TestClient, kafka_broker: TansuBroker, front_topic: str
) -> None:
    good = run_event(("etl", "load"))
    bad = {**run_event(("etl", "load")), "eventTime": "yesterday"}
    refused = front.post("/api/v1/lineage", json=[good, bad])
    assert refused.status_code in (400, 422)
    assert "eventTime" in refused.text
    probe = run_event(("etl", "after"))
    assert front.post("/api/v1/lineage", json=probe).status_code == 201
    # The topic holds only the event posted after the refusal.
    (only,) = kafka_broker.read_all(front_topic, 2, timeout=10)
    assert json.loads(only.value()) == probe  # type: ignore[attr-defined]


def test_with_kafka_away_the_front_answers_503_with_retry_after(db_url: str) -> None:
    settings = Settings(
        db_url=db_url,
        publish_to_kafka=True,
        kafka_bootstrap_servers=f"127.0.0.1:{free_port()}",  # nothing listens
        kafka_publish_timeout=1,
    )
    with TestClient(create_app(settings, migrate=False)) as client:
        answer = client.post("/api/v1/lineage", json=run_event(("etl", "load")))
    assert answer.status_code == 503
    assert answer.headers["Retry-After"]
    assert "Kafka" in answer.json()["message"]


def test_a_post_kafka_does_not_acknowledge_is_503_and_never_published_later(
    db_url: str, tmp_path: Path
) -> None:
    """The broker cut off after the front connected: the post is answered 503 with
    Retry-After, and once the broker is back none of its events turns up in the topic (given
    up, never sent later), while the next post is published whole."""
    from tests.conftest import tansu_binary

    advertised = free_port()
    broker = TansuBroker(tansu_binary(), tmp_path / "tansu.log", advertised_port=advertised)
    proxy = TcpProxy(broker.port, port=advertised)
    try:
        topic = broker.create_topic(partitions=2)
        settings = Settings(
            db_url=db_url,
            publish_to_kafka=True,
            kafka_bootstrap_servers=broker.bootstrap,
            kafka_topic=topic,
            kafka_publish_timeout=2,
        )
        with TestClient(create_app(settings, migrate=False)) as front:
            first = run_event(("etl", "first"))
            assert front.post("/api/v1/lineage", json=first).status_code == 201
            proxy.cut()
            lost = [run_event(("etl", f"lost{n}")) for n in range(5)]
            refused = front.post("/api/v1/lineage", json=lost)
            assert refused.status_code == 503
            assert refused.headers["Retry-After"]
            assert "Kafka" in refused.json()["message"]
            proxy.restore()
            after = [run_event(("etl", f"after{n}")) for n in range(3)]
            eventually(
                lambda: front.post("/api/v1/lineage", json=after).status_code == 201,
                "the front publishing again",
            )
        published = [json.loads(m.value()) for m in broker.read_all(topic, 20, timeout=10)]  # type: ignore[attr-defined]
        names = {e["job"]["name"] for e in published}
        assert names >= {"first", "after0", "after1", "after2"}
        assert not any(name.startswith("lost") for name in names)
    finally:
        proxy.cut()
        broker.stop()


def test_the_front_needs_brokers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_PUBLISH_TO_KAFKA", "true")
    with pytest.raises(SettingsError, match=r"UPSTREAM_PUBLISH_TO_KAFKA .* needs"):
        load_settings()
