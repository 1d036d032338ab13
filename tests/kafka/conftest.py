"""A publishing front in-process, on the parametrised database and a topic of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.kafka_support import TansuBroker
from upstream.api.app import create_app
from upstream.settings import Settings


@pytest.fixture
def front_topic(kafka_broker: TansuBroker) -> str:
    return kafka_broker.create_topic(partitions=2)


@pytest.fixture
def front(db_url: str, kafka_broker: TansuBroker, front_topic: str) -> Iterator[TestClient]:
    settings = Settings(
        db_url=db_url,
        publish_to_kafka=True,
        kafka_bootstrap_servers=kafka_broker.bootstrap,
        kafka_topic=front_topic,
    )
    with TestClient(create_app(settings, migrate=False)) as client:
        yield client
