"""Keys of datasets, jobs and workflows in dataset-lineage answers (design §4.2): namespaces
escaped, names verbatim, so names that split differently at their dots never share a key."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, iso, run_event
from upstream.model.keys import entity_key, parse_entity_key

WINDOW = {"start": "0", "end": iso(BASE_TIME.replace(year=BASE_TIME.year + 1))}


def test_keys_escape_the_namespace_and_keep_the_name() -> None:
    assert entity_key("dataset", "a.b", "c") == "dataset.a%2Eb.c"
    assert entity_key("dataset", "a", "b.c") == "dataset.a.b.c"
    assert entity_key("job", "100%.x", "n%2E") == "job.100%25%2Ex.n%2E"
    assert (
        entity_key("workflow", "airflow://host:8080", "dag") == "workflow.airflow://host:8080.dag"
    )


def test_parsing_a_key_gives_back_what_made_it() -> None:
    for kind, namespace, name in [
        ("dataset", "a.b", "c"),
        ("dataset", "a", "b.c"),
        ("job", "%2E.%25", "x.%2E.y"),
        ("workflow", "", ""),
    ]:
        assert parse_entity_key(entity_key(kind, namespace, name)) == (kind, namespace, name)  # type: ignore[arg-type]


def test_names_split_differently_are_two_nodes_collapsed_or_not(client: TestClient) -> None:
    """One job reads (`a.b`, `c`) and (`a`, `b.c`): with a plain join both would be
    `dataset.a.b.c`, and collapse would merge them into one relation."""
    event = run_event(
        ("a", "load"),
        inputs=[ds("a.b", "c"), ds("a", "b.c")],
        outputs=[ds("out", "t")],
    )
    assert client.post("/api/v1/lineage", json=event).status_code == 201
    for collapse in ([], ["run"], ["run", "access", "component"]):
        response = client.get(
            "/v3/namespaces/out/datasets/t/lineage",
            params={**WINDOW, "direction": "upstream", "collapse": collapse},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert sorted(r["data"] for r in body["relations"]) == [
            "dataset.a%2Eb.c",
            "dataset.a.b.c",
            "dataset.out.t",
        ]
        assert body["data"]["dataset.a%2Eb.c"]["entityId"] == {
            "type": "dataset",
            "namespace": "a.b",
            "name": "c",
        }
        assert body["data"]["dataset.a.b.c"]["entityId"]["namespace"] == "a"
