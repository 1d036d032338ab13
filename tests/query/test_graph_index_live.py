"""The graph index in running servers (design §6): never stale across processes, and a server
that is loading it is alive but not ready.

Two `upstream serve` processes share one database; whatever one of them (or the command line)
changes, the other's next lineage read shows, on both stores.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event
from tests.conftest import LiveServer, new_run_id
from upstream.api.app import create_app
from upstream.query.graph_index import index as index_module
from upstream.settings import Settings

NS = "shop"
WINDOW = {"start": (BASE_TIME - hours(48)).isoformat(), "end": (BASE_TIME + hours(48)).isoformat()}


@pytest.fixture
def servers(db_url: str, tmp_path: Path) -> Iterator[tuple[LiveServer, LiveServer]]:
    first = LiveServer(db_url, tmp_path).start()
    second = LiveServer(db_url, tmp_path)
    try:
        second.start()
        yield first, second
    finally:
        second.stop()
        first.stop()


def _post(server: LiveServer, *events: dict[str, Any]) -> None:
    response = httpx.post(f"{server.url}/api/v1/lineage", json=list(events), timeout=30)
    assert response.status_code == 201, response.text


def _downstream(
    server: LiveServer, dataset: str, direction: str = "downstream"
) -> set[tuple[str, str, str]]:
    """(dataset, program, access) of every relation of a walk from `dataset`."""
    response = httpx.get(
        f"{server.url}/v3/namespaces/{NS}/datasets/{dataset}/lineage",
        params={**WINDOW, "direction": direction, "collapse": "run"},
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
    servers: tuple[LiveServer, LiveServer], db_url: str
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
    _cli(db_url, "db", "rebuild")
    assert _downstream(reader, "raw") == both
    loaded = {_relation("raw", "load", "read"), _relation("clean", "load", "write")}
    assert _downstream(reader, "clean", "upstream") == loaded

    # A prune of the runs that ended before the last one removes their lineage: nothing
    # wrote `clean` any more.
    _cli(db_url, "db", "prune", "--before", (BASE_TIME + hours(1.5)).isoformat())
    assert _downstream(reader, "clean", "upstream") == set()
    assert _downstream(reader, "clean") == {
        _relation("clean", "report", "read"),
        _relation("summary", "report", "write"),
    }


def test_a_dataset_deleted_elsewhere_is_not_walked_through(
    servers: tuple[LiveServer, LiveServer],
) -> None:
    reader, writer = servers
    _post(writer, _copy("load", "raw", "clean"), _copy("report", "clean", "summary", at=1))
    assert len(_downstream(reader, "raw")) == 4
    deleted = httpx.delete(f"{writer.url}/api/v1/namespaces/{NS}/datasets/clean", timeout=30)
    assert deleted.status_code == 200, deleted.text
    assert _downstream(reader, "raw") == {_relation("raw", "load", "read")}


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
