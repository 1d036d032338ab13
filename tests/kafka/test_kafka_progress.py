"""The line `upstream consume` shows at a terminal, and the command's usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from upstream.api.app import create_app
from upstream.cli import app
from upstream.kafka.consumer import Totals
from upstream.kafka.progress import progress_line
from upstream.settings import Settings


def test_the_progress_line_says_what_happened() -> None:
    totals = Totals(
        consumed=12_000,
        stored=11_990,
        duplicates=5,
        refused=5,
        lag={("t", 0): 100, ("t", 1): 20},
        last_commit_seconds=0.0352,
    )
    assert progress_line(totals) == (
        "12,000 consumed · 11,990 stored · 5 duplicates · 5 refused · lag 120 ([0] 100, [1] 20)"
        " · last batch committed in 35 ms"
    )


def test_the_progress_line_sums_many_partitions_and_says_when_paused() -> None:
    totals = Totals(lag={("t", p): 10 for p in range(8)}, waiting=True)
    assert progress_line(totals) == (
        "0 consumed · 0 stored · 0 duplicates · 0 refused · lag 80"
        " · paused until the database (or the dead-letter topic) is back"
    )


def test_consume_without_brokers_says_which_option_is_missing() -> None:
    result = CliRunner().invoke(app, ["consume", "--db", "sqlite:///:memory:"], env={})
    assert result.exit_code == 1
    assert "no Kafka brokers: give --bootstrap-servers" in result.output


def test_consume_says_which_kafka_setting_the_client_refuses(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["consume", "--bootstrap-servers", "127.0.0.1:9", "--db", f"sqlite:///{tmp_path}/l.db"],
        env={"UPSTREAM_KAFKA_OPTIONS": '{"no.such.property": "x"}'},
    )
    assert result.exit_code == 1
    assert (
        "error: the Kafka client refuses its settings: No such configuration property: "
        '"no.such.property"' in result.output
    )


def test_serve_with_a_refused_kafka_setting_does_not_start(tmp_path: Path) -> None:
    settings = Settings(
        db_url=f"sqlite:///{tmp_path}/l.db",
        kafka_bootstrap_servers="127.0.0.1:9",
        kafka_consumers=1,
        kafka_options={"no.such.property": "x"},
    )
    app_with_consumers = create_app(settings)
    with pytest.raises(KafkaException, match=r"no\.such\.property"), TestClient(app_with_consumers):
        pass
