"""The impact report (design §4.6): every dataset and field downstream of a dataset or a field
within `levels`, with hops, the jobs in between and their owners, owners, and the latest run
that wrote each dataset, as JSON and CSV; its datasets are the downstream walk's."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import BASE_TIME, PRODUCER, column_lineage, ds, hours, run_event
from tests.query.test_dataset_lineage import DAY, WINDOW
from upstream.api.app import create_app
from upstream.cli import app
from upstream.query.impact import dataset_impact
from upstream.query.lineage_params import LineageParams
from upstream.settings import Settings
from upstream.store.engine import Store

NS = "imp"
INGEST = "aaaaaaaa-0000-4000-8000-000000000001"
MODEL = "aaaaaaaa-0000-4000-8000-000000000002"
MODEL_AGAIN = "aaaaaaaa-0000-4000-8000-000000000003"
REPORT = "aaaaaaaa-0000-4000-8000-000000000004"
SCHEMA = {"fields": [{"name": "id", "type": "int"}, {"name": "email", "type": "text"}]}


def owned(*names: str) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/OwnershipDatasetFacet.json",
        "owners": [{"name": n} for n in names],
    }


def estate() -> list[dict[str, Any]]:
    """landing -ingest-> staged -model-> orders -report-> dash, fields id and email carried
    to staged and email on to orders; `model` ran twice, the second run failed; an unrelated
    `audit` job reads `other`."""
    staged_lineage = column_lineage(
        {"id": [(NS, "landing", "id")], "email": [(NS, "landing", "email")]}
    )
    model_output = ds(
        NS,
        "orders",
        ownership=owned("user:alice"),
        columnLineage=column_lineage({"email": [(NS, "staged", "email")]}),
    )
    model_job = {
        "ownership": {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/OwnershipJobFacet.json",
            "owners": [{"name": "team:modeling", "type": "MAINTAINER"}],
        }
    }
    return [
        run_event(
            (NS, "ingest"),
            run_id=INGEST,
            inputs=[ds(NS, "landing", schema=SCHEMA)],
            outputs=[ds(NS, "staged", columnLineage=staged_lineage)],
        ),
        run_event(
            (NS, "model"),
            run_id=MODEL,
            time=BASE_TIME + hours(1),
            inputs=[ds(NS, "staged")],
            outputs=[model_output],
            job_facets=model_job,
        ),
        run_event(
            (NS, "model"),
            run_id=MODEL_AGAIN,
            event_type="FAIL",
            time=BASE_TIME + hours(3),
            inputs=[ds(NS, "staged")],
            outputs=[model_output],
            job_facets=model_job,
        ),
        run_event(
            (NS, "report"),
            run_id=REPORT,
            time=BASE_TIME + hours(2),
            inputs=[ds(NS, "orders")],
            outputs=[ds(NS, "dash")],
        ),
        run_event((NS, "audit"), inputs=[ds(NS, "other")], outputs=[ds(NS, "audit_log")]),
    ]


@pytest.fixture
def seeded(client: TestClient) -> TestClient:
    response = client.post("/api/v1/lineage", json=estate())
    assert response.status_code == 201, response.text
    return client


def impact(client: TestClient, path: str = "landing", **params: Any) -> dict[str, Any]:
    response = client.get(
        f"/v3/namespaces/{NS}/datasets/{path}/impact", params={**WINDOW, **params}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def brief(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Each row as (hops, kind, name, field, job names, owner names, latest run, state)."""
    return [
        (
            r["hops"],
            r["kind"],
            r["name"],
            r["field"],
            [j["name"] for j in r["jobs"]],
            [o["name"] for o in r["owners"]],
            r["latestRun"]["runId"] if r["latestRun"] else None,
            r["latestRun"]["state"] if r["latestRun"] else None,
        )
        for r in rows
    ]


STAGED = (["ingest"], [], INGEST, "COMPLETE")
ORDERS = (["model"], ["user:alice"], MODEL_AGAIN, "FAIL")
DASH = (["report"], [], REPORT, "COMPLETE")


def test_a_datasets_impact_lists_datasets_and_fields_nearest_first(seeded: TestClient) -> None:
    answer = impact(seeded)
    assert brief(answer["rows"]) == [
        (1, "dataset", "staged", None, *STAGED),
        (1, "field", "staged", "email", *STAGED),
        (1, "field", "staged", "id", *STAGED),
        (2, "dataset", "orders", None, *ORDERS),
        (2, "field", "orders", "email", *ORDERS),
        (3, "dataset", "dash", None, *DASH),
    ]
    orders = answer["rows"][3]
    assert orders["jobs"] == [
        {
            "namespace": NS,
            "name": "model",
            "owners": [{"name": "team:modeling", "type": "MAINTAINER"}],
        }
    ]
    assert (answer["dataset"], answer["field"], answer["levels"]) == (
        {"namespace": NS, "name": "landing"},
        None,
        10,
    )
    assert "truncated" not in answer


def test_levels_bound_the_report(seeded: TestClient) -> None:
    assert [(r["hops"], r["name"], r["field"]) for r in impact(seeded, levels=1)["rows"]] == [
        (1, "staged", None),
        (1, "staged", "email"),
        (1, "staged", "id"),
    ]


def test_the_datasets_are_the_downstream_walks(seeded: TestClient) -> None:
    walk = seeded.get(
        f"/v3/namespaces/{NS}/datasets/landing/lineage",
        params={**WINDOW, "direction": "downstream"},
    ).json()
    walked = {e["entityId"]["name"] for e in walk["data"].values()} - {"landing"}
    rows = impact(seeded)["rows"]
    assert (
        {r["name"] for r in rows if r["kind"] == "dataset"}
        == walked
        == {
            "staged",
            "orders",
            "dash",
        }
    )


def test_a_fields_impact(seeded: TestClient) -> None:
    answer = impact(seeded, "landing/fields/email")
    assert brief(answer["rows"]) == [
        (1, "dataset", "staged", None, *STAGED),
        (1, "field", "staged", "email", *STAGED),
        (2, "dataset", "orders", None, *ORDERS),
        (2, "field", "orders", "email", *ORDERS),
    ]
    assert answer["field"] == "email"


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize(
    ("params", "headers"), [({"format": "csv"}, {}), ({}, {"accept": "text/csv"})]
)
def test_the_report_as_csv(
    seeded: TestClient, params: dict[str, str], headers: dict[str, str]
) -> None:
    response = seeded.get(
        f"/v3/namespaces/{NS}/datasets/landing/impact",
        params={**WINDOW, **params},
        headers=headers,
    )
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    rows = csv_rows(response.text)
    assert [(r["hops"], r["kind"], r["name"], r["field"]) for r in rows] == [
        ("1", "dataset", "staged", ""),
        ("1", "field", "staged", "email"),
        ("1", "field", "staged", "id"),
        ("2", "dataset", "orders", ""),
        ("2", "field", "orders", "email"),
        ("3", "dataset", "dash", ""),
    ]
    assert rows[3] == {
        "kind": "dataset",
        "namespace": NS,
        "name": "orders",
        "field": "",
        "hops": "2",
        "jobs": f"{NS}/model",
        "owners": "user:alice",
        "job_owners": "team:modeling",
        "latest_run": MODEL_AGAIN,
        "latest_run_state": "FAIL",
        "latest_run_ended_at": "2026-11-01T15:00:00Z",
    }


def test_csv_quotes_names_with_commas(client: TestClient) -> None:
    event = run_event((NS, "j"), inputs=[ds(NS, "a")], outputs=[ds(NS, 'b,"c"')])
    assert client.post("/api/v1/lineage", json=event).status_code == 201
    response = client.get(
        f"/v3/namespaces/{NS}/datasets/a/impact", params={**WINDOW, "format": "csv"}
    )
    assert response.text.splitlines()[1].startswith('dataset,imp,"b,""c""",,1,imp/j')
    assert csv_rows(response.text)[0]["name"] == 'b,"c"'


@pytest.mark.parametrize(
    ("path", "params", "status", "where"),
    [
        ("landing", {"levels": "0"}, 400, "levels"),
        ("landing", {"format": "xml"}, 400, "format"),
        ("nowhere", {}, 404, None),
        ("landing/fields/nofield", {}, 404, None),
    ],
)
def test_bad_requests(
    seeded: TestClient, path: str, params: dict[str, str], status: int, where: str | None
) -> None:
    response = seeded.get(f"/v3/namespaces/{NS}/datasets/{path}/impact", params=params)
    assert response.status_code == status, response.text
    if where is not None:
        assert response.json()["errors"][0]["path"] == where


@pytest.fixture
def capped(db_url: str) -> Iterator[TestClient]:
    settings = Settings(db_url=db_url, max_lineage_nodes=4)
    with TestClient(create_app(settings, migrate=False)) as test_client:
        assert test_client.post("/api/v1/lineage", json=estate()).status_code == 201
        yield test_client


def test_the_report_is_capped(capped: TestClient) -> None:
    answer = impact(capped)
    assert answer["truncated"] is True
    names = {(r["name"], r["field"]) for r in answer["rows"]}
    assert ("dash", None) not in names
    assert ("staged", None) in names


def test_the_cli_writes_the_report(db_url: str, seeded: TestClient) -> None:
    window = ["--start", WINDOW["start"], "--end", WINDOW["end"]]
    args = ["impact", NS, "landing", *window, "--db", db_url]
    as_csv = CliRunner().invoke(app, [*args, "-f", "csv"])
    assert as_csv.exit_code == 0, as_csv.output
    api = seeded.get(
        f"/v3/namespaces/{NS}/datasets/landing/impact", params={**WINDOW, "format": "csv"}
    )
    assert as_csv.stdout == api.text.replace("\r\n", "\n")
    as_json = CliRunner().invoke(app, [*args, "--field", "email", "-f", "json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout) == impact(seeded, "landing/fields/email")
    table = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "team:modeling" in table.stdout
    assert "6 rows" in table.stdout


def test_the_latest_run_is_the_one_that_started_last_to_the_microsecond(
    client: TestClient,
) -> None:
    """Two runs started within one second: the one that started half a second later is the
    latest, though its start written as text (`…00.500000Z`) sorts before the other's
    (`…00Z`)."""
    on_the_second = "bbbbbbbb-0000-4000-8000-000000000001"
    half_a_second_later = "bbbbbbbb-0000-4000-8000-000000000002"
    events = []
    for run_id, start in ((half_a_second_later, 0.5), (on_the_second, 0.0)):
        started = BASE_TIME + hours(1) + timedelta(seconds=start)
        for event_type, time in (("START", started), ("COMPLETE", started + hours(1))):
            events.append(
                run_event(
                    (NS, "load"),
                    run_id=run_id,
                    event_type=event_type,
                    time=time,
                    inputs=[ds(NS, "source")],
                    outputs=[ds(NS, "target")],
                )
            )
    assert client.post("/api/v1/lineage", json=events).status_code == 201
    [row] = impact(client, "source")["rows"]
    assert row["latestRun"]["runId"] == half_a_second_later
    assert row["latestRun"]["startedAt"] == "2026-11-01T13:00:00.500000Z"


def test_runs_started_at_the_same_instant_fall_to_the_greater_id(client: TestClient) -> None:
    """`load` wrote `target` in two runs started at the same microsecond (posted greater id
    first): the greater id is the latest; `copy` wrote `copied` from `target` in one run
    started later than both, which is `copied`'s latest and not `target`'s."""
    lesser = "cccccccc-0000-4000-8000-000000000001"
    greater = "cccccccc-0000-4000-8000-000000000002"
    copy_run = "cccccccc-0000-4000-8000-000000000003"
    started = BASE_TIME + hours(1)
    runs = (
        ("load", greater, started, "source", "target"),
        ("load", lesser, started, "source", "target"),
        ("copy", copy_run, started + hours(2), "target", "copied"),
    )
    events = [
        run_event(
            (NS, job),
            run_id=run_id,
            event_type=event_type,
            time=time,
            inputs=[ds(NS, source)],
            outputs=[ds(NS, target)],
        )
        for job, run_id, start, source, target in runs
        for event_type, time in (("START", start), ("COMPLETE", start + hours(1)))
    ]
    assert client.post("/api/v1/lineage", json=events).status_code == 201
    rows = impact(client, "source")["rows"]
    assert [(r["hops"], r["name"], r["latestRun"]["runId"]) for r in rows] == [
        (1, "target", greater),
        (2, "copied", copy_run),
    ]


def test_a_report_asked_again_reads_no_names(
    seeded: TestClient, statements: tuple[Store, list[str]]
) -> None:
    """The datasets' and jobs' names are those the process keeps (`graph_index.names`): read
    by the first report that shows them, by no statement after."""
    store, found = statements
    params = LineageParams(start=BASE_TIME - DAY, end=BASE_TIME + DAY, levels=5)
    for _ in range(2):
        found.clear()
        with store.read() as conn:
            report = dataset_impact(conn, NS, "landing", params, max_nodes=100, max_relations=100)
    assert [s for s in found if ".namespace" in s] == []
    assert [(r["name"], [j["name"] for j in r["jobs"]]) for r in report["rows"][:3]] == [
        ("staged", ["ingest"]),
        ("staged", ["ingest"]),
        ("staged", ["ingest"]),
    ]
