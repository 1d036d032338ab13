"""`upstream db prune`: retention by hand, with a summary of what went (or would go)."""

from __future__ import annotations

from datetime import UTC, datetime

from upstream.commands.database import database
from upstream.commands.failures import CliError, ParameterError
from upstream.model.timeexpr import parse_time_expression
from upstream.retention import prune_store
from upstream.store.prune import PruneReport

#: How the summary names each table's rows.
_WHAT = {
    "events": "raw events",
    "flows": "data flows",
    "runs": "runs",
    "relations": "dataset reads and writes",
    "lineage_links": "runs' links to their lineage edges",
    "dataset_versions": "dataset versions",
    "run_operation_sets": "recorded field operations",
    "operation_sets": "unused field operation sets",
    "lineage_set_edges": "lineage edges no run states any more",
    "lineage_sets": "unused lineage sets",
    "datasets": "datasets",
    "jobs": "jobs",
    "namespaces": "namespaces",
    "published_batches": "decided batches of publishing fronts",
}


def prune_database(db_url: str, before: str, *, keep_events: bool, dry_run: bool) -> str:
    """Prune the database at `db_url` of runs that ended before `before`; the summary."""
    try:
        cutoff = parse_time_expression(before, datetime.now(UTC))
    except ValueError as exc:
        raise ParameterError(f"--before: {exc}") from None
    with database(db_url, migrate=True) as store:
        report = prune_store(store, cutoff, keep_events=keep_events, dry_run=dry_run)
    if report is None:
        raise CliError("another process is pruning this database; try again when it is done")
    return summary(report)


def summary(report: PruneReport) -> str:
    """`removed 3 runs, 6 raw events … that ended before <cutoff>` (or `would remove`), and
    the months dropped whole on PostgreSQL."""
    verb = "would remove" if report.dry_run else "removed"
    counts = [f"{n:,} {_WHAT.get(table, table)}" for table, n in report.removed.items() if n]
    when = report.cutoff.isoformat().replace("+00:00", "Z")
    if not counts:
        return f"nothing to remove: no run ended before {when}"
    text = f"{verb} {', '.join(counts)} (runs that ended before {when})"
    months = sorted({name.rpartition("_")[2] for name in report.dropped})
    if months:
        dropped = "would drop" if report.dry_run else "dropped"
        shown = ", ".join(f"{m[:4]}-{m[4:]}" for m in months)
        text += f"; {dropped} the months {shown} whole ({len(report.dropped)} partitions)"
    return text
