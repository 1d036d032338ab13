"""Temporary datasets the OpenLineage way (design §3.4, §4.2): the `datasetType` facet with
subtype TEMPORARY, or type JOB_OUTPUT, marks a dataset temporary as the project's own marker
does; `rollup=workflow` hides it under the same rules and `rollup=jobs` links the jobs around
it job → job. Facets are shaped as the spec's DatasetTypeDatasetFacet.json."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import BASE_TIME, PRODUCER, ds, hours, run_event
from tests.conftest import post
from tests.query.test_dataset_lineage import NS, WINDOW, job, lineage, rels, rid, workflow
from upstream.cli import app
from upstream.model.workflow import temporary_by_type

DATASET_TYPE_SCHEMA = (
    "https://openlineage.io/spec/facets/1-0-0/DatasetTypeDatasetFacet.json"
    "#/$defs/DatasetTypeDatasetFacet"
)
EXTRACT, LOAD = "11111111-aaaa-4aaa-8aaa-111111111111", "22222222-bbbb-4bbb-8bbb-222222222222"


def dataset_type(kind: str, sub_type: str | None = None) -> dict[str, Any]:
    facet: dict[str, Any] = {
        "_producer": PRODUCER,
        "_schemaURL": DATASET_TYPE_SCHEMA,
        "datasetType": kind,
    }
    if sub_type is not None:
        facet["subType"] = sub_type
    return facet


def staged_chain(
    staging_type: dict[str, Any], parent: tuple[tuple[str, str], str] | None = None
) -> list[dict[str, Any]]:
    """extract reads `source` (START) and writes `staging` (COMPLETE); load reads `staging`
    and writes `target`. Only extract's write carries the `datasetType` facet."""
    return [
        run_event(
            (NS, "extract"),
            run_id=EXTRACT,
            event_type="START",
            inputs=[ds(NS, "source")],
            parent=parent,
        ),
        run_event(
            (NS, "extract"),
            run_id=EXTRACT,
            time=BASE_TIME + hours(1),
            outputs=[ds(NS, "staging", datasetType=staging_type)],
            parent=parent,
        ),
        run_event(
            (NS, "load"),
            run_id=LOAD,
            time=BASE_TIME + hours(2),
            inputs=[ds(NS, "staging")],
            outputs=[ds(NS, "target")],
            parent=parent,
        ),
    ]


LINK = {"source": job("extract"), "target": job("load"), "through": [f"dataset.{NS}.staging"]}
#: The answer of rollup=jobs around `staging`, from either end, worked out by hand.
AROUND = {
    ("source", job("extract"), "read", EXTRACT),
    ("target", job("load"), "write", LOAD),
}


@pytest.mark.parametrize(
    "staging_type",
    [dataset_type("TABLE", "TEMPORARY"), dataset_type("JOB_OUTPUT"), dataset_type("job_output")],
    ids=["subtype TEMPORARY", "JOB_OUTPUT", "lower case"],
)
def test_rollup_jobs_links_the_jobs_around_a_temporary_dataset(
    client: TestClient, staging_type: dict[str, Any]
) -> None:
    post(client, *staged_chain(staging_type))
    for seed, direction in (("source", "downstream"), ("target", "upstream"), ("source", "both")):
        answer = lineage(client, seed, levels=5, direction=direction, rollup="jobs")
        assert rels(answer) == AROUND, (seed, direction)
        assert answer["jobLinks"] == [LINK]
        assert sorted(answer["data"]) == [f"dataset.{NS}.source", f"dataset.{NS}.target"]
        assert sorted(answer["programs"]) == [job("extract"), job("load")]


def test_without_a_rollup_the_temporary_dataset_is_shown(client: TestClient) -> None:
    post(client, *staged_chain(dataset_type("TABLE", "TEMPORARY")))
    answer = lineage(client, "source", levels=5, direction="downstream")
    assert rels(answer) == AROUND | {
        ("staging", job("extract"), "write", EXTRACT),
        ("staging", job("load"), "read", LOAD),
    }
    assert "jobLinks" not in answer
    # Outside any workflow, still flagged, so the UI draws it dashed; its neighbours are not.
    flagged = {key for key, entry in answer["data"].items() if entry.get("temporary")}
    assert flagged == {f"dataset.{NS}.staging"}


def test_other_dataset_types_are_not_temporary(client: TestClient) -> None:
    post(client, *staged_chain(dataset_type("TABLE", "MATERIALIZED")))
    answer = lineage(client, "source", levels=5, direction="downstream", rollup="jobs")
    assert f"dataset.{NS}.staging" in answer["data"]
    assert answer["jobLinks"] == []
    plain = lineage(client, "source", levels=5, direction="downstream")
    assert not any(entry.get("temporary") for entry in plain["data"].values())


def test_the_dataset_asked_about_is_kept_even_when_temporary(client: TestClient) -> None:
    post(client, *staged_chain(dataset_type("JOB_OUTPUT")))
    answer = lineage(client, "staging", levels=1, rollup="jobs")
    assert rels(answer) == AROUND | {
        ("staging", job("extract"), "write", EXTRACT),
        ("staging", job("load"), "read", LOAD),
    }
    assert answer["jobLinks"] == []


def test_a_chain_of_temporaries_gives_a_chain_of_links(client: TestClient) -> None:
    a, b, c = rid(), rid(), rid()
    temp = dataset_type("JOB_OUTPUT")
    post(
        client,
        run_event(
            (NS, "a"), run_id=a, inputs=[ds(NS, "in")], outputs=[ds(NS, "t1", datasetType=temp)]
        ),
        run_event(
            (NS, "b"), run_id=b, inputs=[ds(NS, "t1")], outputs=[ds(NS, "t2", datasetType=temp)]
        ),
        run_event((NS, "c"), run_id=c, inputs=[ds(NS, "t2")], outputs=[ds(NS, "out")]),
    )
    answer = lineage(client, "in", levels=10, direction="downstream", rollup="jobs")
    assert rels(answer) == {("in", job("a"), "read", a), ("out", job("c"), "write", c)}
    assert answer["jobLinks"] == [
        {"source": job("a"), "target": job("b"), "through": [f"dataset.{NS}.t1"]},
        {"source": job("b"), "target": job("c"), "through": [f"dataset.{NS}.t2"]},
    ]
    assert sorted(answer["programs"]) == [job("a"), job("b"), job("c")]


def test_rollup_workflow_hides_a_temporary_dataset_type_inside_a_workflow_run(
    client: TestClient,
) -> None:
    """The same rules as the recorder's marker: temporary to the workflow run its writer ran
    in, so the workflow reads `source` and writes `target`, and nothing of `staging` shows."""
    w = "33333333-cccc-4ccc-8ccc-333333333333"
    post(client, *staged_chain(dataset_type("TABLE", "TEMPORARY"), parent=((NS, "dag"), w)))
    answer = lineage(client, "source", levels=5, direction="downstream", rollup="workflow")
    assert rels(answer) == {
        ("source", workflow("dag"), "read", w),
        ("target", workflow("dag"), "write", w),
    }
    plain = lineage(client, "source", levels=5, direction="downstream")
    assert plain["data"][f"dataset.{NS}.staging"]["temporary"] is True


def test_job_lineage_with_rollup_jobs_links_through_the_jobs_own_temporaries(
    client: TestClient,
) -> None:
    post(client, *staged_chain(dataset_type("JOB_OUTPUT")))
    response = client.get(
        f"/v3/namespaces/{NS}/jobs/extract/lineage",
        params={**WINDOW, "direction": "downstream", "levels": 2, "rollup": "jobs"},
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert rels(answer) == {("target", job("load"), "write", LOAD)}
    assert answer["jobLinks"] == [LINK]


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_every_order_of_the_events_gives_the_same_links(
    client: TestClient, order: tuple[int, ...]
) -> None:
    events = staged_chain(dataset_type("TABLE", "TEMPORARY"))
    for index in order:
        post(client, events[index])
    answer = lineage(client, "source", levels=5, direction="downstream", rollup="jobs")
    assert rels(answer) == AROUND
    assert answer["jobLinks"] == [LINK]


@pytest.mark.parametrize(
    ("facet", "path"),
    [
        ({"subType": "TEMPORARY"}, "outputs[0].facets.datasetType.datasetType"),
        ({"datasetType": 7}, "outputs[0].facets.datasetType.datasetType"),
        (
            {"datasetType": "TABLE", "subType": ["TEMPORARY"]},
            "outputs[0].facets.datasetType.subType",
        ),
        ("TEMPORARY", "outputs[0].facets.datasetType"),
    ],
)
def test_a_malformed_dataset_type_is_refused_naming_its_path(
    client: TestClient, facet: Any, path: str
) -> None:
    event = run_event((NS, "j"), outputs=[ds(NS, "out", datasetType=facet)])
    response = client.post("/api/v1/lineage", json=event)
    assert response.status_code == 422, response.text
    assert [e["path"] for e in response.json()["errors"]] == [path]
    assert client.get(f"/v3/namespaces/{NS}/datasets/out/lineage").status_code == 404


def test_an_input_marked_temporary_counts_too(client: TestClient) -> None:
    a, b = rid(), rid()
    post(
        client,
        run_event((NS, "a"), run_id=a, inputs=[ds(NS, "in")], outputs=[ds(NS, "t")]),
        run_event(
            (NS, "b"),
            run_id=b,
            inputs=[ds(NS, "t", datasetType=dataset_type("VIEW", "TEMPORARY"))],
            outputs=[ds(NS, "out")],
        ),
    )
    answer = lineage(client, "in", levels=5, direction="downstream", rollup="jobs")
    assert answer["jobLinks"] == [
        {"source": job("a"), "target": job("b"), "through": [f"dataset.{NS}.t"]}
    ]


def test_the_cli_prints_the_links(db_url: str, client: TestClient) -> None:
    post(client, *staged_chain(dataset_type("JOB_OUTPUT")))
    window = ["--start", WINDOW["start"], "--end", WINDOW["end"]]
    args = ["lineage", NS, "source", "--direction", "downstream", "--rollup", "jobs", *window]
    as_json = CliRunner().invoke(app, [*args, "--db", db_url, "-f", "json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.stdout)["jobLinks"] == [LINK]
    table = CliRunner().invoke(app, [*args, "--db", db_url], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "through temporary" in table.stdout
    assert "│ extract │ load │ staging │" in table.stdout


@pytest.mark.parametrize(
    ("kind", "sub_type", "temporary"),
    [
        ("TABLE", "TEMPORARY", True),
        ("VIEW", " temporary ", True),
        ("JOB_OUTPUT", None, True),
        ("Job_Output", "MATERIALIZED", True),
        ("TABLE", None, False),
        ("TABLE", "EXTERNAL", False),
        ("STREAM", "", False),
    ],
)
def test_the_rule_of_which_dataset_types_are_temporary(
    kind: str, sub_type: str | None, temporary: bool
) -> None:
    assert temporary_by_type(kind, sub_type) is temporary
