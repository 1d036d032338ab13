"""Real producers' events (../shared/fixtures/openlineage) are accepted with their quirks and
give the lineage a user expects from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.readback import counts, dataset_flows, dataset_row, relations, run_row
from upstream.store import schema
from upstream.store.engine import Store

PG = "postgres://localhost:5432"


def post_file(client: TestClient, path: Path) -> None:
    response = client.post(
        "/api/v1/lineage", content=path.read_bytes(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 201, f"{path.name}: {response.text}"


def test_dbt_run_column_lineage_gives_the_real_graph(
    client: TestClient, store: Store, fixtures_dir: Path
) -> None:
    for path in sorted((fixtures_dir / "dbt-csv-to-postgres").glob("event_*.json")):
        post_file(client, path)
    db = f"{PG}/dbt_test.main"
    assert dataset_flows(store) == {
        (f"{db}.raw_orders", f"{db}.stg_orders"),
        (f"{db}.raw_customers", f"{db}.stg_customers"),
        (f"{db}.stg_orders", f"{db}.customer_analytics"),
        (f"{db}.stg_customers", f"{db}.customer_analytics"),
    }
    # START and COMPLETE of one model carry the same payload but are distinct events.
    assert counts(store)["events"] == 22


def test_listener_events_accumulate_run_io(
    client: TestClient, store: Store, fixtures_dir: Path
) -> None:
    for name in ("1.json", "2.json"):
        post_file(client, fixtures_dir / "marquez" / "open_lineage" / "listener" / name)
    run = json.loads((fixtures_dir / "marquez/open_lineage/listener/1.json").read_text())
    run_id = run["run"]["runId"]
    accesses = [r[2] for r in relations(store) if r[3] == run_id]
    assert (accesses.count("read"), accesses.count("write")) == (3, 2)
    assert run_row(store, run_id)["state"] == "COMPLETE"


def test_apples_story(client: TestClient, store: Store, fixtures_dir: Path) -> None:
    """Grandma's kitchen: the second filling used crab apples and sugar."""
    for path in sorted((fixtures_dir / "marquez" / "apples").glob("*.json")):
        post_file(client, path)
    flows = dataset_flows(store)
    assert ("backyard/crab.apples", "grandmas.kitchen/apples") in flows
    assert ("cupboard/sugar", "grandmas.kitchen/apple.filling") in flows
    assert ("grandmas.kitchen/apple.filling", "grandmas.kitchen/apple.pie") in flows


@pytest.mark.parametrize(
    ("name", "expected_time"),
    [
        # No offset: read as UTC (Marquez would use the server's local time).
        ("event_required_no_timezone.json", "2020-12-28 19:51:01.641499"),
        ("event_required_nanoseconds.json", "2020-12-28 19:51:01.641499"),
    ],
)
def test_time_quirks(
    client: TestClient, store: Store, fixtures_dir: Path, name: str, expected_time: str
) -> None:
    path = fixtures_dir / "marquez" / "open_lineage" / name
    post_file(client, path)
    with store.read() as conn:
        stored = conn.execute(sa.select(schema.events.c.event_time)).scalar_one()
    if stored.tzinfo is not None:
        assert stored.utcoffset().total_seconds() == 0
    assert stored.strftime("%Y-%m-%d %H:%M:%S.%f") == expected_time


def test_every_fixture_event_is_accepted(
    client: TestClient, store: Store, fixtures_dir: Path
) -> None:
    files = [
        p
        for p in sorted(fixtures_dir.rglob("*.json"))
        if p.parent.name
        not in {
            "LineageFacet",
            "ColumnLineageDatasetFacet",
            "ParentRunFacet",
            "SymlinksDatasetFacet",
            "SchemaDatasetFacet",
        }
        and p.name != "metadata.template.json"
    ]
    for path in files:
        post_file(client, path)
    food = json.loads((fixtures_dir / "marquez/food-delivery/metadata.json").read_text())
    assert len(food) == 26
    assert counts(store)["events"] >= 26
    # A dataset source name with a placeholder URI is stored as sent.
    assert dataset_row(store, "my-datasource-namespace", "instance.schema.input-1")
