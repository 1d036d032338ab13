"""Owners and tags from facets (design §3.3): OpenLineage's `ownership` (job, dataset) and
`tags` (dataset, job, run) facets become owners and tags next to the tags set through the API;
lineage answers carry owners with include=owners. Facets are shaped as the spec's
OwnershipDatasetFacet.json, OwnershipJobFacet.json and Tags{Dataset,Job,Run}Facet.json."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import PRODUCER, ds, run_event
from tests.query.test_dataset_lineage import WINDOW
from upstream.cli import app
from upstream.model.ownership import FacetTag, tag_name, tags_in

NS = "sales"
RUN = "44444444-dddd-4ddd-8ddd-444444444444"
FACETS = "https://openlineage.io/spec/facets"


def ownership(kind: str, *owners: dict[str, str]) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": f"{FACETS}/1-0-0/Ownership{kind}Facet.json#/$defs/Ownership{kind}Facet",
        "owners": list(owners),
    }


def tags(kind: str, *entries: dict[str, str]) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": f"{FACETS}/2-0-3/Tags{kind}Facet.json#/$defs/Tags{kind}Facet",
        "tags": list(entries),
    }


SCHEMA = {"fields": [{"name": "id", "type": "int"}, {"name": "email", "type": "text"}]}


def build_orders() -> dict[str, Any]:
    """`build_orders` reads `raw` and writes `orders`; the job, the output and the run say
    who owns them and how they are tagged."""
    return run_event(
        (NS, "build_orders"),
        run_id=RUN,
        inputs=[ds(NS, "raw")],
        outputs=[
            ds(
                NS,
                "orders",
                schema=SCHEMA,
                ownership=ownership(
                    "Dataset",
                    {"name": "team:sales-data", "type": "MAINTAINER"},
                    {"name": "user:alice"},
                ),
                tags=tags(
                    "Dataset",
                    {"key": "domain", "value": "sales", "source": "USER"},
                    {"key": "pii", "value": "true", "source": "DBT", "field": "email"},
                    {"key": "certified", "value": ""},
                ),
            )
        ],
        job_facets={
            "ownership": ownership("Job", {"name": "team:platform", "type": "TECHNICAL_OWNER"}),
            "tags": tags("Job", {"key": "schedule", "value": "daily", "source": "AIRFLOW"}),
        },
        run_facets={
            "tags": tags(
                "Run",
                {"key": "openlineage_client_version", "value": "1.40.0", "source": "CLIENT"},
            )
        },
    )


def ok(response: Any) -> Any:
    assert response.status_code in (200, 201), response.text
    return response.json() if response.content else None


@pytest.fixture
def orders(client: TestClient) -> TestClient:
    ok(client.post("/api/v1/lineage", json=build_orders()))
    return client


def test_dataset_tags_from_the_facet_sit_next_to_tags_set_through_the_api(
    orders: TestClient,
) -> None:
    ok(orders.put("/api/v1/tags/reviewed", json={}))
    ok(orders.post(f"/api/v1/namespaces/{NS}/datasets/orders/tags/reviewed"))
    got = ok(orders.get(f"/api/v1/namespaces/{NS}/datasets/orders"))
    assert got["tags"] == ["certified", "domain:sales", "reviewed"]
    assert [(f["name"], f["tags"]) for f in got["fields"]] == [("id", []), ("email", ["pii"])]
    assert got["owners"] == [
        {"name": "team:sales-data", "type": "MAINTAINER"},
        {"name": "user:alice", "type": None},
    ]
    assert ok(orders.get(f"/api/v1/namespaces/{NS}/datasets/raw"))["owners"] == []


def test_job_and_run_tags_and_job_owners(orders: TestClient) -> None:
    job = ok(orders.get(f"/api/v1/namespaces/{NS}/jobs/build_orders"))
    assert job["tags"] == ["schedule:daily"]
    assert job["owners"] == [{"name": "team:platform", "type": "TECHNICAL_OWNER"}]
    run = ok(orders.get(f"/api/v1/jobs/runs/{RUN}"))
    assert run["tags"] == ["openlineage_client_version:1.40.0"]


def test_a_later_facet_replaces_the_owners(orders: TestClient) -> None:
    again = run_event(
        (NS, "build_orders"),
        outputs=[ds(NS, "orders", ownership=ownership("Dataset", {"name": "user:carol"}))],
    )
    ok(orders.post("/api/v1/lineage", json=again))
    got = ok(orders.get(f"/api/v1/namespaces/{NS}/datasets/orders"))
    assert got["owners"] == [{"name": "user:carol", "type": None}]


def test_lineage_carries_owners_when_asked(orders: TestClient) -> None:
    path = f"/v3/namespaces/{NS}/datasets/orders/lineage"
    plain = ok(orders.get(path, params=WINDOW))
    assert all("owners" not in entry for entry in plain["data"].values())
    answer = ok(orders.get(path, params={**WINDOW, "include": "owners"}))
    assert answer["data"] == {
        f"dataset.{NS}.orders": {
            "entityId": {"type": "dataset", "namespace": NS, "name": "orders"},
            "owners": [
                {"name": "team:sales-data", "type": "MAINTAINER"},
                {"name": "user:alice", "type": None},
            ],
        },
        f"dataset.{NS}.raw": {
            "entityId": {"type": "dataset", "namespace": NS, "name": "raw"},
            "owners": [],
        },
    }
    assert answer["programs"] == {
        f"job.{NS}.build_orders": {
            "entityId": {"type": "job", "namespace": NS, "name": "build_orders"},
            "owners": [{"name": "team:platform", "type": "TECHNICAL_OWNER"}],
        }
    }
    assert answer["relations"] == plain["relations"]
    around_job = ok(
        orders.get(
            f"/v3/namespaces/{NS}/jobs/build_orders/lineage", params={**WINDOW, "include": "owners"}
        )
    )
    assert around_job["programs"][f"job.{NS}.build_orders"]["owners"] == [
        {"name": "team:platform", "type": "TECHNICAL_OWNER"}
    ]
    assert around_job["data"][f"dataset.{NS}.orders"]["owners"][1] == {
        "name": "user:alice",
        "type": None,
    }


def test_include_names_only_what_an_answer_can_carry(orders: TestClient) -> None:
    response = orders.get(
        f"/v3/namespaces/{NS}/datasets/orders/lineage", params={**WINDOW, "include": "owner"}
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["path"] == "include"


def test_what_changed_in_lineage_refuses_include(orders: TestClient) -> None:
    """The diff compares relations; it carries no owners, so asking for them is an error."""
    response = orders.get(
        f"/v3/namespaces/{NS}/datasets/orders/lineage/diff", params={"include": "owners"}
    )
    assert response.status_code == 400
    assert response.json()["errors"] == [
        {"path": "include", "message": "applies to lineage, not to what changed in it"}
    ]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (
            lambda e: e["outputs"][0]["facets"]["ownership"]["owners"].append({"type": "X"}),
            "outputs[0].facets.ownership.owners[2].name",
        ),
        (
            lambda e: e["job"]["facets"]["ownership"].update(owners="team:platform"),
            "job.facets.ownership.owners",
        ),
        (
            lambda e: e["job"]["facets"]["tags"]["tags"].append({"key": "x"}),
            "job.facets.tags.tags[1].value",
        ),
        (
            lambda e: e["run"]["facets"]["tags"]["tags"][0].update(value=3),
            "run.facets.tags.tags[0].value",
        ),
        (
            lambda e: e["outputs"][0]["facets"]["tags"]["tags"][0].update(key=""),
            "outputs[0].facets.tags.tags[0].key",
        ),
        (
            lambda e: e["inputs"][0].update(facets={"tags": ["pii"]}),
            "inputs[0].facets.tags",
        ),
    ],
)
def test_a_malformed_owner_or_tag_facet_is_refused_naming_its_path(
    client: TestClient, change: Any, path: str
) -> None:
    event = build_orders()
    change(event)
    response = client.post("/api/v1/lineage", json=event)
    assert response.status_code == 422, response.text
    assert [e["path"] for e in response.json()["errors"]] == [path]
    assert client.get(f"/api/v1/namespaces/{NS}/jobs/build_orders").status_code == 404


def test_the_cli_shows_owners(db_url: str, orders: TestClient) -> None:
    window = ["--start", WINDOW["start"], "--end", WINDOW["end"]]
    args = ["lineage", NS, "orders", *window, "--owners", "--db", db_url]
    as_json = CliRunner().invoke(app, [*args, "-f", "json"])
    assert as_json.exit_code == 0, as_json.output
    programs = json.loads(as_json.stdout)["programs"]
    assert programs[f"job.{NS}.build_orders"]["owners"][0]["name"] == "team:platform"
    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "owners: team:platform" in table.stdout
    assert "owners: team:sales-data, user:alice" in table.stdout


@pytest.mark.parametrize(
    ("key", "value", "name"),
    [
        ("pii", "true", "pii"),
        ("pii", "TRUE", "pii"),
        ("certified", "", "certified"),
        ("env", "production", "env:production"),
        ("owner", "@user1", "owner:@user1"),
        ("flag", "false", "flag:false"),
    ],
)
def test_the_name_of_a_key_value_tag(key: str, value: str, name: str) -> None:
    assert tag_name(key, value) == name


def test_tags_read_from_stored_facets_are_lenient_and_each_once() -> None:
    facet = tags("Dataset", {"key": "a", "value": "1"}, {"key": "a", "value": "1"})
    assert tags_in({"tags": facet}) == [FacetTag("a:1")]
    assert tags_in({"tags": {"tags": [{"key": "a"}]}}) == []
    assert tags_in({}) == []
