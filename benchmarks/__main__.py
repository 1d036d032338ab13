"""`python -m benchmarks`: generate workloads, measure ingest and queries, check exactness.

Results go to benchmarks/out/results-<size>.json (git-ignored) and are printed as tables.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from benchmarks import answers, report
from benchmarks.bulk_insert import run_bulk
from benchmarks.databases import KINDS, fresh_database, postgres_available
from benchmarks.decoding import run_decoding
from benchmarks.exactness import check
from benchmarks.generator import (
    GENERATOR_VERSION,
    SIZES,
    Size,
    generate,
    load_summary,
    load_truth,
)
from benchmarks.ingest import MODES, run_ingest
from benchmarks.prune import run_prune
from benchmarks.queries import load_store, run_queries
from benchmarks.scaleout import run_scaleout
from benchmarks.scoped_walks import run_scoped_walks
from benchmarks.startup import TARGET_SECONDS, measure
from benchmarks.watch import run_watch
from upstream.store.engine import Store

OUT = Path(__file__).resolve().parent / "out"

app = typer.Typer(
    help="Upstream benchmarks: ingest throughput and lineage latency against same-run "
    "baselines, and exactness against the generator's ground truth.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

SizeOption = Annotated[str, typer.Option(help=f"Workload size: {', '.join(SIZES)}.")]
SeedOption = Annotated[int, typer.Option(help="Generator seed.")]
DbOption = Annotated[
    list[str] | None, typer.Option("--db", help="sqlite and/or postgresql (default: both).")
]
OutOption = Annotated[Path, typer.Option(help="Where workloads and results go.")]
ConcurrencyOption = Annotated[int, typer.Option(help="Connections for single posts.")]
ProcessesOption = Annotated[
    int,
    typer.Option(
        help="Separate servers (each `serve --workers N`) the HTTP clients spread over; several "
        "single-worker servers stand in for --workers on a busy machine, where uvicorn's "
        "supervisor kills a worker that misses its 5 s health check.",
        min=1,
    ),
]
BatchConnectionsOption = Annotated[
    int, typer.Option(help="Connections for batches (the kernel spreads them over the workers).")
]


def _size(name: str) -> None:
    if name not in SIZES:
        raise typer.BadParameter(f"unknown size {name!r}; choose one of {', '.join(SIZES)}")


def _kinds(db: list[str] | None) -> list[str]:
    kinds = db or list(KINDS)
    for kind in kinds:
        if kind not in KINDS:
            raise typer.BadParameter(f"unknown database {kind!r}; choose from {KINDS}")
    if "postgresql" in kinds and (problem := postgres_available()):
        typer.echo(f"skipping PostgreSQL: {problem}", err=True)
        kinds = [k for k in kinds if k != "postgresql"]
    return kinds


def _workload(size: str, seed: int, out: Path, days: int | None = None) -> Path:
    """The workload directory, generated when missing or made with another seed or days."""
    data_dir = out / size
    wanted = _sized(size, days)
    summary = load_summary(data_dir) if (data_dir / "summary.json").exists() else {}
    if (
        not (data_dir / "truth.json").exists()
        or summary.get("seed") != seed
        or summary.get("days") != wanted.days
        or summary.get("generator") != GENERATOR_VERSION
    ):
        workload = generate(wanted, seed, data_dir)
        typer.echo(f"generated {size}: {workload.events} events, {len(workload.jobs)} jobs")
        summary = load_summary(data_dir)
    typer.echo(f"{size}: {summary['events']:,} events; {report.event_sizes(summary)}")
    return data_dir


def _sized(size: str, days: int | None) -> Size:
    """The size, with fewer (or more) days of runs when asked: the same warehouse graph with
    a shorter history, for a large size that would not fit the time at hand."""
    return SIZES[size] if days is None else replace(SIZES[size], days=days)


DaysOption = Annotated[
    int | None, typer.Option(help="Days of daily runs (default: the size's own).", min=1)
]


@app.command("generate")
def generate_command(
    size: SizeOption = "small", seed: SeedOption = 7, days: DaysOption = None, out: OutOption = OUT
) -> None:
    """Write <out>/<size>/events.ndjson and truth.json (the ground-truth edges)."""
    _size(size)
    workload = generate(_sized(size, days), seed, out / size)
    truth = workload.truth
    typer.echo(
        f"{size}: {workload.events:,} events, {len(workload.jobs):,} jobs, "
        f"{len(workload.workflows):,} workflows, {len(truth.dataset_edges):,} dataset edges, "
        f"{len(truth.field_edges):,} field edges, {len(truth.sql_field_edges):,} field edges "
        f"in plain jobs' SQL -> {out / size}"
    )
    typer.echo(report.event_sizes(load_summary(out / size)))


@app.command("ingest")
def ingest_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    db: DbOption = None,
    mode: Annotated[
        list[str] | None, typer.Option(help=f"Ingest paths: {', '.join(MODES)} (default: all).")
    ] = None,
    batch: Annotated[int, typer.Option(help="Events per batch (100-1000).")] = 500,
    concurrency: ConcurrencyOption = 8,
    batch_connections: BatchConnectionsOption = 8,
    workers: Annotated[int, typer.Option(help="Server worker processes.")] = 2,
    processes: ProcessesOption = 1,
    consumers: Annotated[
        int, typer.Option(help="`upstream consume` processes of the kafka path.")
    ] = 1,
    limit: Annotated[
        int | None, typer.Option(help="Ingest only the first N events (no exactness).")
    ] = None,
    days: DaysOption = None,
    out: OutOption = OUT,
) -> None:
    """Events/s by each ingest path, with the ceiling (bare COPY/executemany) and exactness."""
    _size(size)
    data_dir = _workload(size, seed, out, days)
    results = report.load_results(out, size)
    results["events"] = load_summary(data_dir)["events"]
    results["event_bytes"] = load_summary(data_dir)["event_bytes"]
    results["machine"] = report.machine()
    rows = []
    for kind in _kinds(db):
        for name in mode or list(MODES):
            result = run_ingest(
                name, kind, data_dir, out,
                batch=batch, concurrency=concurrency, batch_connections=batch_connections,
                workers=workers, processes=processes, consumers=consumers, limit=limit,
            )  # fmt: skip
            row = result.as_dict()
            rows.append(row)
            label = f"{name} x{consumers}" if name == "kafka" else name
            results["ingest"][f"{kind} {label}"] = row
            report.print_ingest([row], f"{size}: {kind} {name}")
            report.save_results(out, size, results)
    report.print_ingest(rows, f"Ingest, {size} workload")


@app.command("queries")
def queries_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    db: DbOption = None,
    repetitions: Annotated[int, typer.Option(help="Timed repetitions per query.")] = 20,
    workers: Annotated[int, typer.Option(help="Server worker processes.")] = 2,
    url: Annotated[
        str | None,
        typer.Option(help="A database already holding this workload (default: load a fresh one)."),
    ] = None,
    only: Annotated[
        list[str] | None, typer.Option(help="Only the queries whose name contains this.")
    ] = None,
    days: DaysOption = None,
    out: OutOption = OUT,
) -> None:
    """Median and p95 latency of the lineage queries, beside a networkx walk in memory."""
    _size(size)
    data_dir = _workload(size, seed, out, days)
    results = report.load_results(out, size)
    results["events"] = load_summary(data_dir)["events"]
    results["event_bytes"] = load_summary(data_dir)["event_bytes"]
    rows = []
    memory = {}
    index = {}
    for kind in _kinds(db):
        measured = run_queries(
            kind, data_dir, out,
            repetitions=repetitions, workers=workers, url=url, only=only or (),
        )  # fmt: skip
        for row in measured.rows:
            results["queries"][f"{kind} {row['query']}"] = row
        rows.extend(measured.rows)
        memory[kind] = results["worker_memory_mb"][kind] = measured.worker_memory_mb
        index[kind] = results.setdefault("index", {})[kind] = measured.index
        results.setdefault("failed", {})[kind] = measured.failed
        report.save_results(out, size, results)
        report.print_failed(kind, measured.failed)
    report.print_queries(
        rows, f"Queries, {size} workload ({repetitions} repetitions)", memory, index
    )


@app.command("scoped")
def scoped_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    repetitions: Annotated[int, typer.Option(help="Timed repetitions per walk.")] = 20,
    out: OutOption = OUT,
) -> None:
    """What a token scoped to some namespaces costs a walk: the same walks with a full and a
    scoped token, in process on SQLite, and their ratio against the limit."""
    _size(size)
    rows = run_scoped_walks(_workload(size, seed, out), out, repetitions)
    results = report.load_results(out, size)
    results["scoped_walks"] = rows
    report.save_results(out, size, results)
    for row in rows:
        verdict = "ok" if row["ratio"] <= row["limit"] else "OVER THE LIMIT"
        typer.echo(
            f"{row['walk']}: full {row['full_ms']} ms, scoped {row['scoped_ms']} ms, "
            f"ratio {row['ratio']} (limit {row['limit']}: {verdict}); "
            f"{row['scoped_relations']}/{row['full_relations']} relations shown, "
            f"{row['hidden_nodes']} nodes and {row['hidden_relations']} relations hidden"
        )


@app.command("bulk")
def bulk_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    batch: Annotated[int, typer.Option(help="Events per batch the statements stand for.")] = 500,
    repetitions: Annotated[int, typer.Option(help="Tries per method and table.", min=1)] = 5,
    out: OutOption = OUT,
) -> None:
    """PostgreSQL: binary COPY against INSERT … SELECT FROM unnest for the write path's bulk
    inserts, on the workload's own rows, in the same run (median of the tries)."""
    _size(size)
    if problem := postgres_available():
        typer.echo(f"PostgreSQL is needed: {problem}", err=True)
        raise typer.Exit(1)
    data_dir = _workload(size, seed, out)
    rows = [r.as_dict() for r in run_bulk(data_dir, out, batch, repetitions)]
    for row in _recorded(out, size, "bulk_insert", rows):
        typer.echo(
            f"{row['table']}: {row['rows']:,} rows in {row['statements']} statements: "
            f"unnest {row['unnest_s']} s, COPY {row['copy_s']} s "
            f"(COPY {row['copy_speedup']}x unnest's speed)"
        )


@app.command("decoding")
def decoding_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    events: Annotated[int, typer.Option(help="Events decoded per try.", min=1)] = 2000,
    repetitions: Annotated[int, typer.Option(help="Tries per decoder.", min=1)] = 5,
    out: OutOption = OUT,
) -> None:
    """msgspec against pydantic on the workload's events: the event envelope and the schema
    and columnLineage facets, microseconds each, in the same run (median of the tries)."""
    _size(size)
    rows = run_decoding(_workload(size, seed, out), events, repetitions)
    for row in _recorded(out, size, "decoding", rows):
        typer.echo(
            f"{row['what']} ({row['count']:,}): pydantic {row['pydantic_us']} µs, "
            f"msgspec {row['msgspec_us']} µs (msgspec {row['msgspec_speedup']}x pydantic's speed)"
        )


def _recorded(out: Path, size: str, key: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows`, after saving them under `key` in the size's results."""
    results = report.load_results(out, size)
    results[key] = rows
    report.save_results(out, size, results)
    return rows


@app.command("exactness")
def exactness_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    db: DbOption = None,
    days: DaysOption = None,
    shuffle: Annotated[
        int | None,
        typer.Option(
            help="Ingest one event per transaction, in the order this seed shuffles them into."
        ),
    ] = None,
    out: OutOption = OUT,
) -> None:
    """Stored dataset and field edges against the ground truth: precision and recall."""
    _size(size)
    data_dir = _workload(size, seed, out, days)
    truth = load_truth(data_dir)
    results = report.load_results(out, size)
    rows = []
    for kind in _kinds(db):
        with fresh_database(kind, f"{size}_exactness_{kind}", out) as url:
            load_store(url, data_dir, shuffle=shuffle)
            store = Store(url)
            try:
                scores = [s.as_dict() for s in check(store, truth)]
            finally:
                store.dispose()
        for row in scores:
            row["db"] = kind
            results["exactness"][f"{kind} {row['name']}"] = row
        rows.extend(scores)
        report.save_results(out, size, results)
    report.print_exactness(rows, f"Exactness, {size} workload")
    if any(r["precision"] != 1.0 or r["recall"] != 1.0 for r in rows):
        raise typer.Exit(1)


@app.command("prune")
def prune_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    db: DbOption = None,
    days: DaysOption = None,
    out: OutOption = OUT,
) -> None:
    """Retention: the workload's history stretched over months, then a prune of its first two
    thirds, by rows (a dry run) and by dropping whole months (the prune)."""
    _size(size)
    data_dir = _workload(size, seed, out, days)
    results = report.load_results(out, size)
    for kind in _kinds(db):
        figures = run_prune(kind, data_dir, out).as_dict()
        results.setdefault("prune", {})[kind] = figures
        report.save_results(out, size, results)
        typer.echo(
            f"{size} {kind}: {figures['events']:,} events ingested in {figures['ingest_s']} s "
            f"({figures['ingest_cpu_ms_per_event']} CPU ms/event); the prune removed "
            f"{figures['events_removed']:,} events of {figures['runs_removed']:,} runs, "
            f"{figures['partitions_dropped']} partitions dropped whole: "
            f"{figures['prune_s']} s, by rows (dry run) {figures['by_rows_s']} s; "
            f"load {figures['load']}"
        )


@app.command("watch")
def watch_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    db: DbOption = None,
    subscriptions: Annotated[int, typer.Option(help="Subscriptions with a dead webhook.")] = 100,
    out: OutOption = OUT,
) -> None:
    """Batched ingest events/s with subscriptions whose webhook is dead, against none."""
    _size(size)
    data_dir = _workload(size, seed, out)
    results = report.load_results(out, size)
    for kind in _kinds(db):
        row = run_watch(kind, data_dir, out, subscriptions=subscriptions).as_dict()
        results.setdefault("watch", {})[kind] = row
        report.save_results(out, size, results)
        typer.echo(json.dumps(row))


@app.command("scaleout")
def scaleout_command(
    posts: Annotated[
        int, typer.Option(help="Single-event posts to each of direct and front.")
    ] = 2000,
    concurrency: Annotated[int, typer.Option(help="Connections posting at once.")] = 8,
    reads: Annotated[int, typer.Option(help="Write-then-read pairs per case.")] = 200,
    out: OutOption = OUT,
) -> None:
    """PostgreSQL only (a private primary and streaming replica, a Tansu broker): a publishing
    front's acknowledgements against direct ingest, replica lag under batched ingest, and the
    wait `?after=` adds to a read."""
    row = run_scaleout(out / "scaleout", posts, concurrency, reads).as_dict()
    results = report.load_results(out, "scaleout")
    results["scaleout"] = row
    report.save_results(out, "scaleout", results)
    typer.echo(json.dumps(row, indent=2))


@app.command("startup")
def startup_command(
    repetitions: Annotated[int, typer.Option(help="Fresh interpreters per case.", min=1)] = 7,
) -> None:
    """How long the command line takes to start: `import upstream.cli` and `upstream
    --version`, against the CLI framework's own import in the same run."""
    report.print_startup(measure(repetitions), TARGET_SECONDS)


@app.command("all")
def all_command(
    size: SizeOption = "small",
    seed: SeedOption = 7,
    db: DbOption = None,
    batch: Annotated[int, typer.Option(help="Events per batch (100-1000).")] = 500,
    concurrency: ConcurrencyOption = 8,
    batch_connections: BatchConnectionsOption = 8,
    single_limit: Annotated[
        int | None,
        typer.Option(help="Post only the first N events one by one (no exactness for that run)."),
    ] = None,
    repetitions: Annotated[int, typer.Option(help="Timed repetitions per query.")] = 20,
    workers: Annotated[int, typer.Option(help="Server worker processes.")] = 2,
    processes: ProcessesOption = 1,
    days: DaysOption = None,
    mode: Annotated[
        list[str] | None, typer.Option(help=f"Ingest paths: {', '.join(MODES)} (default: all).")
    ] = None,
    out: OutOption = OUT,
) -> None:
    """Everything for one size: each ingest path with its ceiling and exactness, then the
    queries on the database the batched HTTP ingest filled."""
    _size(size)
    data_dir = _workload(size, seed, out, days)
    results = report.load_results(out, size)
    results["events"] = load_summary(data_dir)["events"]
    results["event_bytes"] = load_summary(data_dir)["event_bytes"]
    results["machine"] = report.machine()
    ingested: list[dict[str, object]] = []
    queried: list[dict[str, object]] = []
    memory: dict[str, dict[str, float]] = {}
    index: dict[str, dict[str, float]] = {}

    def queries_on(kind: str) -> Callable[[str], None]:
        def run(url: str) -> None:
            measured = run_queries(
                kind, data_dir, out,
                repetitions=repetitions, workers=workers, processes=processes, url=url,
            )  # fmt: skip
            for row in measured.rows:
                results["queries"][f"{kind} {row['query']}"] = row
            queried.extend(measured.rows)
            memory[kind] = results["worker_memory_mb"][kind] = measured.worker_memory_mb
            index[kind] = results.setdefault("index", {})[kind] = measured.index
            report.print_failed(kind, measured.failed)
            report.print_queries(
                measured.rows,
                f"{size}: {kind} queries",
                {kind: measured.worker_memory_mb},
                {kind: measured.index},
            )

        return run

    for kind in _kinds(db):
        for name in mode or list(MODES):
            result = run_ingest(
                name, kind, data_dir, out,
                batch=batch, concurrency=concurrency, batch_connections=batch_connections,
                workers=workers, processes=processes,
                limit=single_limit if name == "http-single" else None,
                after=queries_on(kind) if name == "http-batch" else None,
            )  # fmt: skip
            row = result.as_dict()
            row["load_after"] = report.machine()["load"]
            results["ingest"][f"{kind} {name}"] = row
            ingested.append(row)
            report.print_ingest([row], f"{size}: {kind} {name}")
            report.save_results(out, size, results)
    report.print_ingest(ingested, f"Ingest, {size} workload")
    report.print_queries(
        queried, f"Queries, {size} workload ({repetitions} repetitions)", memory, index
    )
    startup = measure()
    results["startup"] = startup
    report.save_results(out, size, results)
    report.print_startup(startup, TARGET_SECONDS)


@app.command("answers")
def answers_command(
    size: SizeOption = "medium",
    seed: SeedOption = 7,
    db: Annotated[str, typer.Option(help="sqlite or postgresql.")] = "sqlite",
    save: Annotated[
        Path | None, typer.Option(help="Record the answers and their manifest in this folder.")
    ] = None,
    compare: Annotated[
        Path | None,
        typer.Option(help="Ask a recording's variants again and say which answers differ."),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(help="A database already holding this workload (default: load a fresh one)."),
    ] = None,
    keep_db: Annotated[
        bool, typer.Option(help="Keep the freshly loaded database (to pass as --url later).")
    ] = False,
    processes: Annotated[
        int,
        typer.Option(
            help="Single-worker servers answering at once (not one server with several "
            "workers: uvicorn's supervisor kills a worker that misses its 5 s health check, "
            "which one building a large answer on a busy machine can).",
            min=1,
        ),
    ] = 2,
    resume: Annotated[
        bool, typer.Option(help="Keep the answers already in the --save folder; ask the rest.")
    ] = False,
    days: DaysOption = None,
    out: OutOption = OUT,
) -> None:
    """The answers of a few hundred query variants as canonical JSON with a manifest of their
    hashes (--save), or the same variants asked again and compared (--compare)."""
    _size(size)
    if save is None and compare is None:
        raise typer.BadParameter("give --save DIR, --compare DIR or both")
    (kind,) = _kinds([db]) or [""]
    if not kind:
        raise typer.Exit(1)
    data_dir = _workload(size, seed, out, days)
    summary = load_summary(data_dir)
    asked = (
        answers.recorded_variants(answers.load_manifest(compare))
        if compare is not None
        else answers.variants(summary)
    )
    folder = save or out / f"answers-{size}-{kind}"
    workload = {k: summary[k] for k in ("size", "seed", "generator", "events", "days")}
    workload["db"] = kind

    def record(database: str) -> None:
        typer.echo(f"asking {len(asked)} variants of {database}")
        done = folder if resume else None
        asking = answers.ask_all(database, out, asked, processes, done)
        manifest = answers.save(asking, folder, workload)
        typer.echo(f"{len(manifest['answers'])} answers -> {folder}")

    if url is not None:
        record(url)
    else:
        label = f"{size}_answers_{kind}"
        with fresh_database(kind, label, out, keep=keep_db) as fresh:
            load_store(fresh, data_dir)
            record(fresh)
            if keep_db:
                typer.echo(f"kept the database: {fresh}")
    if compare is not None:
        _compare_recordings(compare, folder)


def _compare_recordings(before: Path, after: Path) -> None:
    """Print how two recordings differ; exit 1 unless every answer is the same."""
    result = answers.compare(before, after)
    answers.print_comparison(result, before, after)
    if not result.identical:
        raise typer.Exit(1)


@app.command("compare-answers")
def compare_answers_command(
    before: Annotated[Path, typer.Argument(help="A folder recorded by `answers --save`.")],
    after: Annotated[Path, typer.Argument(help="Another such folder.")],
) -> None:
    """Which answers of two recordings differ (two stores, or before and after a change)."""
    _compare_recordings(before, after)


@app.command("growth")
def growth_command(
    sizes: Annotated[
        list[str] | None, typer.Option("--size", help="Sizes, small to large.")
    ] = None,
    out: OutOption = OUT,
) -> None:
    """How time grows with data between the sizes measured so far."""
    report.print_growth(report.growth(out, sizes or ["small", "medium", "large"]))


if __name__ == "__main__":
    app()
