"""`upstream lineage`, `field-lineage` and `export` straight against a database: the same
answers as the API (the same services), drawn as tables, JSON, DOT and Mermaid."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import dataset_entry, dataset_input, ds, lineage_facet, run_event
from tests.cli.test_render import assert_valid_flowchart
from tests.conftest import system_program
from upstream.cli import app
from upstream.model.errors import NotFound

runner = CliRunner()
WAREHOUSE = "postgresql://warehouse"
WINDOW = ["--start", "2026-10-31T00:00:00Z", "--end", "2026-11-02T00:00:00Z"]


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def warehouse(client: TestClient) -> None:
    """Seed 003's build_summaries (2 explicit edges from a lineage facet, not the product of
    2 inputs x 2 outputs), then `report` reading customer_summary into `dash` (no facet: the
    inferred product of its 1 input and 1 output)."""
    summaries = run_event(
        ("https://example.com/jobs", "build_summaries"),
        inputs=[ds(WAREHOUSE, "raw.customers"), ds(WAREHOUSE, "raw.orders")],
        outputs=[
            ds(WAREHOUSE, "analytics.customer_summary"),
            ds(WAREHOUSE, "analytics.order_summary"),
        ],
        job_facets=lineage_facet(
            dataset_entry(
                WAREHOUSE, "analytics.customer_summary", [dataset_input(WAREHOUSE, "raw.customers")]
            ),
            dataset_entry(
                WAREHOUSE, "analytics.order_summary", [dataset_input(WAREHOUSE, "raw.orders")]
            ),
        ),
    )
    report = run_event(
        ("bi", "report"),
        inputs=[ds(WAREHOUSE, "analytics.customer_summary")],
        outputs=[ds("bi", "dash")],
    )
    response = client.post("/api/v1/lineage", json=[summaries, report])
    assert response.status_code == 201, response.text


def own_lines(stderr: str) -> list[str]:
    """stderr without JSON log lines: an app built in the same test process configures
    logging, and then the libraries' INFO records (alembic, httpx) reach stderr too."""
    return [line for line in stderr.splitlines() if not line.startswith('{"time"')]


def relations(response: dict[str, Any]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(r["data"], r["program"], tuple(r["accesses"])) for r in response["relations"]}


def test_lineage_as_json_is_the_api_answer(
    db_url: str, client: TestClient, warehouse: None
) -> None:
    result = invoke(
        "lineage", WAREHOUSE, "analytics.customer_summary", *WINDOW, "--db", db_url, "-f", "json"
    )
    assert result.exit_code == 0, result.output
    api = client.get(
        "/v3/namespaces/postgresql%3A%2F%2Fwarehouse/datasets/analytics.customer_summary/lineage",
        params={"start": WINDOW[1], "end": WINDOW[3]},
    )
    assert json.loads(result.stdout) == api.json()


def test_upstream_lineage_follows_the_lineage_facet(db_url: str, warehouse: None) -> None:
    result = invoke(
        "lineage",
        WAREHOUSE,
        "analytics.customer_summary",
        "--direction",
        "upstream",
        *WINDOW,
        "--db",
        db_url,
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    job = "job.https://example%2Ecom/jobs.build_summaries"
    assert relations(json.loads(result.stdout)) == {
        (f"dataset.{WAREHOUSE}.raw.customers", job, ("read",)),
        (f"dataset.{WAREHOUSE}.analytics.customer_summary", job, ("write",)),
    }


def test_collapse_and_levels_reach_the_service(db_url: str, warehouse: None) -> None:
    result = invoke(
        "lineage",
        "bi",
        "dash",
        "--levels",
        "1",
        "--collapse",
        "run",
        "--collapse",
        "access",
        *WINDOW,
        "--db",
        db_url,
        "-f",
        "json",
    )
    assert result.exit_code == 0, result.output
    assert relations(json.loads(result.stdout)) == {
        ("dataset.bi.dash", "job.bi.report", ("write",)),
        (f"dataset.{WAREHOUSE}.analytics.customer_summary", "job.bi.report", ("read",)),
    }


def test_lineage_table_dot_and_mermaid(db_url: str, warehouse: None, tmp_path: Path) -> None:
    common = ["lineage", WAREHOUSE, "analytics.customer_summary", *WINDOW, "--db", db_url]
    table = invoke(*common)
    assert table.exit_code == 0, table.output
    assert "Lineage of postgresql://warehouse / analytics.customer_summary" in table.stdout
    assert "build_summaries" in table.stdout
    assert "6 relations, 5 datasets, 2 programs" in table.stdout

    dot = invoke(*common, "--format", "dot")
    assert dot.exit_code == 0
    assert dot.stdout.count(" -> ") == 6
    graphviz = system_program("dot")
    svg = subprocess.run(
        [graphviz, "-Tsvg"], input=dot.stdout, capture_output=True, text=True, check=False
    )
    assert svg.returncode == 0, svg.stderr
    assert "analytics.customer_summary" in svg.stdout

    mermaid = invoke(*common, "--format", "mermaid")
    assert mermaid.exit_code == 0
    labels = assert_valid_flowchart(mermaid.stdout)
    assert "raw.orders<br/>postgresql://warehouse" in labels


def test_lineage_failures_are_one_line(db_url: str, warehouse: None, tmp_path: Path) -> None:
    unknown = invoke("lineage", WAREHOUSE, "no.such.table", "--db", db_url)
    assert unknown.exit_code == 1
    assert own_lines(unknown.stderr) == [
        "error: dataset 'no.such.table' not found in namespace 'postgresql://warehouse'"
    ]

    garbled = invoke("lineage", WAREHOUSE, "raw.orders", "--start", "yesterday", "--db", db_url)
    assert garbled.exit_code == 2
    assert own_lines(garbled.stderr)[0].startswith("error: start: 'yesterday' is not a time")

    inverted = invoke(
        "lineage", WAREHOUSE, "raw.orders", "--start", "now", "--end", "now-1d", "--db", db_url
    )
    assert inverted.exit_code == 2
    assert "start" in inverted.stderr

    for bad in (
        ["--levels", "0"],
        ["--direction", "sideways"],
        ["--collapse", "job"],
        ["-f", "png"],
    ):
        assert invoke("lineage", WAREHOUSE, "raw.orders", *bad, "--db", db_url).exit_code == 2

    missing = invoke("lineage", "a", "b", "--db", f"sqlite:///{tmp_path / 'none.db'}")
    assert missing.exit_code == 1
    assert own_lines(missing.stderr)[0].startswith("error: no database at ")
    assert not (tmp_path / "none.db").exists()


def test_debug_shows_the_traceback(db_url: str, warehouse: None) -> None:
    result = invoke("--debug", "lineage", WAREHOUSE, "no.such.table", "--db", db_url)
    assert result.exit_code == 1
    assert isinstance(result.exception, NotFound)
    assert not [line for line in own_lines(result.stderr) if line.startswith("error:")]


def test_export_whole_graph_has_the_real_flows_only(
    db_url: str, warehouse: None, tmp_path: Path
) -> None:
    result = invoke("export", "--db", db_url)
    assert result.exit_code == 0, result.output
    graph = json.loads(result.stdout)
    summaries = "job.https://example%2Ecom/jobs.build_summaries"
    assert [
        (f["source"], f["target"], f["program"], f["runs"], f["inferred"]) for f in graph["flows"]
    ] == [
        (
            f"dataset.{WAREHOUSE}.analytics.customer_summary",
            "dataset.bi.dash",
            "job.bi.report",
            1,
            True,
        ),
        (
            f"dataset.{WAREHOUSE}.raw.customers",
            f"dataset.{WAREHOUSE}.analytics.customer_summary",
            summaries,
            1,
            False,
        ),
        (
            f"dataset.{WAREHOUSE}.raw.orders",
            f"dataset.{WAREHOUSE}.analytics.order_summary",
            summaries,
            1,
            False,
        ),
    ]
    assert sorted(graph["data"]) == sorted(
        ["dataset.bi.dash"]
        + [
            f"dataset.{WAREHOUSE}.{n}"
            for n in (
                "analytics.customer_summary",
                "analytics.order_summary",
                "raw.customers",
                "raw.orders",
            )
        ]
    )
    assert sorted(graph["programs"]) == ["job.bi.report", summaries]
    assert graph["links"] == []

    out = tmp_path / "lineage.dot"
    written = invoke("export", "--db", db_url, "--format", "dot", "-o", str(out))
    assert written.exit_code == 0
    assert f"wrote {out}" in written.stderr
    text = out.read_text()
    assert text.count(" -> ") == 3
    assert '[label="build_summaries"]' in text
    drawn = subprocess.run(
        [system_program("dot"), "-Tsvg", str(out)], capture_output=True, check=False
    )
    assert drawn.returncode == 0, drawn.stderr

    mermaid = invoke("export", "--db", db_url, "-f", "mermaid")
    assert_valid_flowchart(mermaid.stdout)
    table = invoke("export", "--db", db_url, "-f", "table")
    assert "5 datasets, 2 jobs, 3 flows" in table.stdout


def test_export_of_a_neighbourhood_is_the_lineage(db_url: str, warehouse: None) -> None:
    args = [
        WAREHOUSE,
        "analytics.customer_summary",
        "--direction",
        "upstream",
        *WINDOW,
        "--db",
        db_url,
    ]
    exported = invoke("export", *args)
    shown = invoke("lineage", *args, "-f", "json")
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout) == json.loads(shown.stdout)
    half = invoke("export", WAREHOUSE, "--db", db_url)
    assert half.exit_code == 2


def test_field_lineage_from_column_lineage_and_paths(db_url: str, client: TestClient) -> None:
    from tests.builders import column_lineage

    event = run_event(
        ("etl", "copy"),
        inputs=[ds("src", "users")],
        outputs=[
            ds(
                "dst",
                "people",
                columnLineage=column_lineage(
                    {"full_name": [("src", "users", "first"), ("src", "users", "last")]}
                ),
            )
        ],
    )
    assert client.post("/api/v1/lineage", json=event).status_code == 201
    common = ["field-lineage", "dst", "people", "full_name", *WINDOW, "--db", db_url]

    incoming = invoke(*common, "--direction", "incoming", "-f", "json")
    assert incoming.exit_code == 0, incoming.output
    assert json.loads(incoming.stdout) == {
        "incoming": [
            {
                "dataset": {"namespace": "src", "name": "users"},
                "fields": ["first", "last"],
                "origins": {"first": ["columnLineage"], "last": ["columnLineage"]},
            }
        ]
    }
    api = client.get(
        "/v3/namespaces/dst/datasets/people/lineage/fields/full_name",
        params={"start": WINDOW[1], "end": WINDOW[3]},
    )
    both = invoke(*common, "-f", "json")
    assert json.loads(both.stdout) == api.json()

    table = invoke(*common)
    assert "dst / people . full_name comes from" in table.stdout
    assert "first, last" in table.stdout
    assert "Stated by" in table.stdout
    assert "columnLineage" in table.stdout
    dot = invoke(*common, "-f", "dot")
    assert dot.stdout.count(" -> ") == 2
    assert_valid_flowchart(invoke(*common, "-f", "mermaid").stdout)

    outgoing = invoke(
        "field-lineage",
        "src",
        "users",
        "first",
        "--direction",
        "outgoing",
        *WINDOW,
        "--db",
        db_url,
        "-f",
        "json",
    )
    assert json.loads(outgoing.stdout) == {
        "outgoing": [
            {
                "dataset": {"namespace": "dst", "name": "people"},
                "fields": ["full_name"],
                "origins": {"full_name": ["columnLineage"]},
            }
        ]
    }
    unknown = invoke("field-lineage", "dst", "people", "nope", *WINDOW, "--db", db_url)
    assert unknown.exit_code == 1
    assert own_lines(unknown.stderr)[0].startswith("error: ")
    paths_as_dot = invoke(*common, "--paths", "-f", "dot")
    assert paths_as_dot.exit_code == 2
    assert "--paths prints a table or json" in paths_as_dot.stderr
