"""The benchmark suite at its tiny size, end to end, so it keeps working: the generator (its
events' shape and its truth), an ingest benchmark through a live server into SQLite (with its
raw-payload ceiling), exactness 1.0, and recorded answers compared with themselves.
No timing is asserted; the numbers belong to `python -m benchmarks`."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from benchmarks import answers, queries
from benchmarks.__main__ import app
from benchmarks.ceiling import ceiling_seconds, event_key
from benchmarks.databases import fresh_database
from benchmarks.decoding import run_decoding
from benchmarks.exactness import check
from benchmarks.generator import (
    DATASET_FIELDS,
    EDGE_SETS,
    SIZES,
    Dataset,
    generate,
    load_summary,
    load_truth,
    read_events,
)
from benchmarks.ingest import PACED_RATE, run_ingest
from benchmarks.ingest_figures import LockWaits, stored_bytes
from benchmarks.queries import load_store
from benchmarks.sql_text import identifier
from typer.testing import CliRunner

from tests.conftest import truncate_tables
from upstream.store.engine import Store


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "tiny"
    generate(SIZES["tiny"], 7, out)
    return out


@pytest.fixture(scope="module")
def events(tiny: Path) -> list[dict]:
    return [json.loads(line) for line in read_events(tiny)]


def test_generator_is_deterministic(tiny: Path, tmp_path: Path) -> None:
    again = tmp_path / "tiny"
    generate(SIZES["tiny"], 7, again)
    assert (again / "events.ndjson").read_bytes() == (tiny / "events.ndjson").read_bytes()
    assert (again / "truth.json").read_bytes() == (tiny / "truth.json").read_bytes()
    other = tmp_path / "other"
    generate(SIZES["tiny"], 8, other)
    assert (other / "events.ndjson").read_bytes() != (tiny / "events.ndjson").read_bytes()


def test_generator_truth_follows_the_plan(tiny: Path) -> None:
    workload = generate(SIZES["tiny"], 7, tiny.parent / "again")
    truth = load_truth(tiny)
    assert truth["events"] == workload.events
    # Every run is a START and a COMPLETE: two events per task run and per workflow run.
    runs = {row[3] for row in truth["accesses"]}
    days = SIZES["tiny"].days
    assert len(runs) == days * len(workload.jobs)
    assert workload.events == 2 * days * (len(workload.jobs) + len(workload.workflows))
    edges = truth["dataset_edges"]
    for job in workload.jobs:
        mine = {(e[0], e[1], e[2], e[3]) for e in edges if e[4] == job.name}
        plain_names = {(d.namespace, d.name) for d in job.inputs if not d.temporary}
        if job.style == "plain" and not any(d.temporary for d in job.inputs + job.outputs):
            # No column lineage and no lineage facet: every input flows into every output.
            expected = {(*i, o.namespace, o.name) for i in plain_names for o in job.outputs}
            assert mine == expected
        if job.style == "facet":
            # The last input is a lookup no lineage entry names: it flows nowhere.
            lookup = job.inputs[-1]
            if len(job.inputs) > 1 and not lookup.temporary:
                assert all((e[0], e[1]) != (lookup.namespace, lookup.name) for e in mine)


def test_truth_loads_as_written_with_each_string_kept_once(tiny: Path) -> None:
    """The edges read row by row are the rows written, and a name or run id that many rows
    repeat is one string object (the large size's truth took about 10 GB otherwise)."""
    truth = load_truth(tiny)
    written = json.loads((tiny / "truth.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in truth.items() if k not in EDGE_SETS} == {
        k: v for k, v in written.items() if k not in EDGE_SETS
    }
    for key in EDGE_SETS:
        assert truth[key] == {tuple(row) for row in written[key]}
    strings = [value for key in EDGE_SETS for row in truth[key] for value in row]
    assert len(strings) > 10 * len(set(strings))
    assert len({id(value) for value in strings}) == len(set(strings))


def test_truth_with_an_empty_or_missing_edge_set_loads(tmp_path: Path) -> None:
    (tmp_path / "truth.json").write_text(
        '{"events": 2, "window": ["a", "b"], "dataset_edges": [["p", "q", "r"], ["p", "s", "r"]]'
        ', "field_edges": [], "accesses": [["q", "j", "1"]]}',
        encoding="utf-8",
    )
    truth = load_truth(tmp_path)
    assert truth == {
        "events": 2,
        "window": ["a", "b"],
        "dataset_edges": {("p", "q", "r"), ("p", "s", "r")},
        "field_edges": set(),
        "accesses": {("q", "j", "1")},
        "sql_field_edges": set(),
    }


def test_sql_facets_agree_with_the_dataset_truth(tiny: Path) -> None:
    """The field edges a SQL parser would take from the plain jobs' statements connect exactly
    the datasets the inferred inputs x outputs connect, run by run: parsing SQL later must not
    change the dataset-level truth. Other jobs' field edges stay in `field_edges`."""
    workload = generate(SIZES["tiny"], 7, tiny.parent / "sql")
    truth = load_truth(tiny)
    plain = {job.name for job in workload.jobs if job.style == "plain"}
    plain_runs = {row[3] for row in truth["accesses"] if row[2] in plain}
    from_sql = {(e[0], e[1], e[3], e[4], e[6]) for e in truth["sql_field_edges"]}
    inferred = {(e[0], e[1], e[2], e[3], e[5]) for e in truth["dataset_edges"] if e[4] in plain}
    assert truth["sql_field_edges"]
    assert from_sql == inferred
    assert {e[6] for e in truth["sql_field_edges"]} <= plain_runs
    assert not {e[6] for e in truth["field_edges"]} & plain_runs


def test_events_are_as_heavy_as_real_producers(tiny: Path, events: list[dict]) -> None:
    summary = load_summary(tiny)
    sizes = summary["event_bytes"]
    assert sizes["p10"] <= sizes["median"] <= sizes["p90"]
    assert sizes["total"] == sum(len(line) for line in read_events(tiny))
    tasks = [e for e in events if e["job"]["facets"]["jobType"]["jobType"] == "TASK"]
    assert tasks
    for event in tasks:
        facets = event["job"]["facets"]
        statement = facets["sql"]["query"]
        for dataset in event["inputs"] + event["outputs"]:
            assert len(dataset["facets"]["schema"]["fields"]) == DATASET_FIELDS
            assert all(f["type"] for f in dataset["facets"]["schema"]["fields"])
            assert identifier(dataset["name"]) in statement
        assert {"airflow", "processing_engine", "nominalTime"} <= set(event["run"]["facets"])
        if event["eventType"] == "COMPLETE":
            for output in event["outputs"]:
                assert "outputStatistics" in output["outputFacets"]
    # Facets are sent on both events of a run: the job's facets are the same on START and
    # COMPLETE, and a run's column lineage is on every output of a column-style job.
    by_run: dict[str, list[dict]] = {}
    for event in tasks:
        by_run.setdefault(event["run"]["runId"], []).append(event)
    for pair in by_run.values():
        assert [e["eventType"] for e in pair] == ["START", "COMPLETE"]
        assert pair[0]["job"]["facets"] == pair[1]["job"]["facets"]
    column_outputs = [
        o
        for e in tasks
        if "lineage" not in e["job"]["facets"]
        for o in e["outputs"]
        if "columnLineage" in o["facets"]
    ]
    assert column_outputs
    assert all(
        len(o["facets"]["columnLineage"]["fields"]) == DATASET_FIELDS for o in column_outputs
    )


def test_sql_identifiers_name_the_datasets() -> None:
    assert identifier("analytics.int04.orders_7") == "analytics.int04.orders_7"
    assert identifier("landing/app/orders_3/") == '"landing/app/orders_3/"'
    run = "0b9e7d40-6c5a-4f2e-9a57-0c1f7f8f2a11"
    assert identifier(f"analytics.tmp.carts_1_{run}") == f'analytics.tmp."carts_1_{run}"'
    assert Dataset("ns", "analytics.tmp.carts_1", ("id",), "suffix").named(run).endswith(run)


def test_ceiling_stores_each_payload_with_its_key(tiny: Path, tmp_path: Path) -> None:
    payloads = list(read_events(tiny))
    assert event_key(payloads[0]) == event_key(json.dumps(json.loads(payloads[0]), indent=2))
    with fresh_database("sqlite", "ceiling", tmp_path) as url:
        assert ceiling_seconds(url, payloads) > 0
        assert ceiling_seconds(url, payloads) > 0  # the table is dropped after each run


def test_ingest_benchmark_on_sqlite_is_exact(tiny: Path, tmp_path: Path) -> None:
    result = run_ingest("http-batch", "sqlite", tiny, tmp_path, batch=100)
    assert result.events == load_truth(tiny)["events"]
    assert result.seconds > 0
    assert result.ceiling_seconds > 0
    assert result.event_bytes == load_summary(tiny)["event_bytes"]
    assert [(e["name"], e["precision"], e["recall"]) for e in result.exactness] == [
        ("dataset edges", 1.0, 1.0),
        ("field edges", 1.0, 1.0),
        ("SQL field edges", 1.0, 1.0),
    ]
    assert result.bytes_per_event["raw_events"] > 0
    assert result.bytes_per_event["derived"] > 0
    assert result.rebuild_seconds is not None
    assert result.rebuild_seconds > 0
    assert result.as_dict()["rebuild_events_per_s"] == result.events / result.rebuild_seconds


def test_paced_single_posts_report_their_acknowledgement_latency(
    tiny: Path, tmp_path: Path
) -> None:
    result = run_ingest("http-paced", "sqlite", tiny, tmp_path, limit=60)
    assert result.events == 60
    # 60 events offered at 200/s take at least the 0.295 s until the last one is due.
    assert result.seconds >= 59 / PACED_RATE
    assert 0 < result.latency_ms["p50"] <= result.latency_ms["p99"]
    assert "200 events/s offered, 32 connections" in result.detail


def test_lock_waits_count_the_backends_waiting_on_a_lock(postgres_server: str) -> None:
    holder = sa.create_engine(postgres_server)
    waiter = sa.create_engine(postgres_server)
    try:
        with LockWaits(postgres_server) as idle:
            time.sleep(0.2)
        assert idle.seconds == 0
        with holder.begin() as held, LockWaits(postgres_server) as waits:
            held.exec_driver_sql("LOCK TABLE namespaces IN ACCESS EXCLUSIVE MODE")
            with waiter.connect() as conn:
                conn.exec_driver_sql("SET lock_timeout = '600ms'")
                with pytest.raises(sa.exc.OperationalError, match="lock timeout"):
                    conn.exec_driver_sql("SELECT count(*) FROM namespaces")
        assert 0.3 <= waits.seconds <= 0.7
    finally:
        holder.dispose()
        waiter.dispose()


def test_stored_bytes_tell_the_raw_events_from_the_derived_rows(tiny: Path, tmp_path: Path) -> None:
    """The raw events' bytes hold at least their compressed payloads and the dictionaries
    they name (`upstream.store.payloads`), which count with them, not with the derived rows."""
    with fresh_database("sqlite", "stored", tmp_path) as url:
        empty = stored_bytes(url)
        load_store(url, tiny)
        loaded = stored_bytes(url)
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            payloads = conn.exec_driver_sql(
                "SELECT (SELECT sum(length(payload_zstd)) FROM events) + "
                "(SELECT coalesce(sum(length(content)), 0) FROM event_dictionaries)"
            ).scalar_one()
        engine.dispose()
    assert payloads > 0
    assert loaded["raw_events"] - empty["raw_events"] >= payloads
    assert loaded["derived"] > empty["derived"]


def test_the_benchmarks_own_database_work_is_not_held_to_a_request_bound(
    tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading the store, `ANALYZE`, loading the index to measure it and reading its rows get
    minutes, not the 30 s of a request: on a busy machine the index of one day of the large
    workload took longer than that to load, and the run ended there."""
    bounds: list[float] = []
    opened = queries.Store

    def recorded(url: str, **options: object) -> Store:
        store = opened(url, **options)  # type: ignore[arg-type]
        bounds.append(store.timeouts.statement)
        return store

    monkeypatch.setattr(queries, "Store", recorded)
    with fresh_database("sqlite", "bounds", tmp_path) as url:
        load_store(url, tiny)
        queries.analyze(url)
        figures = queries.index_figures(url)
        queries.rows_read_seconds(url)
        queries.latest_run(url, load_truth(tiny)["targets"]["upstream_job"])
    assert figures["flow_rows"] > 0
    assert bounds == [900, 900, 900, 900, 900]


def test_stored_bytes_on_postgresql_count_the_tables_not_partitioned(
    postgres_server: str,
) -> None:
    """Rows added to `namespaces`, a table of its own (not kept in monthly partitions),
    count among the derived rows' bytes."""
    truncate_tables(postgres_server)
    before = stored_bytes(postgres_server)["derived"]
    engine = sa.create_engine(postgres_server)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO namespaces (id, name, created_at, updated_at) "
                "SELECT gen_random_uuid(), 'ns-' || n, now(), now() "
                "FROM generate_series(1, 2000) AS n"
            )
    finally:
        engine.dispose()
    assert stored_bytes(postgres_server)["derived"] > before
    truncate_tables(postgres_server)


def test_decoding_times_both_decoders_on_the_same_events(tiny: Path) -> None:
    rows = run_decoding(tiny, 50, 1)
    assert [row["what"] for row in rows][:2] == [
        "envelope, from the document",
        "envelope, from JSON bytes",
    ]
    assert rows[1]["count"] == 50
    for row in rows:
        assert row["pydantic_us"] > 0
        assert row["msgspec_us"] > 0


def test_events_in_a_shuffled_order_one_per_transaction_are_exact(
    tiny: Path, tmp_path: Path
) -> None:
    """A COMPLETE carrying the SQL stored before the START listing its inputs still
    resolves the SQL's tables to those inputs (design §3.3, arrival order never matters)."""
    with fresh_database("sqlite", "shuffled", tmp_path) as url:
        load_store(url, tiny, shuffle=1)
        store = Store(url)
        try:
            scores = check(store, load_truth(tiny))
        finally:
            store.dispose()
    assert [(s.name, s.precision, s.recall) for s in scores] == [
        ("dataset edges", 1.0, 1.0),
        ("field edges", 1.0, 1.0),
        ("SQL field edges", 1.0, 1.0),
    ]


def test_answers_are_recorded_and_compared(tiny: Path, tmp_path: Path) -> None:
    asked = answers.variants(load_summary(tiny))
    assert len(asked) >= 80
    assert len({v.name for v in asked}) == len(asked)
    subset = [v for v in asked if v.name.startswith(("lineage_mart_upstream_l5", "marquez"))]
    out = tmp_path / "out"
    out.mkdir()
    runner = CliRunner()
    with fresh_database("sqlite", "answers", tmp_path) as url:
        load_store(url, tiny)
        first = answers.save(answers.ask_all(url, out, subset, 1), tmp_path / "a", {})
        result = runner.invoke(
            app,
            ["answers", "--size", "tiny", "--db", "sqlite", "--url", url, "--out", str(tiny.parent),
             "--compare", str(tmp_path / "a"), "--save", str(tmp_path / "b")],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"{len(subset)} identical, 0 different" in result.output
    assert all(entry["status"] == 200 for entry in first["answers"].values())
    # A changed answer is found and its first difference shown.
    name = next(n for n in first["answers"] if n.startswith("marquez_lineage"))
    body = answers.load_answer(tmp_path / "b", name)
    body["body"]["graph"] = body["body"]["graph"][1:]
    (tmp_path / "b" / f"{name}.json.gz").write_bytes(
        gzip.compress(answers.canonical(body), mtime=0)
    )
    manifest = answers.load_manifest(tmp_path / "b")
    manifest["answers"][name]["sha256"] = "changed"
    (tmp_path / "b" / answers.MANIFEST).write_text(json.dumps(manifest))
    compared = runner.invoke(app, ["compare-answers", str(tmp_path / "a"), str(tmp_path / "b")])
    assert compared.exit_code == 1
    assert f"{name}:" in compared.output
    assert "$.body.graph:" in compared.output


def test_differences_name_the_first_changed_places() -> None:
    before = {"relations": [{"data": "a", "runs": ["r1"]}, {"data": "b", "runs": []}], "n": 1}
    after = {"relations": [{"data": "a", "runs": ["r2"]}, {"data": "b", "runs": []}], "n": 2}
    assert answers.differences(before, after) == [
        "$.n: 1 -> 2",
        '$.relations[0].runs[0]: "r1" -> "r2"',
    ]
    shorter = {"relations": [{"data": "b", "runs": []}], "n": 1}
    assert answers.differences(before, shorter) == [
        '$.relations: 2 items -> 1 (1 gone, 0 new); first gone {"data": "a", "runs": ["r1"]}'
    ]
    timed = {"createdAt": "2026-12-01T09:00:00Z", "name": "x"}
    assert answers.canonical(timed) == answers.canonical({**timed, "createdAt": "later"})


def test_help_lists_what_it_runs() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("generate", "ingest", "queries", "exactness", "growth", "answers"):
        assert command in result.output


def test_scoped_walks_measure_both_tokens_on_the_same_walks(tiny: Path, tmp_path: Path) -> None:
    """The scoped-walk benchmark runs end to end: the dataset walks of `WALKS`, then run
    lineage, Marquez's graph and the whole graph; each scoped answer shows no more than the
    full one, and some hide the landing bucket (no timing asserted)."""
    from benchmarks.scoped_walks import LIMIT, WALKS, run_scoped_walks

    rows = run_scoped_walks(tiny, tmp_path, repetitions=1)
    others = ["run lineage", "Marquez graph", "the whole"]
    assert [" ".join(row["walk"].split()[:2]) for row in rows[len(WALKS) :]] == others
    assert [row["walk"].split()[0] for row in rows[: len(WALKS)]] == [w[0] for w in WALKS]
    for row in rows:
        assert row["limit"] == LIMIT
        assert row["scoped_relations"] <= row["full_relations"]
        assert row["ratio"] > 0
    assert any(row["hidden_nodes"] > 0 for row in rows)


def test_a_benchmark_server_is_used_only_once_every_worker_is_ready(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`/health` answers while a worker still loads its lineage index; the benchmark waits for
    `/ready` on enough fresh connections in a row that a worker still loading is seen."""
    from benchmarks import server

    answers_given = iter([200, 503, *([200] * 20)])
    asked: list[str] = []

    class Answer:
        def __init__(self, status_code: int) -> None:
            self.status_code = status_code

    def get(url: str, timeout: float) -> Answer:
        asked.append(url)
        return Answer(next(answers_given))

    monkeypatch.setattr(server.httpx, "get", get)
    monkeypatch.setattr(server.time, "sleep", lambda seconds: None)
    two_workers = server.Server("sqlite://", tmp_path, workers=2)
    two_workers._wait_until_ready(two_workers.port, time.monotonic() + 60)
    # one 200, then a 503 that starts the count again, then the 20 in a row two workers need
    assert len(asked) == 22
    assert all(url.endswith("/ready") for url in asked)
    with pytest.raises(StopIteration):
        next(answers_given)
