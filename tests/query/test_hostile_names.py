"""Names are data, never code (design §2): quotes, `%`, `_`, SQL, `../`, `<script>`, emoji
are stored and returned verbatim through every read route, and never interpreted as SQL,
LIKE patterns, paths or HTML."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.readback import counts
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.payloads import unpack

NAMESPACE = 'hostile://db:5432/it\'s "100%_"'
#: The namespace as a lineage key writes it (design §4.2): `%` as `%25`, `.` as `%2E`.
KEY_NAMESPACE = 'hostile://db:5432/it\'s "100%25_"'
HOSTILE = [
    'it\'s "quoted"',
    "100%_done",
    "under_score",
    "'; DROP TABLE datasets; --",
    "Robert'); DELETE FROM events; --",
    "../../etc/passwd",
    "..\\..\\windows\\win.ini",
    "<script>alert('x')</script>",
    "<img src=x onerror=alert(1)>",
    "emoji 🚀📊 naïve 数据",
    "a/b?c=d&e#f",
    "%2F already encoded",
    "back\\slash",
    "  padded  ",
    "semi;colon:colon@at",
]


def segment(text: str) -> str:
    """One path segment, percent-encoded once (a client's job; the server decodes once)."""
    return quote(text, safe="")


def event_for(name: str) -> dict[str, Any]:
    """A run of a job named `name` that reads dataset `name` and writes `name.out`."""
    return run_event(
        (NAMESPACE, name), inputs=[ds(NAMESPACE, name)], outputs=[ds(NAMESPACE, f"{name}.out")]
    )


@pytest.fixture
def hostile(client: TestClient) -> TestClient:
    response = client.post("/api/v1/lineage", json=[event_for(name) for name in HOSTILE])
    assert response.status_code == 201, response.text
    return client


def test_every_name_is_stored_verbatim(hostile: TestClient, store: Store) -> None:
    with store.read() as conn:
        datasets = set(conn.execute(sa.select(t.datasets.c.name)).scalars())
        jobs = set(conn.execute(sa.select(t.jobs.c.name)).scalars())
        namespaces = set(conn.execute(sa.select(t.namespaces.c.name)).scalars())
        stored = conn.execute(sa.select(t.events.c.payload_zstd)).scalars().all()
        payloads = [json.loads(p) for p in unpack(conn, stored)]
    assert datasets == set(HOSTILE) | {f"{n}.out" for n in HOSTILE}
    assert jobs == set(HOSTILE)
    assert namespaces == {NAMESPACE}
    assert sorted(p["job"]["name"] for p in payloads) == sorted(HOSTILE)
    tables = counts(store)  # every table still there, with what it should hold
    assert (tables["datasets"], tables["jobs"], tables["events"]) == (30, 15, 15)


def test_marquez_routes_return_names_verbatim(hostile: TestClient) -> None:
    ns = segment(NAMESPACE)
    for name in HOSTILE:
        dataset = hostile.get(f"/api/v1/namespaces/{ns}/datasets/{segment(name)}")
        assert dataset.status_code == 200, (name, dataset.text)
        assert dataset.headers["content-type"] == "application/json"
        assert dataset.json()["id"] == {"namespace": NAMESPACE, "name": name}
        assert dataset.json()["name"] == name
        job = hostile.get(f"/api/v1/namespaces/{ns}/jobs/{segment(name)}")
        assert job.status_code == 200, (name, job.text)
        assert (job.json()["namespace"], job.json()["name"]) == (NAMESPACE, name)


def test_dataset_lineage_returns_names_verbatim(hostile: TestClient) -> None:
    for name in HOSTILE:
        response = hostile.get(
            f"/v3/namespaces/{segment(NAMESPACE)}/datasets/{segment(name)}/lineage",
            params={"start": "0", "end": "now+1d", "levels": 1},
        )
        assert response.status_code == 200, (name, response.text)
        body = response.json()
        assert body["data"][f"dataset.{KEY_NAMESPACE}.{name}"]["entityId"] == {
            "type": "dataset",
            "namespace": NAMESPACE,
            "name": name,
        }
        assert body["programs"][f"job.{KEY_NAMESPACE}.{name}"]["entityId"]["name"] == name
        assert f"dataset.{KEY_NAMESPACE}.{name}.out" in body["data"]


def test_search_treats_wildcards_and_quotes_literally(hostile: TestClient) -> None:
    quoted = {n for n in HOSTILE if "'" in n}
    expected = {
        "%": {"100%_done", "%2F already encoded"},
        "_": {"100%_done", "under_score"},
        "'": quoted,
        "..\\": {"..\\..\\windows\\win.ini"},
    }
    for text, names in expected.items():
        response = hostile.get(
            "/api/v1/search", params={"q": text, "filter": "DATASET", "limit": 100}
        )
        assert response.status_code == 200, response.text
        found = {r["name"] for r in response.json()["results"]}
        assert found == names | {f"{n}.out" for n in names}, text


def test_traversal_names_do_not_reach_files(hostile: TestClient) -> None:
    for path in ("/..%2F..%2Fetc%2Fpasswd", "/assets/..%2F..%2F..%2Fpyproject.toml", "/%2e%2e/"):
        response = hostile.get(path)
        assert response.status_code == 404, (path, response.status_code)
        assert "root:" not in response.text
        assert "[project]" not in response.text
