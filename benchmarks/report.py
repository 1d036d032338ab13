"""Results: kept as JSON per size under the output directory, printed as Rich tables, and
compared across sizes (growth: 10x data -> how many times the time)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

console = Console(width=150)


def machine() -> dict[str, Any]:
    """The machine the figures come from, and how busy it was (1/5/15-minute load)."""
    cpu = "unknown"
    with Path("/proc/cpuinfo").open(encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_kb = 0
    with Path("/proc/meminfo").open(encoding="utf-8") as info:
        for line in info:
            if line.startswith("MemTotal"):
                memory_kb = int(line.split()[1])
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gb": round(memory_kb / 1024 / 1024, 1),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def event_sizes(summary: dict[str, Any]) -> str:
    """The workload's event sizes as one line: median, p10, p90 and the file's size."""
    sizes = summary["event_bytes"]
    return (
        f"event size median {sizes['median'] / 1000:.1f} kB (p10 {sizes['p10'] / 1000:.1f}, "
        f"p90 {sizes['p90'] / 1000:.1f}), {sizes['total'] / 1e6:,.0f} MB of events"
    )


def results_path(out_dir: Path, size: str) -> Path:
    return out_dir / f"results-{size}.json"


def load_results(out_dir: Path, size: str) -> dict[str, Any]:
    path = results_path(out_dir, size)
    if path.exists():
        loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        loaded.setdefault("worker_memory_mb", {})
        return loaded
    return {"size": size, "ingest": {}, "queries": {}, "exactness": {}, "worker_memory_mb": {}}


def save_results(out_dir: Path, size: str, results: dict[str, Any]) -> Path:
    path = results_path(out_dir, size)
    path.write_text(json.dumps(results, indent=2, sort_keys=True), encoding="utf-8")
    return path


def print_ingest(rows: list[dict[str, Any]], title: str) -> None:
    """Events/s by path beside the ceiling (the raw payloads alone, by bare COPY or
    executemany, in the same database and run), the load average when the ingest ended and,
    under the batched path, `upstream db rebuild` of the store it filled against the same
    ceiling; then `print_ingest_figures`."""
    table = Table(title=title)
    columns = (
        "db", "mode", "events", "s", "events/s", "CPU ms/ev", "ceiling ev/s", "ratio", "load",
        "P/R ds, fields",
    )  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("db", "mode") else "right")
    for row in rows:
        exact = row.get("exactness") or []
        verdict = (
            "n/a"
            if not exact
            else " ".join(f"{e['precision']:.3f}/{e['recall']:.3f}" for e in exact)
        )
        table.add_row(
            row["db"],
            row["mode"],
            str(row["events"]),
            f"{row['seconds']:.2f}",
            f"{row['events_per_s']:,.0f}",
            f"{row.get('cpu_ms_per_event', 0):.2f}",
            f"{row['ceiling_events_per_s']:,.0f}",
            f"{row['ratio_to_ceiling']:.3f}",
            " ".join(f"{x:.1f}" for x in row.get("load", ())),
            verdict,
        )
        if row.get("rebuild_events_per_s"):
            table.add_row(
                row["db"],
                "db rebuild",
                str(row["events"]),
                f"{row['events'] / row['rebuild_events_per_s']:.2f}",
                f"{row['rebuild_events_per_s']:,.0f}",
                "",
                f"{row['ceiling_events_per_s']:,.0f}",
                f"{row['rebuild_ratio_to_ceiling']:.3f}",
            )
    console.print(table)
    print_ingest_figures(rows)
    sized = next((row for row in rows if row.get("event_bytes")), None)
    if sized:
        console.print(event_sizes({"event_bytes": sized["event_bytes"]}))


def print_ingest_figures(rows: list[dict[str, Any]]) -> None:
    """Per ingest run: seconds PostgreSQL's writers waited on locks (backend-seconds,
    sampled), the paced path's p50/p99 acknowledgement latency, and bytes stored per event,
    the raw events and the derived rows apart."""
    table = Table(title="Locks, latency and storage")
    columns = ("db", "mode", "lock wait s", "p50 ms", "p99 ms", "raw B/ev", "derived B/ev")
    for column in columns:
        table.add_column(column, justify="left" if column in ("db", "mode") else "right")
    for row in rows:
        latency = row.get("latency_ms") or {}
        stored = row.get("bytes_per_event") or {}
        table.add_row(
            row["db"],
            row["mode"],
            f"{row.get('lock_wait_s', 0):.2f}",
            *(f"{latency[q]:,.0f}" if q in latency else "-" for q in ("p50", "p99")),
            *(f"{stored[k]:,.0f}" if k in stored else "-" for k in ("raw_events", "derived")),
        )
    console.print(table)


def print_queries(
    rows: list[dict[str, Any]],
    title: str,
    memory: dict[str, dict[str, float]] | None = None,
    index: dict[str, dict[str, float]] | None = None,
) -> None:
    """The queries' medians beside the in-memory walk's, the limit of three walks plus the
    `/health` round trip and the target, `!` marking each missed; `memory` (per database) is
    the largest worker's resident memory after the queries, and its peak; `index` (per
    database) the graph index's load time and bytes."""
    table = Table(title=title)
    columns = (
        "db", "query", "datasets", "relations", "median ms", "p95 ms", "walk ms", "ratio",
        "3 walks + health", "target ms", "load",
    )  # fmt: skip
    for column in columns:
        table.add_column(column, justify="left" if column in ("db", "query") else "right")
    for row in rows:
        limit = row.get("walk_limit_ms")
        target = row.get("target_ms")
        table.add_row(
            row["db"],
            row["query"] + (" (cut)" if row.get("truncated") else ""),
            f"{row.get('datasets', '')}",
            f"{row.get('relations', row.get('size', ''))}",
            f"{row['median_ms']:.1f}",
            f"{row['p95_ms']:.1f}",
            f"{row['baseline_median_ms']:.2f}",
            f"{row['ratio']:.1f}x",
            "" if limit is None else f"{limit:.1f}{'' if row['within_walk_limit'] else ' !'}",
            "" if target is None else f"{target:g}{'' if row['meets_target'] else ' !'}",
            f"{row['load'][0]:.1f}" if row.get("load") else "",
        )
    console.print(table)
    for db, figures in (index or {}).items():
        console.print(
            f"{db}: /health round trip {figures['health_ms']:.2f} ms; graph index loaded in "
            f"{figures['load_s']:.2f} s ({figures['flow_rows']:,.0f} flow rows, "
            f"{figures['relations']:,.0f} relations, {figures['column_mb']:.1f} MB of columns): "
            f"{figures['bytes_per_flow']:.0f} bytes per flow row, "
            f"{figures['bytes_per_relation']:.0f} per relation"
        )
        if "cli_s" in figures:
            console.print(
                f"{db}: upstream lineage --db (upstream levels=10, fresh process): "
                f"{figures['cli_s']:.2f} s, {figures['cli_cpu_s']:.2f} s of CPU "
                f"(target {figures['cli_target_s']:g} s); "
                f"{figures['cli_ratio']:.1f}x its limit of {figures['cli_limit_s']:.2f} s "
                f"(python -c pass {figures['cli_python_s']:.2f} s + the database handing over "
                f"the rows {figures['cli_rows_s']:.2f} s)"
            )
    for db, used in (memory or {}).items():
        console.print(
            f"{db}: largest server worker after the queries: {used['rss']:.0f} MB resident, "
            f"peak {used['peak']:.0f} MB"
        )


def print_failed(db: str, failed: dict[str, str]) -> None:
    """The queries the server did not answer, and what it said."""
    for query, why in failed.items():
        console.print(f"{db}: {query} was not answered: {why}")


def print_exactness(rows: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    for column in ("db", "edges", "stored", "expected", "precision", "recall"):
        table.add_column(column, justify="left" if column in ("db", "edges") else "right")
    for row in rows:
        table.add_row(
            row["db"],
            row["name"],
            str(row["stored"]),
            str(row["expected"]),
            f"{row['precision']:.4f}",
            f"{row['recall']:.4f}",
        )
    console.print(table)


def growth(out_dir: Path, sizes: list[str]) -> list[dict[str, Any]]:
    """For each measurement present in consecutive sizes: how the time grew with the data."""
    loaded = [(s, load_results(out_dir, s)) for s in sizes]
    rows: list[dict[str, Any]] = []
    for (small_name, small), (big_name, big) in itertools.pairwise(loaded):
        for key, before in small["ingest"].items():
            after = big["ingest"].get(key)
            if after:
                rows.append(
                    _growth_row(
                        f"ingest {key}", small_name, big_name,
                        before["events"], after["events"],
                        before["seconds"], after["seconds"],
                    )
                )  # fmt: skip
        for key, before in small["queries"].items():
            after = big["queries"].get(key)
            if after:
                rows.append(
                    _growth_row(
                        f"query {key}", small_name, big_name,
                        small["events"], big["events"],
                        before["median_ms"], after["median_ms"],
                    )
                )  # fmt: skip
    return rows


def _growth_row(
    name: str, small: str, big: str, n_small: int, n_big: int, t_small: float, t_big: float
) -> dict[str, Any]:
    return {
        "measurement": name,
        "from": small,
        "to": big,
        "data_factor": n_big / n_small if n_small else 0.0,
        "time_factor": t_big / t_small if t_small else 0.0,
    }


def print_growth(rows: list[dict[str, Any]]) -> None:
    table = Table(title="Growth: data x -> time x (ingest: total seconds; queries: median)")
    for column in ("measurement", "from -> to", "data x", "time x"):
        table.add_column(column, justify="left" if column != "data x" else "right")
    for row in rows:
        table.add_row(
            row["measurement"],
            f"{row['from']} -> {row['to']}",
            f"{row['data_factor']:.1f}",
            f"{row['time_factor']:.2f}",
        )
    console.print(table)


def print_startup(rows: list[dict[str, Any]], target: float) -> None:
    """The command line's start-up, each case against the framework's own import."""
    table = Table(title=f"Command-line start-up (target for import upstream.cli: {target} s idle)")
    for column in ("case", "median s", "x baseline", "baseline"):
        table.add_column(
            column, justify="right" if column in ("median s", "x baseline") else "left"
        )
    for row in rows:
        table.add_row(row["case"], f"{row['seconds']:.3f}", f"{row['ratio']:.2f}", row["baseline"])
    console.print(table)
    console.print(f"load: {machine()['load']}")
