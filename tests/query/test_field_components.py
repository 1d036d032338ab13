"""Components (issue 4 item 7): relations recorded with `component=` show it in the dataset
lineage's `components`, and `collapse=component` merges relations that differ only in it.
Recorded through the real recorder; both databases."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.field_scenarios import AppTransport
from upstream import Destination, FieldOperation, LineageRecorder, Source

WINDOW = {"start": "now-1h", "end": "now+1h", "levels": "1"}


def relations(client: TestClient, **params: Any) -> list[tuple[str, str, list[str], list[str]]]:
    response = client.get("/v3/namespaces/ns/datasets/D/lineage", params={**WINDOW, **params})
    assert response.status_code == 200, response.text
    return [
        (r["data"], r["program"], r["accesses"], r["components"])
        for r in response.json()["relations"]
    ]


def test_components_are_shown_and_collapse_merges_them(client: TestClient) -> None:
    """One run of ETL: its mapper reads S and writes D.a, its reducer reads S and writes D.b.
    Four relations, one per (dataset, access, component); collapsed by component, two."""
    source = Source("ns", "S")
    recorder = LineageRecorder(transport=AppTransport(client))
    with recorder.run("ns", "ETL") as run:
        run.record(
            Destination("ns", "D"),
            [FieldOperation("read", inputs=[source], outputs=["a"])],
            component="mapper",
        )
        run.record(
            Destination("ns", "D"),
            [
                FieldOperation("read", inputs=[source], outputs=["a"]),
                FieldOperation("sum", inputs=["a"], outputs=["b"]),
            ],
            component="reducer",
        )
    assert relations(client) == [
        ("dataset.ns.D", "job.ns.ETL", ["write"], ["mapper"]),
        ("dataset.ns.D", "job.ns.ETL", ["write"], ["reducer"]),
        ("dataset.ns.S", "job.ns.ETL", ["read"], ["mapper"]),
        ("dataset.ns.S", "job.ns.ETL", ["read"], ["reducer"]),
    ]
    assert relations(client, collapse="component") == [
        ("dataset.ns.D", "job.ns.ETL", ["write"], ["mapper", "reducer"]),
        ("dataset.ns.S", "job.ns.ETL", ["read"], ["mapper", "reducer"]),
    ]
    # Collapsing runs as well still keeps one relation per dataset and access.
    response = client.get(
        "/v3/namespaces/ns/datasets/D/lineage",
        params={**WINDOW, "collapse": ["component", "run"]},
    )
    runs = {r["data"]: r["runs"] for r in response.json()["relations"]}
    assert runs == {"dataset.ns.D": [str(run.run_id)], "dataset.ns.S": [str(run.run_id)]}


def test_a_recording_without_component_has_none(client: TestClient) -> None:
    record_plain(client)


def record_plain(client: TestClient) -> LineageRecorder:
    """A run of `plain` recorded without a component, and the walk that shows none."""
    recorder = LineageRecorder(transport=AppTransport(client))
    with recorder.run("ns", "plain") as run:
        run.record(
            Destination("ns", "D"),
            [FieldOperation("read", inputs=[Source("ns", "S")], outputs=["a"])],
        )
    assert relations(client) == [
        ("dataset.ns.D", "job.ns.plain", ["write"], []),
        ("dataset.ns.S", "job.ns.plain", ["read"], []),
    ]
    return recorder


def test_a_component_named_after_a_walk_is_shown_at_once(client: TestClient) -> None:
    """Whether a store names any component is worked out once per version of the graph
    index: a walk of a store that names none, then a run that names one, then the walk
    again shows it (a directed walk looks the components up)."""
    recorder = record_plain(client)
    assert relations(client, direction="upstream") == [
        ("dataset.ns.D", "job.ns.plain", ["write"], []),
        ("dataset.ns.S", "job.ns.plain", ["read"], []),
    ]
    with recorder.run("ns", "ETL") as run:
        run.record(
            Destination("ns", "D"),
            [FieldOperation("read", inputs=[Source("ns", "S")], outputs=["a"])],
            component="mapper",
        )
    assert relations(client, direction="upstream", collapse="run") == [
        ("dataset.ns.D", "job.ns.ETL", ["write"], ["mapper"]),
        ("dataset.ns.D", "job.ns.plain", ["write"], []),
        ("dataset.ns.S", "job.ns.ETL", ["read"], ["mapper"]),
        ("dataset.ns.S", "job.ns.plain", ["read"], []),
    ]
