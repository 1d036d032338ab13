"""`upstream lineage --as-of`, `upstream diff` and `upstream run-lineage` against a database
and a server: the API's answers, drawn as tables, JSON, DOT and Mermaid (added edges green,
removed ones red)."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import BASE_TIME, ds, hours, iso, run_event
from tests.cli.test_render import assert_valid_flowchart
from tests.conftest import LiveServer, new_run_id, system_program
from upstream.cli import app
from upstream.render.dot import to_dot
from upstream.render.graph import lineage_diff_graph
from upstream.render.mermaid import to_mermaid

runner = CliRunner()
NS = "shop"
DAY = 24.0
FIRST = f"{iso(BASE_TIME - hours(1))}..{iso(BASE_TIME + hours(DAY))}"
SECOND = f"{iso(BASE_TIME + hours(10 * DAY - 1))}..{iso(BASE_TIME + hours(11 * DAY))}"
BUILD_1, BUILD_2 = new_run_id(), new_run_id()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def changed(client: TestClient) -> None:
    """`build` read `a` on day 0, and `b` (not `a`) on day 10; it wrote `x` both times."""
    events = [
        run_event(
            (NS, "build"),
            run_id=BUILD_1,
            time=BASE_TIME,
            inputs=[ds(NS, "a")],
            outputs=[ds(NS, "x")],
        ),
        run_event(
            (NS, "build"),
            run_id=BUILD_2,
            time=BASE_TIME + hours(10 * DAY),
            inputs=[ds(NS, "b")],
            outputs=[ds(NS, "x")],
        ),
    ]
    assert client.post("/api/v1/lineage", json=events).status_code == 201


def diff_args(db_url: str, *extra: str) -> list[str]:
    return ["diff", NS, "x", "--from", FIRST, "--to", SECOND, "--db", db_url, *extra]


def test_diff_as_json_is_the_api_answer(db_url: str, client: TestClient, changed: None) -> None:
    result = invoke(*diff_args(db_url, "-f", "json"))
    assert result.exit_code == 0, result.output
    api = client.get(
        f"/v3/namespaces/{NS}/datasets/x/lineage/diff", params={"from": FIRST, "to": SECOND}
    )
    assert json.loads(result.stdout) == api.json()
    body = api.json()
    assert [r["data"] for r in body["added"]["relations"]] == [f"dataset.{NS}.b"]
    assert [r["data"] for r in body["removed"]["relations"]] == [f"dataset.{NS}.a"]


def test_diff_table_names_each_change(db_url: str, changed: None) -> None:
    result = invoke(*diff_args(db_url))
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "│" in line]
    assert any("added" in row and " b " in f" {row} " for row in rows), result.stdout
    assert any("removed" in row and " a " in f" {row} " for row in rows), result.stdout
    assert any("kept" in row and "1 → 1" in row for row in rows), result.stdout
    assert "1 relation added, 1 removed, 1 kept" in result.stdout


def test_diff_graphs_draw_added_green_and_removed_red(db_url: str, changed: None) -> None:
    mermaid = invoke(*diff_args(db_url, "-f", "mermaid"))
    assert mermaid.exit_code == 0, mermaid.output
    assert_valid_flowchart(mermaid.stdout)
    lines = mermaid.stdout.splitlines()
    edges = [line.strip() for line in lines if "-->" in line]
    # Edges are sorted: a -> build (removed), b -> build (added), build -> x (kept).
    assert len(edges) == 3
    assert "  linkStyle 1 stroke:#16a34a,stroke-width:2px" in lines
    assert "  linkStyle 0 stroke:#dc2626,stroke-width:2px" in lines
    dot = invoke(*diff_args(db_url, "-f", "dot"))
    assert dot.exit_code == 0, dot.output
    coloured = [line for line in dot.stdout.splitlines() if "->" in line]
    assert sum('color="#16a34a"' in line for line in coloured) == 1
    assert sum('color="#dc2626"' in line and "dashed" in line for line in coloured) == 1
    assert sum("color" not in line for line in coloured) == 1


def test_diff_dot_renders_with_graphviz() -> None:
    graphviz = system_program("dot")
    response = {
        "data": {
            "dataset.n.a": {"entityId": {"type": "dataset", "namespace": "n", "name": 'a "q"'}},
            "dataset.n.x": {"entityId": {"type": "dataset", "namespace": "n", "name": "x"}},
        },
        "programs": {"job.n.j": {"entityId": {"type": "job", "namespace": "n", "name": "j"}}},
        "added": {
            "relations": [{"data": "dataset.n.a", "program": "job.n.j", "accesses": ["read"]}],
            "fieldEdges": [
                {
                    "source": {"namespace": "n", "name": "a", "field": "v"},
                    "target": {"namespace": "n", "name": "x", "field": "c"},
                }
            ],
        },
        "removed": {"relations": [], "fieldEdges": []},
        "kept": [{"data": "dataset.n.x", "program": "job.n.j", "accesses": ["write"]}],
    }
    graph = lineage_diff_graph(response, ("n", "x"))
    assert [edge.change for edge in graph.edges].count("added") == 2
    svg = subprocess.run(
        [graphviz, "-Tsvg"], input=to_dot(graph), capture_output=True, text=True, check=True
    )
    assert "a &quot;q&quot;" in svg.stdout
    assert_valid_flowchart(to_mermaid(graph))


def test_lineage_as_of(db_url: str, changed: None) -> None:
    window = ["--start", iso(BASE_TIME - hours(DAY)), "--end", iso(BASE_TIME + hours(20 * DAY))]
    args = ["lineage", NS, "x", "--direction", "upstream", *window, "--db", db_url, "-f", "json"]
    now = json.loads(invoke(*args).stdout)
    assert {r["data"] for r in now["relations"]} == {f"dataset.{NS}.{n}" for n in "abx"}
    then = invoke(*args, "--as-of", iso(BASE_TIME + hours(DAY)))
    assert then.exit_code == 0, then.output
    assert {r["data"] for r in json.loads(then.stdout)["relations"]} == {
        f"dataset.{NS}.a",
        f"dataset.{NS}.x",
    }
    bad = invoke(*args, "--as-of", "last week")
    assert bad.exit_code != 0
    assert "asOf" in bad.output


def test_run_lineage_table_and_json(db_url: str, client: TestClient) -> None:
    load, report = new_run_id(), new_run_id()
    events = [
        run_event((NS, "load"), run_id=load, time=BASE_TIME, outputs=[ds(NS, "orders")]),
        run_event(
            (NS, "report"), run_id=report, time=BASE_TIME + hours(1), inputs=[ds(NS, "orders")]
        ),
    ]
    assert client.post("/api/v1/lineage", json=events).status_code == 201
    result = invoke("run-lineage", report, "--direction", "upstream", "--db", db_url, "-f", "json")
    assert result.exit_code == 0, result.output
    assert (
        json.loads(result.stdout)
        == client.get(f"/v3/runs/{report}/lineage", params={"direction": "upstream"}).json()
    )
    table = invoke("run-lineage", report, "--direction", "upstream", "--db", db_url)
    assert table.exit_code == 0, table.output
    row = next(line for line in table.stdout.splitlines() if "orders" in line)
    assert report[:8] in row, table.stdout
    assert load[:8] in row, table.stdout
    assert "2 runs, 1 dataset version" in table.stdout
    mermaid = invoke("run-lineage", report, "--db", db_url, "-f", "mermaid")
    assert_valid_flowchart(mermaid.stdout)
    missing = invoke("run-lineage", new_run_id(), "--db", db_url)
    assert missing.exit_code != 0
    assert "not found" in missing.output


def test_run_lineage_lists_and_draws_the_runs_job_dependencies(
    db_url: str, client: TestClient
) -> None:
    """`report` waited for `load` (the `jobDependencies` run facet, 1-0-1) and read what it
    wrote: the table lists the dependency, the graph draws it between the two runs."""
    load, report = new_run_id(), new_run_id()
    waited = {
        "upstream": [
            {
                "job": {"namespace": NS, "name": "load"},
                "run": {"runId": load},
                "dependency_type": "DIRECT_INVOCATION",
                "status_trigger_rule": "EXECUTE_ON_SUCCESS",
            }
        ],
        "trigger_rule": "ALL_SUCCESS",
    }
    events = [
        run_event((NS, "load"), run_id=load, time=BASE_TIME, outputs=[ds(NS, "orders")]),
        run_event(
            (NS, "report"),
            run_id=report,
            time=BASE_TIME + hours(1),
            inputs=[ds(NS, "orders")],
            run_facets={"jobDependencies": waited},
        ),
    ]
    assert client.post("/api/v1/lineage", json=events).status_code == 201
    table = invoke("run-lineage", report, "--db", db_url)
    assert table.exit_code == 0, table.output
    assert "Job dependencies" in table.stdout
    row = next(line for line in table.stdout.splitlines() if "DIRECT_INVOCATION" in line)
    assert [cell.strip() for cell in row.strip("│ ").split("│")] == [
        "load",
        "report",
        "DIRECT_INVOCATION",
        "EXECUTE_ON_SUCCESS",  # one rule a line: the trigger rule on the next
    ]
    assert "ALL_SUCCESS" in table.stdout.split("DIRECT_INVOCATION", 1)[1]
    mermaid = invoke("run-lineage", report, "--db", db_url, "-f", "mermaid").stdout
    assert_valid_flowchart(mermaid)
    assert '-->|"runs before"|' in mermaid


def test_diff_and_run_lineage_through_a_server(live_server: LiveServer) -> None:
    """A run today: this week against the week before, everything is new."""
    run = new_run_id()
    event = run_event(
        (NS, "build"),
        run_id=run,
        time=datetime.now(UTC) - hours(1),
        inputs=[ds(NS, "a")],
        outputs=[ds(NS, "x")],
    )
    assert httpx.post(f"{live_server.url}/api/v1/lineage", json=event).status_code == 201
    result = invoke("diff", NS, "x", "--url", live_server.url, "-f", "json")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert {r["data"] for r in body["added"]["relations"]} == {f"dataset.{NS}.a", f"dataset.{NS}.x"}
    lineage = invoke("run-lineage", run, "--url", live_server.url, "-f", "json")
    assert lineage.exit_code == 0, lineage.output
    assert json.loads(lineage.stdout)["runId"] == run
