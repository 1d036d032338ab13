"""Retention (design §5): `upstream db prune` and the `retention` setting, on both stores.

The history below is worked out by hand. Times are BASE_TIME (T) plus hours; the cutoff is
T+5d, so runs that ended in the first day go, runs of day ten stay:

- `etl.load`: run OLD (T..T+1h) and run NEW (T+10d..T+10d+1h), each writing `w.raw`;
- `etl.stale`: run STALE (T+2h..T+3h) reading `w.legacy` and writing `w.stale_out`: nothing
  else names the job or those datasets, so they go with the run;
- `af.dag`: workflow run DAG (T..T+1h) with task runs TASK1 (T..T+30m) and TASK2
  (T+10d..T+10d+30m): TASK2 stays, so its workflow run stays too, though it ended early;
- `etl.report`: declared by a JobEvent (reads `w.raw`, writes `w.report`): declarations stay.

13 events: two per run and the JobEvent; OLD, STALE and TASK1 (6 events) go.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from tests.builders import BASE_TIME, ds, hours, job_event, run_event
from upstream.cli import app as cli_app
from upstream.model.timeexpr import parse_duration
from upstream.retention import prune_store
from upstream.settings import SettingsError, load_settings
from upstream.store import published_batches
from upstream.store.engine import Store
from upstream.store.published_batches import LATE_COMMIT_MARGIN

CUTOFF = BASE_TIME + timedelta(days=5)
OLD = "00000000-0000-4000-8000-0000000000a1"
NEW = "00000000-0000-4000-8000-0000000000a2"
STALE = "00000000-0000-4000-8000-0000000000a3"
DAG = "00000000-0000-4000-8000-0000000000d0"
TASK1 = "00000000-0000-4000-8000-0000000000d1"
TASK2 = "00000000-0000-4000-8000-0000000000d2"
LATER = {"start": (CUTOFF).isoformat(), "end": (BASE_TIME + timedelta(days=20)).isoformat()}
EVERYTHING = {"start": "0", "end": (BASE_TIME + timedelta(days=20)).isoformat()}


def run(job: tuple[str, str], run_id: str, start: float, end: float, **kw: Any) -> list[Any]:
    return [
        run_event(job, run_id=run_id, event_type="START", time=BASE_TIME + hours(start), **kw),
        run_event(job, run_id=run_id, event_type="COMPLETE", time=BASE_TIME + hours(end), **kw),
    ]


def history() -> list[dict[str, Any]]:
    day10 = 240.0
    dag = (("af", "dag"), DAG)
    return [
        *run(("etl", "load"), OLD, 0, 1, outputs=[ds("w", "raw")]),
        *run(("etl", "load"), NEW, day10, day10 + 1, outputs=[ds("w", "raw")]),
        *run(
            ("etl", "stale"),
            STALE,
            2,
            3,
            inputs=[ds("w", "legacy")],
            outputs=[ds("w", "stale_out")],
        ),
        *run(("af", "dag"), DAG, 0, 1),
        *run(("af", "task1"), TASK1, 0, 0.5, parent=dag),
        *run(("af", "task2"), TASK2, day10, day10 + 0.5, parent=dag),
        job_event(("etl", "report"), inputs=[ds("w", "raw")], outputs=[ds("w", "report")]),
    ]


@pytest.fixture
def loaded(client: TestClient) -> TestClient:
    response = client.post("/api/v1/lineage", json=history())
    assert response.status_code == 201, response.text
    return client


def answers(client: TestClient, window: dict[str, str]) -> dict[str, Any]:
    """What a user sees: lineage around w.raw, lists, and the runs by id."""
    lineage = client.get("/v3/namespaces/w/datasets/raw/lineage", params={**window, "levels": 5})
    datasets = client.get("/api/v1/namespaces/w/datasets")
    jobs = client.get("/api/v1/namespaces/etl/jobs")
    runs = {r: client.get(f"/api/v1/jobs/runs/{r}").status_code for r in (OLD, NEW, DAG, TASK1)}
    return {
        "lineage": lineage.text,
        "datasets": [d["name"] for d in datasets.json()["datasets"]],
        "jobs": [j["name"] for j in jobs.json()["jobs"]],
        "runs": runs,
        "events": len(client.get("/api/v1/events/lineage", params={"limit": 100}).json()["events"]),
    }


def test_prune_removes_old_runs_and_what_only_they_made(loaded: TestClient, store: Store) -> None:
    before = answers(loaded, LATER)
    assert before["events"] == 13
    report = prune_store(store, CUTOFF)
    assert report is not None
    removed = {k: v for k, v in report.removed.items() if v}
    assert removed["runs"] == 3  # OLD, STALE, TASK1
    assert removed["events"] == 6
    assert removed["jobs"] == 2  # etl.stale and af.task1: no run of theirs is left
    assert removed["datasets"] == 2  # w.legacy and w.stale_out
    assert "namespaces" not in removed
    after = answers(loaded, LATER)
    # The kept window answers byte for byte as before.
    assert after["lineage"] == before["lineage"]
    assert after["datasets"] == ["raw", "report"]
    assert after["jobs"] == ["load", "report"]
    assert after["runs"] == {OLD: 404, NEW: 200, DAG: 200, TASK1: 404}
    assert after["events"] == 7
    # Nothing is left to prune.
    again = prune_store(store, CUTOFF)
    assert again is not None
    assert not any(again.removed.values())


def test_a_dry_run_counts_exactly_and_changes_nothing(loaded: TestClient, store: Store) -> None:
    before = answers(loaded, EVERYTHING)
    dry = prune_store(store, CUTOFF, dry_run=True)
    assert answers(loaded, EVERYTHING) == before
    real = prune_store(store, CUTOFF)
    assert dry is not None
    assert real is not None
    assert dry.removed == real.removed
    assert dry.dry_run
    assert not real.dry_run


def test_keep_events_keeps_the_raw_events(loaded: TestClient, store: Store) -> None:
    report = prune_store(store, CUTOFF, keep_events=True)
    assert report is not None
    assert "events" not in report.removed
    assert answers(loaded, EVERYTHING)["events"] == 13
    assert answers(loaded, EVERYTHING)["runs"][OLD] == 404


def test_the_whole_window_loses_only_the_pruned_runs(loaded: TestClient, store: Store) -> None:
    def runs_of_raw() -> set[str]:
        body = loaded.get("/v3/namespaces/w/datasets/raw/lineage", params=EVERYTHING).json()
        return {run for r in body["relations"] for run in r["runs"]}

    assert runs_of_raw() == {OLD, NEW}
    prune_store(store, CUTOFF)
    assert runs_of_raw() == {NEW}


def test_db_prune_command(loaded: TestClient, db_url: str) -> None:
    runner = CliRunner()
    args = ["db", "prune", "--before", CUTOFF.isoformat(), "--db", db_url]
    dry = runner.invoke(cli_app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.startswith("would remove ")
    assert "3 runs" in dry.output
    assert "6 raw events" in dry.output
    done = runner.invoke(cli_app, args)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("removed ")
    assert done.output.strip().endswith("(runs that ended before 2026-11-06T12:00:00Z)")
    nothing = runner.invoke(cli_app, args)
    assert nothing.output.strip() == "nothing to remove: no run ended before 2026-11-06T12:00:00Z"
    bad = runner.invoke(cli_app, ["db", "prune", "--before", "soon", "--db", db_url])
    assert bad.exit_code == 2
    assert "--before" in bad.output


def test_retention_is_a_positive_length_of_time() -> None:
    assert parse_duration("90d") == timedelta(days=90)
    assert parse_duration("1d12h") == timedelta(days=1, hours=12)
    assert parse_duration("+30m") == timedelta(minutes=30)
    for bad in ("", "soon", "0d", "-1d", "90"):
        with pytest.raises(ValueError, match="length of time"):
            parse_duration(bad)
    assert load_settings(retention="90d").retention == "90d"
    with pytest.raises(SettingsError, match="UPSTREAM_RETENTION"):
        load_settings(retention="90 days")


def test_db_prune_removes_the_batch_decisions_no_process_needs(store: Store, db_url: str) -> None:
    long_ago = time.time() - LATE_COMMIT_MARGIN - 1
    store.write(lambda conn: published_batches.abandon(conn, {uuid.uuid4(): long_ago}))
    args = ["db", "prune", "--before", CUTOFF.isoformat(), "--db", db_url]
    done = CliRunner().invoke(cli_app, args)
    assert done.exit_code == 0, done.output
    assert done.output.startswith("removed 1 decided batches of publishing fronts")
