"""`upstream demo` into a database and into a live server, every read command against that
server giving the database's answers, and the help of every command."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from typer.testing import CliRunner

from upstream.cli import app

runner = CliRunner()
WAREHOUSE = "postgresql://warehouse"
EMP_ROLLED_UP = [
    "--rollup",
    "workflow",
    "--collapse",
    "access",
    "--collapse",
    "run",
    "--collapse",
    "component",
    "--levels",
    "1",
]


def json_of(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def relations(response: dict[str, Any]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(r["data"], r["program"], tuple(r["accesses"])) for r in response["relations"]}


def workflow_run_of(demo_output: str) -> str:
    match = re.search(r"default/conn-0\.([0-9a-f-]{36})", demo_output)
    assert match, demo_output
    return match.group(1)


def test_demo_loads_the_three_scenarios_into_a_database(db_url: str) -> None:
    result = runner.invoke(app, ["demo", "--db", db_url])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"Loaded the three example scenarios into {db_url}.")
    assert f"upstream lineage default EmpAgg --rollup workflow --db {db_url}" in result.stdout
    assert (
        "http://127.0.0.1:5000/v3/namespaces/postgresql%3A%2F%2Fwarehouse/datasets/"
        in result.stdout
    )
    run = workflow_run_of(result.stdout)

    # Seed 002: rolled up, the workflow stands where its programs stood and the temporary
    # dataset is gone; without rollup both programs and the temporary dataset are there.
    rolled = json_of("lineage", "default", "EmpAgg", *EMP_ROLLED_UP, "--db", db_url, "-f", "json")
    assert relations(rolled) == {
        ("dataset.default.EmpAgg", "workflow.default.EmployeePipe", ("write",)),
        ("dataset.default.Employees", "workflow.default.EmployeePipe", ("read",)),
    }
    assert {tuple(r["runs"]) for r in rolled["relations"]} == {(run,)}
    plain = json_of("lineage", "default", "EmpAgg", "--db", db_url, "-f", "json")
    temporary = f"dataset.default.conn-0.{run}"
    assert relations(plain) == {
        ("dataset.default.EmpAgg", "job.default.EmployeePipe.phase-2", ("write",)),
        (temporary, "job.default.EmployeePipe.phase-2", ("read",)),
        (temporary, "job.default.EmployeePipe.phase-1", ("write",)),
        ("dataset.default.Employees", "job.default.EmployeePipe.phase-1", ("read",)),
    }

    # Seed 003: customer_summary comes from customers only.
    upstream = json_of(
        "lineage",
        WAREHOUSE,
        "analytics.customer_summary",
        "--direction",
        "upstream",
        "--db",
        db_url,
        "-f",
        "json",
    )
    assert sorted(upstream["data"]) == [
        f"dataset.{WAREHOUSE}.analytics.customer_summary",
        f"dataset.{WAREHOUSE}.raw.customers",
    ]

    # Seed 000: uniqueId was made by read, parse, concat, create; the drops are not on its path.
    paths = json_of(
        "field-lineage", "myns", "mytableds", "uniqueId", "--paths", "--db", db_url, "-f", "json"
    )
    assert [[op["name"] for op in p["operations"]] for p in paths["paths"]] == [
        ["read", "parse", "concat", "create"]
    ]
    assert len(paths["paths"][0]["runs"]) == 1

    # A second demo is a second run of every job: one path, now with two runs.
    assert runner.invoke(app, ["demo", "--db", db_url]).exit_code == 0
    again = json_of(
        "field-lineage", "myns", "mytableds", "uniqueId", "--paths", "--db", db_url, "-f", "json"
    )
    assert [len(p["runs"]) for p in again["paths"]] == [2]


@pytest.mark.parametrize(
    "command",
    [
        ["serve"],
        ["db"],
        ["db", "upgrade"],
        ["ingest"],
        ["lineage"],
        ["field-lineage"],
        ["export"],
        ["demo"],
    ],
)
def test_every_command_has_help_with_an_example(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.stdout
    assert f"upstream {command[0]}" in " ".join(result.stdout.split("Example", 1)[1].split())


def test_version_and_bare_invocation() -> None:
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*\n", version.stdout)
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2
