"""Reads from a PostgreSQL streaming replica (`read_database_url`): a primary and a hot
standby made with pg_basebackup, both the test's own (tests/private_postgres.py).

The replica's replay is paused to make it lag by exactly the writes made meanwhile: what a
read sees then says which server answered it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.conftest import truncate_tables
from tests.private_postgres import PrivateCluster, primary_and_replica
from upstream.api.app import create_app
from upstream.settings import Settings

pytestmark = pytest.mark.postgres

#: Seconds a test waits at most for the server to notice a change of the replica's lag (it
#: measures every half second; a stopped replica takes its probe time-out, STOPPED_NOTICED).
NOTICE_WITHIN = 20.0
#: The probe time-out of the tests that stop the replica; the others wait a minute, so that a
#: probe delayed on a loaded machine does not take the replica out of use mid-test.
STOPPED_NOTICED = 2.0


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    with primary_and_replica() as (primary, replica):
        yield primary, replica


@pytest.fixture
def clusters(
    pair: tuple[PrivateCluster, PrivateCluster],
) -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    """The pair with empty tables and the replica replaying."""
    primary, replica = pair
    truncate_tables(primary.url)
    yield primary, replica
    replica.thaw()
    replica.resume_replay()


def _app(primary: PrivateCluster, replica: PrivateCluster, **more: Any) -> TestClient:
    more.setdefault("replica_probe_timeout", 60.0)
    settings = Settings(db_url=primary.url, read_database_url=replica.url, **more)
    return TestClient(create_app(settings, migrate=False))


def _event(name: str) -> dict[str, Any]:
    return run_event(("replica", name), run_id=str(uuid.uuid4()), outputs=[ds("warehouse", name)])


def _post(client: TestClient, name: str) -> str:
    response = client.post("/api/v1/lineage", json=_event(name))
    assert response.status_code == 201, response.text
    return response.headers["X-Upstream-Position"]


def _dataset(client: TestClient, name: str, **params: str) -> Any:
    return client.get(f"/api/v1/namespaces/warehouse/datasets/{name}", params=params)


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + NOTICE_WITHIN
    while not condition():
        assert time.monotonic() < deadline, "the server did not notice within the bound"
        time.sleep(0.1)


def _ready(client: TestClient) -> Any:
    return client.get("/ready")


def test_reads_come_from_the_replica_and_after_waits_for_it(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    primary, replica = clusters
    with _app(primary, replica, max_replica_lag=600, position_wait=0.3) as client:
        _post(client, "seen")
        _until(lambda: _dataset(client, "seen").status_code == 200)
        replica.pause_replay()
        position = _post(client, "held")  # on the primary, not yet replayed
        assert _dataset(client, "held").status_code == 404  # the replica answered
        waited = _dataset(client, "held", after=position)
        assert waited.status_code == 503
        assert waited.headers["Retry-After"]
        assert "position" in waited.json()["message"]
        # A position the primary never gave is refused, naming after; the primary's newest
        # is not, though the replica lacks it.
        beyond = _dataset(client, "held", after=str(int(position) + 1))
        assert beyond.status_code == 400
        assert "after" in beyond.text
        replica.resume_replay()  # answered once the replica has replayed it (the wait is short)
        _until(lambda: _dataset(client, "held", after=position).status_code == 200)


def test_a_replica_read_naming_a_position_asks_its_snapshot_for_it_once(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    """The read's snapshot is checked against the position, and its graph index is answered
    the position that check read: one statement, not one each."""
    primary, replica = clusters
    with _app(primary, replica, max_replica_lag=600, position_wait=5) as client:
        position = _post(client, "seen")
        _until(lambda: _dataset(client, "seen", after=position).status_code == 200)
        asked: list[str] = []

        def record(*args: Any) -> None:
            asked.append(str(args[2]))

        engine = client.app.state.store.replicas.engines[0]  # type: ignore[attr-defined]
        sa.event.listen(engine, "before_cursor_execute", record)
        try:
            assert _dataset(client, "seen", after=position).status_code == 200
        finally:
            sa.event.remove(engine, "before_cursor_execute", record)
    heads = [
        a
        for a in asked
        if a.split() == ["SELECT", "change_log_head.position", "FROM", "change_log_head"]
    ]
    assert len(heads) == 1, asked


def test_a_lagging_replica_is_left_for_the_primary_and_taken_back(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    primary, replica = clusters
    with _app(primary, replica, max_replica_lag=0.2) as client:
        _post(client, "first")
        assert _ready(client).json()["replicas"][0]["in_use"] is True
        replica.pause_replay()
        _post(client, "late")
        _until(lambda: _ready(client).json()["replicas"][0]["in_use"] is False)
        ready = _ready(client)
        assert ready.status_code == 200  # the primary answers reads
        (report,) = ready.json()["replicas"]
        assert report["replica"] == replica.url
        assert report["lag_positions"] >= 1
        assert report["lag_seconds"] > 0.2
        assert _dataset(client, "late").status_code == 200  # from the primary
        metrics = client.get("/metrics").text
        assert f'upstream_replica_in_use{{replica="{report["replica"]}"}} 0.0' in metrics
        assert "upstream_replica_lag_seconds{" in metrics
        replica.resume_replay()
        _until(lambda: _ready(client).json()["replicas"][0]["in_use"] is True)
        assert _ready(client).json()["replicas"][0]["lag_seconds"] == 0
        assert f'upstream_replica_in_use{{replica="{report["replica"]}"}} 1.0' in (
            client.get("/metrics").text
        )


def test_with_fallback_unavailable_a_lagging_replica_makes_reads_503(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    primary, replica = clusters
    with _app(primary, replica, max_replica_lag=0.2, replica_lag_fallback="unavailable") as client:
        _post(client, "first")
        replica.pause_replay()
        _post(client, "late")
        _until(lambda: _ready(client).status_code == 503)
        ready = _ready(client).json()
        assert ready["reason"] == "every read replica lags more than max_replica_lag"
        assert ready["replicas"][0]["in_use"] is False
        refused = _dataset(client, "first")
        assert refused.status_code == 503
        assert refused.headers["Retry-After"]
        assert "max_replica_lag" in refused.json()["message"]
        # Writes go on: they never touch the replica.
        _post(client, "during")
        replica.resume_replay()
        _until(lambda: _ready(client).status_code == 200)
        assert _dataset(client, "during").status_code == 200


def test_a_stopped_replica_turns_reads_to_the_primary_within_seconds(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    primary, replica = clusters
    with _app(primary, replica, max_replica_lag=5, replica_probe_timeout=STOPPED_NOTICED) as client:
        _post(client, "before")
        _until(lambda: _dataset(client, "before").status_code == 200)
        replica.hang()
        _until(lambda: _ready(client).json()["replicas"][0]["in_use"] is False)
        report = _ready(client).json()["replicas"][0]
        assert report["lag_seconds"] is None  # it does not answer
        assert report["lag_positions"] is None
        assert "upstream_replica_lag_seconds{" in client.get("/metrics").text
        _post(client, "while-stopped")
        assert _dataset(client, "while-stopped").status_code == 200
        replica.thaw()
        _until(lambda: _ready(client).json()["replicas"][0]["in_use"] is True)


def test_with_fallback_unavailable_a_stopped_replica_makes_reads_503_within_seconds(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    primary, replica = clusters
    with _app(
        primary,
        replica,
        max_replica_lag=1,
        replica_lag_fallback="unavailable",
        replica_probe_timeout=STOPPED_NOTICED,
    ) as client:
        _post(client, "before")
        _until(lambda: _dataset(client, "before").status_code == 200)
        replica.hang()
        _until(lambda: _dataset(client, "before").status_code == 503)
        refused = _dataset(client, "before")
        assert refused.headers["Retry-After"]
        assert "max_replica_lag" in refused.json()["message"]
        assert _ready(client).status_code == 503
        # Writes go on: they never touch the replica.
        _post(client, "while-stopped")
        replica.thaw()
        _until(lambda: _dataset(client, "while-stopped").status_code == 200)


def test_a_replica_answering_within_its_probe_timeout_stays_in_use(
    clusters: tuple[PrivateCluster, PrivateCluster],
) -> None:
    """A replica slow to answer — stopped here for longer than the default time-out, but
    shorter than `replica_probe_timeout` — is still read from."""
    primary, replica = clusters
    with _app(primary, replica, replica_probe_timeout=60.0) as client:
        _post(client, "before")
        _until(lambda: _dataset(client, "before").status_code == 200)
        replicas = client.app.state.store.replicas
        in_use = set()
        replica.hang()
        try:
            held_until = time.monotonic() + 2 * STOPPED_NOTICED + 1
            while time.monotonic() < held_until:
                in_use.add(replicas.engine_for_reads_now() is not None)
                time.sleep(0.1)
        finally:
            replica.thaw()
        assert in_use == {True}
