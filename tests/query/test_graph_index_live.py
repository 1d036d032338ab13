"""The graph index in running servers (design §6): never stale across processes, and a server
that is loading it is alive but not ready.

Two `upstream serve` processes share one database; whatever one of them, the command line or
an `upstream consume` process changes — events, deletions and revivals, alias claims, tags, a
rebuild, a prune — the other's next read shows, on both stores; and a server started while
events keep arriving has every one of them once they stop.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, column_lineage, ds, hours, run_event, schema_facet
from tests.conftest import LiveServer, new_run_id
from tests.ingest import test_symlinks as symlinks
from tests.kafka.test_kafka_consume import ConsumerProcess, eventually
from tests.kafka_support import TansuBroker
from tests.readback import counts
from upstream.api.app import create_app
from upstream.query.graph_index import index as index_module
from upstream.settings import Settings
from upstream.store.engine import Store

NS = "shop"
WINDOW = {"start": (BASE_TIME - hours(48)).isoformat(), "end": (BASE_TIME + hours(48)).isoformat()}


@pytest.fixture(scope="module")
def servers(
    module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, LiveServer]]:
    """Two servers on one database, launched together and shared by the module's tests on
    each store (each start costs about 2 s of imports). Sharing is safe because every test
    that uses them writes datasets and jobs of names no other test writes, and reads only
    walks from those and the tag only it sets, so what another left in the store changes no
    answer; a rebuild or prune of the whole store by one test (`db rebuild`, `db prune`)
    only removes what earlier tests no longer read. The store is never emptied under the
    servers: their indexes follow the change log's position, which emptying sets back."""
    log_dir = tmp_path_factory.mktemp("servers")
    pair = LiveServer(module_db_url, log_dir), LiveServer(module_db_url, log_dir)
    try:
        for server in pair:
            server.launch()
        for server in pair:
            server.await_health()
        yield pair
    finally:
        for server in pair:
            server.stop()


def _post(server: LiveServer, *events: dict[str, Any]) -> None:
    response = httpx.post(f"{server.url}/api/v1/lineage", json=list(events), timeout=30)
    assert response.status_code == 201, response.text


def _downstream(
    server: LiveServer,
    dataset: str,
    direction: str = "downstream",
    *,
    namespace: str = NS,
    levels: int = 10,
) -> set[tuple[str, str, str]]:
    """(dataset, program, access) of every relation of a walk from `dataset`."""
    response = httpx.get(
        f"{server.url}/v3/namespaces/{quote(namespace, safe='')}/datasets/"
        f"{quote(dataset, safe='')}/lineage",
        params={**WINDOW, "direction": direction, "collapse": "run", "levels": levels},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    relations = response.json()["relations"]
    return {(r["data"], r["program"], access) for r in relations for access in r["accesses"]}


def _copy(job: str, source: str, target: str, at: float = 0) -> dict[str, Any]:
    return run_event(
        (NS, job),
        run_id=new_run_id(),
        time=BASE_TIME + hours(at),
        inputs=[ds(NS, source)],
        outputs=[ds(NS, target)],
    )


def _relation(dataset: str, job: str, access: str) -> tuple[str, str, str]:
    return (f"dataset.{NS}.{dataset}", f"job.{NS}.{job}", access)


def _cli(db_url: str, *arguments: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "upstream", *arguments, "--db", db_url],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_write_through_another_server_is_read_at_once(
    servers: tuple[LiveServer, LiveServer], module_db_url: str
) -> None:
    reader, writer = servers
    _post(reader, _copy("load", "raw", "clean"))
    assert _downstream(reader, "raw") == {
        _relation("raw", "load", "read"),
        _relation("clean", "load", "write"),
    }
    # Written through the other process: the reader's index has not seen it yet.
    _post(writer, _copy("report", "clean", "summary", at=1))
    both = {
        _relation("raw", "load", "read"),
        _relation("clean", "load", "write"),
        _relation("clean", "report", "read"),
        _relation("summary", "report", "write"),
    }
    assert _downstream(reader, "raw") == both

    # A deletion through the writer: the walk no longer passes through the job.
    deleted = httpx.delete(f"{writer.url}/api/v1/namespaces/{NS}/jobs/report", timeout=30)
    assert deleted.status_code == 200, deleted.text
    assert _downstream(reader, "raw") == {
        _relation("raw", "load", "read"),
        _relation("clean", "load", "write"),
    }
    # An event received after the deletion revives it.
    _post(writer, _copy("report", "clean", "summary", at=2))
    assert _downstream(reader, "raw") == both

    # A rebuild from the command line derives everything again: the same answer.
    _cli(module_db_url, "db", "rebuild")
    assert _downstream(reader, "raw") == both
    loaded = {_relation("raw", "load", "read"), _relation("clean", "load", "write")}
    assert _downstream(reader, "clean", "upstream") == loaded

    # A prune of the runs that ended before the last one removes their lineage: nothing
    # wrote `clean` any more.
    _cli(module_db_url, "db", "prune", "--before", (BASE_TIME + hours(1.5)).isoformat())
    assert _downstream(reader, "clean", "upstream") == set()
    assert _downstream(reader, "clean") == {
        _relation("clean", "report", "read"),
        _relation("summary", "report", "write"),
    }


def test_a_dataset_deleted_elsewhere_is_not_walked_through(
    servers: tuple[LiveServer, LiveServer],
) -> None:
    reader, writer = servers
    _post(
        writer,
        _copy("load_orders", "orders", "orders_clean"),
        _copy("report_orders", "orders_clean", "orders_summary", at=1),
    )
    assert len(_downstream(reader, "orders")) == 4
    deleted = httpx.delete(f"{writer.url}/api/v1/namespaces/{NS}/datasets/orders_clean", timeout=30)
    assert deleted.status_code == 200, deleted.text
    assert _downstream(reader, "orders") == {_relation("orders", "load_orders", "read")}


def test_a_write_through_the_kafka_consumer_is_read_at_once(
    kafka_broker: TansuBroker,
    servers: tuple[LiveServer, LiveServer],
    module_db_url: str,
    tmp_path: Path,
) -> None:
    reader = servers[0]
    store = Store(module_db_url)
    topic = kafka_broker.create_topic()
    consumer = ConsumerProcess(
        module_db_url, kafka_broker.bootstrap, topic, "index", tmp_path / "consume.log"
    )
    try:
        _post(reader, _copy("load_clicks", "clicks", "clicks_clean"))
        assert _downstream(reader, "clicks") == {
            _relation("clicks", "load_clicks", "read"),
            _relation("clicks_clean", "load_clicks", "write"),
        }
        stored = counts(store)["events"]
        event = _copy("report_clicks", "clicks_clean", "clicks_summary", 1)
        kafka_broker.produce(topic, [json.dumps(event).encode()])
        eventually(lambda: counts(store)["events"] == stored + 1, "the consumer stored the event")
        # Stored by the consumer's own process: the reader's very next read walks it.
        assert _downstream(reader, "clicks") == {
            _relation("clicks", "load_clicks", "read"),
            _relation("clicks_clean", "load_clicks", "write"),
            _relation("clicks_clean", "report_clicks", "read"),
            _relation("clicks_summary", "report_clicks", "write"),
        }
    finally:
        stopped = consumer.stop()
        store.dispose()
    assert stopped == 0


def test_an_alias_claimed_through_another_server_joins_the_walk(
    servers: tuple[LiveServer, LiveServer],
) -> None:
    """The reader has walked `reports.daily` back to the Hive table it was read from; then
    the other server stores the Spark run that says the S3 path it wrote is that table."""
    reader, writer = servers
    _post(reader, symlinks.reader())
    hive_table = f"dataset.{symlinks.HIVE}.{symlinks.TABLE}"
    assert _downstream(reader, "daily", "upstream", namespace=symlinks.REPORTS, levels=2) == {
        (f"dataset.{symlinks.REPORTS}.daily", "job.spark.report", "write"),
        (hive_table, "job.spark.report", "read"),
    }
    _post(writer, symlinks.writer())
    assert (
        _downstream(reader, "daily", "upstream", namespace=symlinks.REPORTS, levels=2)
        == symlinks.UPSTREAM_OF_DAILY
    )


def test_tags_changed_through_another_server_are_read_at_once(
    servers: tuple[LiveServer, LiveServer],
) -> None:
    reader, writer = servers
    masked = run_event(
        (NS, "mask"),
        run_id=new_run_id(),
        time=BASE_TIME,
        inputs=[ds(NS, "users", schema=schema_facet(("email", "text"), ("id", "int")))],
        outputs=[
            ds(
                NS,
                "contacts",
                schema=schema_facet(("contact", "text")),
                columnLineage=column_lineage({"contact": [(NS, "users", "email")]}),
            )
        ],
    )
    _post(reader, masked)
    users = f"{writer.url}/api/v1/namespaces/{NS}/datasets/users"
    contacts = {
        "dataset": {"namespace": NS, "name": "contacts"},
        "fields": ["contact"],
        "origins": {"contact": ["columnLineage"]},
    }

    _changed(httpx.post(f"{users}/fields/email/tags/PII", timeout=30))
    assert _reach(reader, "PII") == (
        [{"dataset": {"namespace": NS, "name": "users"}, "fields": ["email"]}],
        [contacts],
    )
    _changed(httpx.delete(f"{users}/fields/email/tags/PII", timeout=30))
    assert _reach(reader, "PII") == ([], [])
    # A tag on the dataset tags each of its fields.
    _changed(httpx.post(f"{users}/tags/PII", timeout=30))
    assert _reach(reader, "PII") == (
        [{"dataset": {"namespace": NS, "name": "users"}, "fields": ["email", "id"]}],
        [contacts],
    )


def _changed(response: httpx.Response) -> None:
    assert response.status_code == 200, response.text


def _reach(server: LiveServer, tag: str) -> tuple[list[Any], list[Any]]:
    """What a tag's reach answers: the tagged fields, and the fields their data reached."""
    response = httpx.get(f"{server.url}/v3/tags/{tag}/reach", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["tagged"], response.json()["reach"]


def test_a_server_started_during_a_long_ingest_converges(
    servers: tuple[LiveServer, LiveServer], module_db_url: str, tmp_path: Path
) -> None:
    """Batches keep arriving through one server while a second starts and loads its index,
    and for a while after it is ready: once the last is stored, the second's next read has
    every one of them."""
    writer = servers[0]
    reader = LiveServer(module_db_url, tmp_path)
    ready = threading.Event()

    def start_reader() -> None:
        reader.start()
        while httpx.get(f"{reader.url}/ready", timeout=30).status_code != 200:
            time.sleep(0.05)
        ready.set()

    starting = threading.Thread(target=start_reader)
    jobs: list[str] = []

    def post_batch() -> None:
        batch = [f"feed_copy{len(jobs) + n}" for n in range(10)]
        _post(writer, *(_copy(job, "feed", f"out_{job}") for job in batch))
        jobs.extend(batch)

    try:
        for _ in range(3):
            post_batch()
        starting.start()
        while not ready.is_set():
            post_batch()
        for _ in range(3):
            post_batch()
        starting.join()
        assert _downstream(reader, "feed", levels=1) == {
            relation
            for job in jobs
            for relation in (
                _relation("feed", job, "read"),
                _relation(f"out_{job}", job, "write"),
            )
        }
    finally:
        starting.join(120)
        reader.stop()


# -- loading --------------------------------------------------------------------------------


@pytest.fixture
def slow_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Loads wait for the event to be set (released at the end whatever happens)."""
    release = threading.Event()
    real_load = index_module.load

    def held(*args: Any, **kwargs: Any) -> Any:
        release.wait(30)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(index_module, "load", held)
    monkeypatch.setattr(index_module, "LOAD_WAIT_SECONDS", 0.3)
    yield release
    release.set()


def test_alive_but_not_ready_while_the_index_loads(
    settings: Settings, slow_load: threading.Event
) -> None:
    lineage = f"/v3/namespaces/{NS}/datasets/raw/lineage"
    with TestClient(create_app(settings, migrate=False)) as client:
        client.post("/api/v1/lineage", json=_copy("load", "raw", "clean"))
        assert client.get("/health").status_code == 200
        ready = client.get("/ready")
        assert ready.status_code == 503
        assert ready.json() == {"status": "unavailable", "reason": "the lineage index is loading"}
        waited = client.get(lineage, params=WINDOW)
        assert waited.status_code == 503
        assert "index is still loading" in waited.json()["message"]
        assert int(waited.headers["Retry-After"]) > 0

        slow_load.set()
        assert client.get("/ready").status_code == 200
        answer = client.get(lineage, params=WINDOW)
        assert answer.status_code == 200
        assert {r["program"] for r in answer.json()["relations"]} == {f"job.{NS}.load"}
