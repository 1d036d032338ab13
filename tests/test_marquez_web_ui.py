"""The contract with Marquez's own web UI (issue 36): every request its `web/src/store/requests/`
makes, with the fields its pages read, answered from one fixture estate. Expected values are
worked out by hand from the events below and the fixed "now" (`NOW`).

The estate, all times UTC (New York left daylight-saving time at 06:00 UTC on 1 Nov 2026):

| job          | run, events                                   | reads → writes                  |
| ------------ | --------------------------------------------- | ------------------------------- |
| `etl.old`    | ABORT 20 Oct 10:00                            | → `s3://bucket` `old/events`    |
| `etl.load`   | r0 START 26 Oct 03:30, COMPLETE 03:45;        | → `db.raw`                      |
|              | r1 START 27 Oct 12:00, COMPLETE 13:00         |                                 |
| `etl.idle`   | no run; a job event at 28 Oct 10:00           | `db.raw` →                      |
| `etl.clean`  | r2 START 1 Nov 13:10, FAIL 14:20              | `db.raw` → `db.clean`           |
| `etl.report` | r3 START 1 Nov 15:05 (still running)          | `db.clean` → `db.report`        |

`db.clean.id` ← `db.raw.id`, `db.clean.total` ← `db.raw.payload` (an aggregation),
`db.report.sum` ← `db.clean.total`; `db.report`'s `dataSource` is `warehouse`.

One request function of the UI is left out: `getJobsByState` (`POST /jobs?runState=…`), which no
page calls and Marquez itself does not serve.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import PRODUCER, ds, job_event, run_event, schema_facet
from upstream.api.app import create_app
from upstream.api.deps import current_time
from upstream.ingest.rebuild import rebuild
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.store.prune import prune

NOW = datetime(2026, 11, 1, 15, 40, tzinfo=UTC)
RUNS = {name: str(uuid.UUID(int=i + 1)) for i, name in enumerate(("r0", "r1", "r2", "r3", "ro"))}
AGGREGATION = {"type": "INDIRECT", "subtype": "AGGREGATION", "description": "sum of payload"}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    month = 10 if day > 15 else 11
    return datetime(2026, month, day, hour, minute, tzinfo=UTC)


def _field_inputs(**fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "columnLineage": {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
            "fields": {name: {"inputFields": inputs} for name, inputs in fields.items()},
        }
    }


RAW = ds("db", "raw", schema=schema_facet(("id", "int"), ("payload", "text")))
CLEAN = ds(
    "db",
    "clean",
    schema=schema_facet(("id", "int"), ("total", "int")),
    **_field_inputs(
        id=[{"namespace": "db", "name": "raw", "field": "id"}],
        total=[
            {"namespace": "db", "name": "raw", "field": "payload", "transformations": [AGGREGATION]}
        ],
    ),
)
REPORT = ds(
    "db",
    "report",
    schema=schema_facet(("sum", "int")),
    dataSource={
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/DatasourceDatasetFacet.json",
        "name": "warehouse",
        "uri": "postgres://warehouse:5432",
    },
    **_field_inputs(sum=[{"namespace": "db", "name": "clean", "field": "total"}]),
)


def estate() -> list[dict[str, Any]]:
    def run(job: str, run: str, kind: str, time: datetime, **io: Any) -> dict[str, Any]:
        return run_event(("etl", job), run_id=RUNS[run], event_type=kind, time=time, **io)

    old = {"outputs": [ds("s3://bucket", "old/events")]}
    load = {"outputs": [RAW]}
    clean = {"inputs": [RAW], "outputs": [CLEAN]}
    report = {"inputs": [CLEAN], "outputs": [REPORT]}
    return [
        run("old", "ro", "ABORT", at(20, 10), **old),
        run("load", "r0", "START", at(26, 3, 30), **load),
        run("load", "r0", "COMPLETE", at(26, 3, 45), **load),
        run("load", "r1", "START", at(27, 12), **load),
        run("load", "r1", "COMPLETE", at(27, 13), **load),
        job_event(("etl", "idle"), time=at(28, 10), inputs=[ds("db", "raw")]),
        run("clean", "r2", "START", at(1, 13, 10), **clean),
        run("clean", "r2", "FAIL", at(1, 14, 20), **clean),
        run("report", "r3", "START", at(1, 15, 5), **report),
    ]


@pytest.fixture
def ui(settings: Settings) -> Iterator[TestClient]:
    """The API with the estate stored and the clock at `NOW`."""
    app = create_app(settings, migrate=False)
    app.dependency_overrides[current_time] = lambda: NOW
    with TestClient(app) as client:
        for event in estate():
            assert client.post("/api/v1/lineage", json=event).status_code == 201
        yield client


def get(client: TestClient, url: str) -> Any:
    response = client.get(url)
    assert response.status_code == 200, (url, response.text)
    return response.json()


# -- every request the UI makes, with the fields its pages read ------------------------------

RUN = {"id", "createdAt", "updatedAt", "state", "startedAt", "endedAt", "durationMs", "facets"}
JOB = {"id", "name", "namespace", "type", "createdAt", "updatedAt", "inputs", "outputs"}
JOB |= {"location", "description", "latestRun", "latestRuns", "tags", "parentJobName"}
DATASET = {"id", "name", "namespace", "type", "physicalName", "createdAt", "updatedAt"}
DATASET |= {"sourceName", "fields", "tags", "lastModifiedAt", "description", "facets"}
DATASET |= {"deleted", "columnLineage"}
INTERVAL = {"startInterval", "endInterval"}
COLUMN_NODE = {"id", "type", "data", "inEdges", "outEdges"}

#: (the UI's request function, method, URL as it builds it, the fields it reads per item).
UI_REQUESTS: list[tuple[str, str, str, dict[str, set[str]]]] = [
    ("getNamespaces", "GET", "/api/v1/namespaces", {"namespaces": {"name", "isHidden"}}),
    ("getJobs", "GET", "/api/v1/jobs?limit=25&offset=0", {"jobs": JOB}),
    ("getJobs", "GET", "/api/v1/jobs?limit=25&offset=0&lastRunStates=FAILED", {"jobs": JOB}),
    ("getJobs", "GET", "/api/v1/namespaces/etl/jobs?limit=25&offset=0", {"jobs": JOB}),
    ("getJob", "GET", "/api/v1/namespaces/etl/jobs/clean", {"": JOB}),
    ("getRuns", "GET", "/api/v1/namespaces/etl/jobs/clean/runs?limit=10&offset=0", {"runs": RUN}),
    (
        "getDatasets",
        "GET",
        "/api/v1/namespaces/db/datasets?limit=20&offset=0",
        {"datasets": DATASET},
    ),
    ("getDataset", "GET", "/api/v1/namespaces/db/datasets/clean", {"": DATASET}),
    (
        "getDatasetVersions",
        "GET",
        "/api/v1/namespaces/db/datasets/clean/versions?limit=10&offset=0",
        {
            "versions": {
                "version",
                "createdAt",
                "fields",
                "facets",
                "createdByRun",
                "lifecycleState",
            }
        },
    ),
    ("getRunFacets", "GET", f"/api/v1/jobs/runs/{RUNS['r2']}/facets?type=run", {"": {"facets"}}),
    ("getJobFacets", "GET", f"/api/v1/jobs/runs/{RUNS['r2']}/facets?type=job", {"": {"facets"}}),
    (
        "getLineage",
        "GET",
        "/api/v1/lineage?nodeId=dataset:db:clean&depth=5",
        {"graph": {"id", "type", "data", "inEdges", "outEdges"}},
    ),
    (
        "getColumnLineage",
        "GET",
        "/api/v1/column-lineage?nodeId=dataset:db:clean&depth=5&withDownstream=true",
        {"graph": COLUMN_NODE},
    ),
    (
        "getEvents",
        "GET",
        "/api/v1/events/lineage?limit=100&before=2026-11-02T00:00:00.000Z"
        "&after=2026-10-25T00:00:00.000Z&offset=0&sortDirection=desc",
        # eventType and run too on run events; the estate's job event has neither.
        {"events": {"eventTime", "job", "inputs", "outputs"}},
    ),
    (
        "getSearch",
        "GET",
        "/api/v1/search?q=clean&sort=NAME&limit=100",
        {"results": {"name", "namespace", "nodeId", "type", "updatedAt"}},
    ),
    (
        "getOpenSearchJobs",
        "GET",
        "/api/v2beta/search/jobs?q=clean",
        {"hits": {"run_id", "name", "namespace", "eventType", "type", "facets", "runFacets"}},
    ),
    (
        "getOpenSearchDatasets",
        "GET",
        "/api/v2beta/search/datasets?q=clean",
        {"hits": {"run_id", "name", "namespace", "eventType", "facets"}},
    ),
    (
        "getLineageMetrics",
        "GET",
        "/api/v1/stats/lineage-events?period=DAY&timezone=Europe/Berlin",
        {"": INTERVAL | {"fail", "start", "complete", "abort"}},
    ),
    (
        "getIntervalMetrics",
        "GET",
        "/api/v1/stats/jobs?period=WEEK&timezone=Europe/Berlin",
        {"": INTERVAL | {"count"}},
    ),
    (
        "getIntervalMetrics",
        "GET",
        "/api/v1/stats/datasets?period=DAY&timezone=UTC",
        {"": INTERVAL | {"count"}},
    ),
    (
        "getIntervalMetrics",
        "GET",
        "/api/v1/stats/sources?period=WEEK&timezone=UTC",
        {"": INTERVAL | {"count"}},
    ),
    ("addTags", "PUT", "/api/v1/tags/nightly", {"": {"name", "description"}}),
    ("getTags", "GET", "/api/v1/tags", {"tags": {"name", "description"}}),
    ("addJobTag", "POST", "/api/v1/namespaces/etl/jobs/clean/tags/nightly", {"": JOB}),
    ("deleteJobTag", "DELETE", "/api/v1/namespaces/etl/jobs/clean/tags/nightly", {"": JOB}),
    ("addDatasetTag", "POST", "/api/v1/namespaces/db/datasets/clean/tags/pii", {"": {"tags"}}),
    ("deleteDatasetTag", "DELETE", "/api/v1/namespaces/db/datasets/clean/tags/pii", {"": {"tags"}}),
    (
        "addDatasetFieldTag",
        "POST",
        "/api/v1/namespaces/db/datasets/clean/fields/total/tags/pii",
        {"": {"fields"}},
    ),
    (
        "deleteDatasetFieldTag",
        "DELETE",
        "/api/v1/namespaces/db/datasets/clean/fields/total/tags/pii",
        {"": {"fields"}},
    ),
    ("deleteJob", "DELETE", "/api/v1/namespaces/etl/jobs/idle", {"": JOB}),
    ("deleteDataset", "DELETE", "/api/v1/namespaces/db/datasets/report", {"": {"name"}}),
]


def test_every_request_of_the_ui_answers_the_fields_it_reads(ui: TestClient) -> None:
    for name, method, url, fields in UI_REQUESTS:
        body = {"description": "runs every night"} if method == "PUT" else None
        response = ui.request(method, url, json=body)
        assert response.status_code == 200, (name, url, response.text)
        answer = response.json()
        for key, wanted in fields.items():
            items = answer[key] if key else answer
            items = items if isinstance(items, list) else [items]
            assert items, (name, url, "answers nothing")
            for item in items:
                assert wanted <= set(item), (name, url, wanted - set(item))


# -- the dashboard ----------------------------------------------------------------------------


def _counts(answer: list[dict[str, Any]], key: str = "count") -> list[Any]:
    return [row[key] for row in answer]


def test_lineage_event_counts_by_hour_and_by_day(ui: TestClient) -> None:
    day = get(ui, "/api/v1/stats/lineage-events?period=DAY&timezone=UTC")
    # 24 hours, the last one the current hour (15:00-16:00).
    assert [(r["startInterval"], r["endInterval"]) for r in day][-1] == (
        "2026-11-01T15:00:00Z",
        "2026-11-01T16:00:00Z",
    )
    assert day[0]["startInterval"] == "2026-10-31T16:00:00Z"
    assert len(day) == 24
    quiet = {"fail": 0, "start": 0, "complete": 0, "abort": 0}
    expected = [dict(quiet) for _ in range(24)]
    expected[21]["start"] = 1  # r2 START 13:10
    expected[22]["fail"] = 1  # r2 FAIL 14:20
    expected[23]["start"] = 1  # r3 START 15:05
    assert [{k: r[k] for k in quiet} for r in day] == expected

    # India is 5:30 ahead: its hours start at half past in UTC, the current one at 15:30.
    india = get(ui, "/api/v1/stats/lineage-events?period=DAY&timezone=Asia/Kolkata")
    assert india[-1]["startInterval"] == "2026-11-01T15:30:00Z"
    assert [(i, r["start"], r["fail"]) for i, r in enumerate(india) if r["start"] or r["fail"]] == [
        (20, 1, 0),  # 12:30-13:30
        (21, 0, 1),  # 13:30-14:30
        (22, 1, 0),  # 14:30-15:30
    ]

    week = get(ui, "/api/v1/stats/lineage-events?period=WEEK&timezone=America/New_York")
    # Local days 26 Oct - 1 Nov; 1 Nov has 25 hours (daylight-saving time ended).
    assert [r["startInterval"] for r in week] == [
        f"2026-10-{d}T04:00:00Z" for d in range(26, 32)
    ] + ["2026-11-01T04:00:00Z"]
    assert week[-1]["endInterval"] == "2026-11-02T05:00:00Z"
    # r0 (26 Oct 03:30 UTC) is still 25 Oct in New York; ABORT on 20 Oct is before the week.
    assert [(r["start"], r["complete"], r["fail"], r["abort"]) for r in week] == [
        (0, 0, 0, 0),
        (1, 1, 0, 0),  # r1
        (0, 0, 0, 0),
        (0, 0, 0, 0),
        (0, 0, 0, 0),
        (0, 0, 0, 0),
        (2, 0, 1, 0),  # r2 START and FAIL, r3 START
    ]
    in_utc = get(ui, "/api/v1/stats/lineage-events?period=WEEK&timezone=UTC")
    assert [(r["start"], r["complete"]) for r in in_utc][:2] == [(1, 1), (1, 1)]  # r0, r1


def test_jobs_datasets_and_sources_counted_cumulatively(ui: TestClient) -> None:
    new_york = "period=WEEK&timezone=America/New_York"
    # Jobs first seen: old 20 Oct, load 26 Oct 03:30 (25 Oct in New York), idle 28 Oct
    # (its declaration), clean and report 1 Nov.
    assert _counts(get(ui, f"/api/v1/stats/jobs?{new_york}")) == [2, 2, 3, 3, 3, 3, 5]
    # Datasets: old/events and raw before the week; clean and report on 1 Nov.
    assert _counts(get(ui, f"/api/v1/stats/datasets?{new_york}")) == [2, 2, 2, 2, 2, 2, 4]
    # Sources: s3://bucket and db before the week; warehouse (report's dataSource) on 1 Nov.
    assert _counts(get(ui, f"/api/v1/stats/sources?{new_york}")) == [2, 2, 2, 2, 2, 2, 3]
    # By hour: clean appears at 13:00, report at 15:00.
    assert _counts(get(ui, "/api/v1/stats/jobs?period=DAY"))[20:] == [3, 4, 4, 5]
    assert _counts(get(ui, "/api/v1/stats/datasets?period=DAY&timezone=UTC"))[20:] == [2, 3, 3, 4]
    # A deleted job is not counted.
    assert ui.delete("/api/v1/namespaces/etl/jobs/old").status_code == 200
    assert _counts(get(ui, f"/api/v1/stats/jobs?{new_york}")) == [1, 1, 2, 2, 2, 2, 4]


def test_stats_refuse_a_bad_period_or_time_zone(ui: TestClient) -> None:
    refused = {
        "/api/v1/stats/jobs?period=MONTH&timezone=UTC": "period",
        "/api/v1/stats/jobs?timezone=UTC": "period",
        "/api/v1/stats/lineage-events?period=day": "period",
        "/api/v1/stats/datasets?period=DAY&timezone=Mars/Olympus": "timezone: 'Mars/Olympus'",
        "/api/v1/stats/lineage-events?period=WEEK": "timezone: is required for period WEEK",
        "/api/v1/stats/sources?period=WEEK&timezone=": "timezone: is required for period WEEK",
    }
    for url, message in refused.items():
        response = ui.get(url)
        assert response.status_code == 400, url
        assert message in response.json()["message"], (url, response.json())
    assert ui.get("/api/v1/stats/runs?period=DAY").status_code in (400, 404)


# -- the jobs of every namespace --------------------------------------------------------------


def _job_names(answer: dict[str, Any]) -> tuple[list[str], int]:
    return [job["name"] for job in answer["jobs"]], answer["totalCount"]


def test_the_jobs_of_every_namespace_filtered_by_their_latest_run(ui: TestClient) -> None:
    # The most recently updated first: the order the events arrived in.
    everything = ["report", "clean", "idle", "load", "old"]
    assert _job_names(get(ui, "/api/v1/jobs?limit=25&offset=0")) == (everything, 5)
    assert _job_names(get(ui, "/api/v1/jobs?limit=2&offset=1")) == (["clean", "idle"], 5)
    # A job without runs (idle) is always listed, as in Marquez.
    by_state = {
        "FAILED": ["clean", "idle"],
        "RUNNING": ["report", "idle"],
        "COMPLETED": ["idle", "load"],
        "ABORTED": ["idle", "old"],
        "NEW": ["idle"],
    }
    for state, names in by_state.items():
        assert _job_names(get(ui, f"/api/v1/jobs?lastRunStates={state}")) == (names, len(names))
    both = get(ui, "/api/v1/jobs?lastRunStates=FAILED&lastRunStates=ABORTED&limit=1&offset=1")
    assert _job_names(both) == (["idle"], 3)
    failed = get(ui, "/api/v1/jobs?lastRunStates=FAILED")["jobs"][0]
    assert (failed["latestRun"]["id"], failed["latestRun"]["state"]) == (RUNS["r2"], "FAILED")
    # The namespace's list filters the same way, by name.
    in_etl = get(ui, "/api/v1/namespaces/etl/jobs?lastRunStates=COMPLETED&lastRunStates=RUNNING")
    assert _job_names(in_etl) == (["idle", "load", "report"], 3)
    bad = ui.get("/api/v1/jobs?lastRunStates=FAILED&lastRunStates=DONE")
    assert (bad.status_code, bad.json()["message"]) == (
        400,
        "lastRunStates: 'DONE' is none of NEW, RUNNING, COMPLETED, FAILED, ABORTED, OTHER",
    )


# -- column lineage ---------------------------------------------------------------------------


def _input(namespace: str, dataset: str, field: str, how: dict[str, Any] | None = None) -> Any:
    return (namespace, dataset, field, (how or {}).get("type"), (how or {}).get("description"))


def test_datasets_carry_the_column_lineage_of_their_fields(ui: TestClient) -> None:
    def column_lineage(doc: dict[str, Any]) -> Any:
        if doc["columnLineage"] is None:
            return None
        return {
            entry["name"]: [
                (
                    i["namespace"],
                    i["dataset"],
                    i["field"],
                    i["transformationType"],
                    i["transformationDescription"],
                )
                for i in entry["inputFields"]
            ]
            for entry in doc["columnLineage"]
        }

    clean = get(ui, "/api/v1/namespaces/db/datasets/clean")
    assert column_lineage(clean) == {
        "id": [_input("db", "raw", "id")],
        "total": [_input("db", "raw", "payload", AGGREGATION)],
    }
    total = next(entry for entry in clean["columnLineage"] if entry["name"] == "total")
    assert (total["transformationType"], total["transformationDescription"]) == (
        "INDIRECT",
        "sum of payload",
    )
    listed = get(ui, "/api/v1/namespaces/db/datasets?limit=20&offset=0")["datasets"]
    assert {d["name"]: column_lineage(d) for d in listed} == {
        "clean": column_lineage(clean),
        "raw": None,  # made from no other field: the UI shows N/A
        "report": {"sum": [_input("db", "clean", "total")]},
    }
    # Lineage graph nodes, as in Marquez, do not carry it.
    graph = get(ui, "/api/v1/lineage?nodeId=dataset:db:clean&depth=1")["graph"]
    assert all("columnLineage" not in node["data"] for node in graph)


def _connected(graph: list[dict[str, Any]], start: str) -> set[str]:
    """The columns Marquez's column view highlights: from the node, the `destination` of each of
    its `inEdges` and `outEdges`, again and again (its `findConnectedNodes`)."""
    nodes = {node["id"]: node for node in graph}
    seen, queue = set(), [start]
    while queue:
        current = queue.pop(0)
        if current in seen or current not in nodes:
            continue
        seen.add(current)
        queue.extend(
            e["destination"] for e in nodes[current]["inEdges"] + nodes[current]["outEdges"]
        )
    return seen


def test_column_edges_are_oriented_as_marquez_writes_them(ui: TestClient) -> None:
    graph = get(ui, "/api/v1/column-lineage?nodeId=dataset:db:clean&depth=20&withDownstream=true")
    f = "datasetField:db:"
    edges = {node["id"]: (node["inEdges"], node["outEdges"]) for node in graph["graph"]}
    assert sorted(edges) == [
        f + "clean:id",
        f + "clean:total",
        f + "raw:id",
        f + "raw:payload",
        f + "report:sum",
    ]
    # An in-edge goes from the node to its input, an out-edge from the node to what it made.
    assert edges[f + "clean:total"] == (
        [{"origin": f + "clean:total", "destination": f + "raw:payload"}],
        [{"origin": f + "clean:total", "destination": f + "report:sum"}],
    )
    assert edges[f + "raw:payload"] == (
        [],
        [{"origin": f + "raw:payload", "destination": f + "clean:total"}],
    )
    assert edges[f + "report:sum"] == (
        [{"origin": f + "report:sum", "destination": f + "clean:total"}],
        [],
    )
    # So the UI's walk from a column finds every column connected to it, upstream included.
    assert _connected(graph["graph"], f + "report:sum") == {
        f + "report:sum",
        f + "clean:total",
        f + "raw:payload",
    }


# -- job tags ---------------------------------------------------------------------------------


def test_jobs_are_tagged_and_untagged(ui: TestClient) -> None:
    tagged = ui.post("/api/v1/namespaces/etl/jobs/clean/tags/nightly")
    assert tagged.status_code == 200
    assert (tagged.json()["name"], tagged.json()["tags"]) == ("clean", ["nightly"])
    ui.post("/api/v1/namespaces/etl/jobs/clean/tags/finance")
    assert get(ui, "/api/v1/namespaces/etl/jobs/clean")["tags"] == ["finance", "nightly"]
    listed = get(ui, "/api/v1/jobs?lastRunStates=FAILED")["jobs"]
    assert {job["name"]: job["tags"] for job in listed} == {
        "clean": ["finance", "nightly"],
        "idle": [],
    }
    # The tag was created; tagging twice changes nothing.
    assert {"name": "nightly", "description": None} in get(ui, "/api/v1/tags")["tags"]
    assert ui.post("/api/v1/namespaces/etl/jobs/clean/tags/nightly").json()["tags"] == [
        "finance",
        "nightly",
    ]
    untagged = ui.delete("/api/v1/namespaces/etl/jobs/clean/tags/nightly")
    assert (untagged.status_code, untagged.json()["tags"]) == (200, ["finance"])
    # A tag the job lacks: nothing changes, the job is answered, as in Marquez.
    absent = ui.delete("/api/v1/namespaces/etl/jobs/clean/tags/nightly")
    assert (absent.status_code, absent.json()["tags"]) == (200, ["finance"])
    for method in ("POST", "DELETE"):
        missing_job = ui.request(method, "/api/v1/namespaces/etl/jobs/nope/tags/nightly")
        assert missing_job.status_code == 404
        assert missing_job.json()["message"] == "job 'nope' not found in namespace 'etl'"
        missing_namespace = ui.request(method, "/api/v1/namespaces/nowhere/jobs/clean/tags/x")
        assert missing_namespace.status_code == 404
    blank = ui.post("/api/v1/namespaces/etl/jobs/clean/tags/%20")
    assert (blank.status_code, blank.json()["message"]) == (422, "tag: must not be blank")
    assert get(ui, "/api/v1/namespaces/etl/jobs/clean")["tags"] == ["finance"]


def test_job_tags_outlive_a_rebuild_and_keep_a_pruned_job(ui: TestClient, store: Store) -> None:
    """People tag, events do not: a rebuild derives everything again and keeps the tags, and
    retention does not remove a tagged job whose runs it removed."""
    for job in ("clean", "old"):
        assert ui.post(f"/api/v1/namespaces/etl/jobs/{job}/tags/audited").status_code == 200
    rebuild(store)
    assert get(ui, "/api/v1/namespaces/etl/jobs/clean")["tags"] == ["audited"]
    # The old job's only run (20 Oct) is older than the cutoff; the job stays, tagged.
    store.write(lambda conn: prune(conn, at(25, 0), keep_events=False, dry_run=False))
    old = get(ui, "/api/v1/namespaces/etl/jobs/old")
    assert (old["tags"], old["latestRun"]) == (["audited"], None)


# -- the advanced search ----------------------------------------------------------------------


def test_the_advanced_search_answers_from_upstreams_search(ui: TestClient) -> None:
    jobs = get(ui, "/api/v2beta/search/jobs?q=CLE")
    assert jobs == {
        "hits": [
            {
                "run_id": RUNS["r2"],
                "name": "clean",
                "namespace": "etl",
                "eventType": "FAIL",
                "type": "BATCH",
                "facets": {},
                "runFacets": {},
            }
        ],
        "highlights": [{"name": ["<em>cle</em>an"]}],
    }
    datasets = get(ui, "/api/v2beta/search/datasets?q=ep")
    [report] = datasets["hits"]
    assert (report["name"], report["namespace"], report["run_id"], report["eventType"]) == (
        "report",
        "db",
        RUNS["r3"],
        "START",
    )
    assert [f["name"] for f in report["facets"]["schema"]["fields"]] == ["sum"]
    assert datasets["highlights"] == [{"name": ["r<em>ep</em>ort"]}]
    # A job that never ran has no run; a deleted one is not found.
    idle = get(ui, "/api/v2beta/search/jobs?q=idle")["hits"][0]
    assert (idle["run_id"], idle["eventType"]) == (None, None)
    ui.delete("/api/v1/namespaces/etl/jobs/idle")
    assert get(ui, "/api/v2beta/search/jobs?q=idle") == {"hits": [], "highlights": []}
    assert ui.get("/api/v2beta/search/jobs").status_code == 400
    assert ui.get("/api/v2beta/search/datasets?q=").status_code == 400


def test_without_a_fixed_clock_the_last_interval_holds_now(client: TestClient) -> None:
    """Without the test's clock, the last interval holds the real now."""
    answer = get(client, "/api/v1/stats/jobs?period=DAY")
    start = datetime.fromisoformat(answer[-1]["startInterval"])
    end = datetime.fromisoformat(answer[-1]["endInterval"])
    assert start <= datetime.now(UTC) < end + timedelta(seconds=5)
    assert answer[-1]["count"] == 0
