"""Retention (design §5): remove the runs that ended before a cutoff, with what they produced.

What goes: every run that ended before the cutoff, unless a run that stays descends from it
(a workflow run whose tasks are still kept stays, so rollup keeps working); the rows that
exist because of those runs (`RUN_SCOPED`); placeholder runs (known only as a parent) that no
run names any more; their raw events unless asked to keep them; then the operation sets, lineage
sets, jobs, datasets and namespaces nothing refers to any more. Declared lineage (JobEvents,
DatasetEvents) is never run-scoped, so it stays, and so does every entity it names or declares.
Raw events are the truth: those kept with `keep_events` bring their runs back on
`upstream db rebuild`.

The runs to remove are written once into a temporary table and every delete joins it, so a
prune is a fixed number of set-based statements whatever its size. A dry run does the same
inside a savepoint and rolls it back, so its counts are exactly what a prune would remove.
A prune that removed anything tells the readers of the change log to read everything again
(`RELOAD`): it may remove any number of runs and entities, more than a list of ids should hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.change_log import RELOAD, record
from upstream.store.months import month_of
from upstream.store.partitions import drop_partition, month_partitions, rows_in, whole_months

#: Rows that belong to one run, by the column naming it; children before parents.
RUN_SCOPED: tuple[tuple[sa.Table, str], ...] = (
    (t.flows, "owner_id"),
    (t.job_dependencies, "run_id"),
    (t.run_operation_sets, "run_id"),
    (t.lineage_links, "owner_id"),
    (t.relations, "run_id"),
    (t.dataset_versions, "run_id"),
    (t.runs, "id"),
)

_DOOMED = sa.Table(
    "prune_runs",
    sa.MetaData(),
    sa.Column("id", t.Id, primary_key=True),
    prefixes=["TEMPORARY"],
)


@dataclass
class PruneReport:
    """How many rows a prune removed (or, dry, would remove), by table."""

    cutoff: datetime
    removed: dict[str, int] = field(default_factory=dict)
    dry_run: bool = False
    #: The partitions dropped whole (PostgreSQL), or that a dry run would drop.
    dropped: list[str] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return self.removed.get("runs", 0)


def prune(conn: Connection, cutoff: datetime, *, keep_events: bool, dry_run: bool) -> PruneReport:
    """Remove what retention removes at `cutoff`, in the caller's transaction; a dry run
    counts the same rows and changes nothing."""
    report = PruneReport(cutoff=cutoff, dry_run=dry_run)
    trial = conn.begin_nested() if dry_run else None
    _DOOMED.create(conn)
    _collect_runs(conn, cutoff)
    scoped = [(t.events, "run_id"), *RUN_SCOPED] if not keep_events else list(RUN_SCOPED)
    doomed = sa.select(_DOOMED.c.id)
    months = _whole_months(conn)
    removals: list[tuple[sa.Table, sa.ColumnElement[bool]]] = []
    for table, column in scoped:
        dropped = _drop_whole_months(conn, report, table, column, months)
        condition: sa.ColumnElement[bool] = table.c[column].in_(doomed)
        # The rows left to delete are in the months that stay.
        removals.append(
            (table, condition & table.c.month.not_in(dropped) if dropped else condition)
        )
    if not keep_events:
        # Their months go with them; raw events kept keep theirs, for a rebuild to use.
        removals.append((t.run_months, t.run_months.c.run_id.in_(doomed)))
    for table, where in [*removals, *_unreferenced()]:
        removed = int(conn.execute(sa.delete(table).where(where)).rowcount)
        if table is not t.run_months:
            report.removed[table.name] = report.removed.get(table.name, 0) + removed
    if trial is not None:
        trial.rollback()
    else:
        _DOOMED.drop(conn)
        if any(report.removed.values()) or report.dropped:
            record(conn, RELOAD, ())
    return report


def _whole_months(conn: Connection) -> list[int]:
    """The months (PostgreSQL) whose runs all go: partitions of `runs` before the current
    month (writes still go to that one and those ahead) holding only runs to remove."""
    current = month_of(datetime.now(UTC))
    past = [month for month in month_partitions(conn, t.runs.name) if month < current]
    return sorted(whole_months(conn, t.runs.name, "id", _DOOMED.name, past))


def _drop_whole_months(
    conn: Connection, report: PruneReport, table: sa.Table, column: str, months: list[int]
) -> list[int]:
    """On PostgreSQL, drop `table`'s partitions of `months` that hold only rows of runs to
    remove (raw events kept by an earlier prune stay); the months dropped. A dry run only
    names them: its savepoint deletes their rows instead, which counts the same and takes no
    lock that would stop other writers."""
    if not months:
        return []
    whole = whole_months(conn, table.name, column, _DOOMED.name, months)
    report.dropped.extend(whole.values())
    if report.dry_run:
        return []
    for partition in whole.values():
        report.removed[table.name] = report.removed.get(table.name, 0) + rows_in(conn, partition)
        drop_partition(conn, partition)
    return sorted(whole)


def _collect_runs(conn: Connection, cutoff: datetime) -> None:
    """Fill the temporary table `prune_runs` with the ids of the runs to remove."""
    r = t.runs
    ended = sa.select(r.c.id).where(r.c.ended_at < cutoff)
    # Runs that stay, and every ancestor of one: those must stay too.
    staying = sa.select(r.c.parent_run_id.label("id")).where(
        r.c.parent_run_id.is_not(None), sa.or_(r.c.ended_at.is_(None), r.c.ended_at >= cutoff)
    )
    ancestors = staying.cte("ancestors", recursive=True)
    parent = r.alias("parent")
    ancestors = ancestors.union(
        sa.select(parent.c.parent_run_id).where(
            parent.c.id == ancestors.c.id, parent.c.parent_run_id.is_not(None)
        )
    )
    kept = sa.select(ancestors.c.id)
    conn.execute(sa.insert(_DOOMED).from_select(["id"], ended.where(r.c.id.not_in(kept))))
    # Placeholders (a parent whose own events never came) that no remaining run names.
    child = r.alias("child")
    named = sa.select(child.c.parent_run_id).where(
        child.c.parent_run_id.is_not(None), child.c.id.not_in(sa.select(_DOOMED.c.id))
    )
    placeholders = sa.select(r.c.id).where(
        r.c.has_events.is_(False), r.c.id.not_in(named), r.c.id.not_in(sa.select(_DOOMED.c.id))
    )
    conn.execute(sa.insert(_DOOMED).from_select(["id"], placeholders))
    if conn.dialect.name == "postgresql":
        # The planner then knows how many runs go (a temporary table has no statistics).
        conn.execute(sa.text(f"ANALYZE {_DOOMED.name}"))


def _unreferenced() -> list[tuple[sa.Table, sa.ColumnElement[bool]]]:
    """Entities nothing refers to any more and no declaration made, in the order they can be
    deleted (what refers to a row goes before it)."""
    o, d, j, n = t.operation_sets, t.datasets, t.jobs, t.namespaces
    ls, lse = t.lineage_sets, t.lineage_set_edges
    unused_sets = ~sa.exists().where(t.run_operation_sets.c.operation_set_id == o.c.id)
    linked = sa.select(t.lineage_links.c.set_id)
    dataset_refs = [
        sa.select(t.relations.c.dataset_id),
        sa.select(t.dataset_versions.c.dataset_id),
        sa.select(t.operation_sets.c.dataset_id),
        sa.select(t.dataset_symlinks.c.dataset_id),
        sa.select(t.dataset_tags.c.dataset_id),
        sa.select(t.field_tags.c.dataset_id),
        sa.select(lse.c.source_dataset_id).where(lse.c.source_dataset_id.is_not(None)),
        sa.select(lse.c.target_dataset_id).where(lse.c.target_dataset_id.is_not(None)),
        sa.select(t.flows.c.source_dataset_id),
        sa.select(t.flows.c.target_dataset_id),
    ]
    job_refs = [
        sa.select(t.runs.c.job_id),
        sa.select(t.relations.c.job_id),
        sa.select(t.run_operation_sets.c.job_id),
        sa.select(t.job_tags.c.job_id),
        sa.select(t.lineage_links.c.job_id).where(t.lineage_links.c.job_id.is_not(None)),
        sa.select(lse.c.source_job_id).where(lse.c.source_job_id.is_not(None)),
        sa.select(lse.c.target_job_id).where(lse.c.target_job_id.is_not(None)),
        sa.select(t.flows.c.job_id).where(t.flows.c.job_id.is_not(None)),
        sa.select(t.job_dependencies.c.upstream_job_id),
        sa.select(t.job_dependencies.c.downstream_job_id),
    ]
    namespace_refs = [sa.select(d.c.namespace_id), sa.select(j.c.namespace_id)]
    return [
        (o, unused_sets),
        # Lineage sets no link uses (runs pruned, or a run that moved on to another set).
        (lse, lse.c.set_id.not_in(linked)),
        (ls, ls.c.id.not_in(linked)),
        (d, sa.and_(d.c.declared_at.is_(None), *(d.c.id.not_in(q) for q in dataset_refs))),
        (j, sa.and_(j.c.declared_at.is_(None), *(j.c.id.not_in(q) for q in job_refs))),
        (n, sa.and_(*(n.c.id.not_in(q) for q in namespace_refs))),
    ]
