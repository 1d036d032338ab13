"""The estate as a map (design §4.7): `GET /v3/lineage/graph?rollup=hierarchy&level=N` groups
datasets by their level-N container — the namespace, then the OpenLineage `hierarchy` facet's
levels (shaped as the spec's HierarchyDatasetFacet.json), else the dotted name's parts — with
dataset counts and the flows between groups, drilled down with `within`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import PRODUCER, ds, run_event
from upstream.cli import app
from upstream.model.hierarchy import containers, group_key, parse_group_key

PG = "postgres://db:5432"
LAKE = "s3://lake"
PG_KEY = "postgres:%2F%2Fdb:5432"
LAKE_KEY = "s3:%2F%2Flake"


def hierarchy(*levels: tuple[str, str]) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/HierarchyDatasetFacet.json"
        "#/$defs/HierarchyDatasetFacet",
        "hierarchy": [{"type": kind, "name": name} for kind, name in levels],
    }


EVENTS_FACET = hierarchy(("DATABASE", "lakehouse"), ("SCHEMA", "bronze"), ("TABLE", "events"))


@pytest.fixture
def estate(client: TestClient) -> TestClient:
    """lake events -> raw_orders (staging) -> orders -> customers (public) -> t_flat."""
    events = [
        run_event(
            ("jobs", "j1"),
            inputs=[ds(LAKE, "events", hierarchy=EVENTS_FACET)],
            outputs=[ds(PG, "analytics.staging.raw_orders")],
        ),
        run_event(
            ("jobs", "j2"),
            inputs=[ds(PG, "analytics.staging.raw_orders")],
            outputs=[ds(PG, "analytics.public.orders")],
        ),
        run_event(
            ("jobs", "j3"),
            inputs=[ds(PG, "analytics.public.orders")],
            outputs=[ds(PG, "analytics.public.customers")],
        ),
        run_event(
            ("jobs", "j4"),
            inputs=[ds(PG, "analytics.public.customers")],
            outputs=[ds(PG, "t_flat")],
        ),
    ]
    assert client.post("/api/v1/lineage", json=events).status_code == 201
    return client


def mapped(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get("/v3/lineage/graph", params={"rollup": "hierarchy", **params})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def group(key: str, path: list[str], datasets: int, within: int, deeper: bool) -> dict[str, Any]:
    return {
        "key": key,
        "containers": path,
        "datasets": datasets,
        "flowsWithin": within,
        "deeper": deeper,
    }


def test_level_one_groups_by_namespace(estate: TestClient) -> None:
    assert mapped(estate, level=1) == {
        "level": 1,
        "within": [],
        "depth": 3,
        "groups": [
            group(PG_KEY, [PG], 4, 3, True),
            group(LAKE_KEY, [LAKE], 1, 0, True),
        ],
        "edges": [{"source": LAKE_KEY, "target": PG_KEY, "flows": 1}],
    }


def test_level_two_uses_the_facet_and_the_dotted_names(estate: TestClient) -> None:
    answer = mapped(estate, level=2)
    assert answer["groups"] == [
        group(PG_KEY, [PG], 1, 0, False),
        group(f"{PG_KEY}/analytics", [PG, "analytics"], 3, 2, True),
        group(f"{LAKE_KEY}/lakehouse", [LAKE, "lakehouse"], 1, 0, True),
    ]
    assert answer["edges"] == [
        {"source": f"{PG_KEY}/analytics", "target": PG_KEY, "flows": 1},
        {"source": f"{LAKE_KEY}/lakehouse", "target": f"{PG_KEY}/analytics", "flows": 1},
    ]


def test_a_group_drills_down(estate: TestClient) -> None:
    answer = mapped(estate, level=3, within=f"{PG_KEY}/analytics")
    assert answer["within"] == [PG, "analytics"]
    assert answer["groups"] == [
        group(f"{PG_KEY}/analytics/public", [PG, "analytics", "public"], 2, 1, False),
        group(f"{PG_KEY}/analytics/staging", [PG, "analytics", "staging"], 1, 0, False),
    ]
    assert answer["edges"] == [
        {
            "source": f"{PG_KEY}/analytics/staging",
            "target": f"{PG_KEY}/analytics/public",
            "flows": 1,
        }
    ]


@pytest.mark.parametrize(
    ("params", "where", "message"),
    [
        ({"rollup": "hierarchy", "level": 4}, "level", "the deepest container level is 3"),
        (
            {"rollup": "hierarchy", "level": 2, "within": f"{PG_KEY}/analytics"},
            "level",
            "must be deeper",
        ),
        ({"rollup": "hierarchy", "level": 0}, "level", ""),
        ({"rollup": "hierarchy"}, "level", "needs a level"),
        ({"level": 2}, "level", "only applies with rollup=hierarchy"),
        ({"rollup": "namespace", "level": 1}, "rollup", ""),
    ],
)
def test_bad_levels_are_400(
    estate: TestClient, params: dict[str, Any], where: str, message: str
) -> None:
    response = estate.get("/v3/lineage/graph", params=params)
    assert response.status_code == 400, response.text
    error = response.json()["errors"][0]
    assert error["path"] == where
    assert message in error["message"]


@pytest.mark.parametrize(
    ("facet", "path"),
    [
        ({"hierarchy": [{"type": "DATABASE"}]}, "outputs[0].facets.hierarchy.hierarchy[0].name"),
        ({"hierarchy": "db.schema"}, "outputs[0].facets.hierarchy.hierarchy"),
        ({}, "outputs[0].facets.hierarchy.hierarchy"),
    ],
)
def test_a_malformed_hierarchy_is_refused_naming_its_path(
    client: TestClient, facet: dict[str, Any], path: str
) -> None:
    event = run_event(("jobs", "j"), outputs=[ds(PG, "x", hierarchy=facet)])
    response = client.post("/api/v1/lineage", json=event)
    assert response.status_code == 422, response.text
    assert [e["path"] for e in response.json()["errors"]] == [path]


def test_the_cli_prints_the_map(db_url: str, estate: TestClient) -> None:
    result = CliRunner().invoke(app, ["map", "--level", "2", "--db", db_url, "-f", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == mapped(estate, level=2)
    table = CliRunner().invoke(app, ["map", "--level", "2", "--db", db_url], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert f"{PG_KEY}/analytics" in table.stdout


def test_containers_rules() -> None:
    assert containers("ns", "a.b.c", {}) == ("ns", "a", "b")
    assert containers("ns", "plain", {}) == ("ns",)
    assert containers("ns", "x", {"hierarchy": EVENTS_FACET}) == ("ns", "lakehouse", "bronze")
    assert containers("ns", "a.b", {"hierarchy": {"hierarchy": "bad"}}) == ("ns", "a")
    path = ("s3://b/%x", "a/b")
    assert parse_group_key(group_key(path)) == path
    assert group_key(path) == "s3:%2F%2Fb%2F%25x/a%2Fb"
