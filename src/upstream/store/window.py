"""The time bounds of a lineage answer, in SQL, in one place (design §4.1, §4.5): which runs
overlap the query's window and had started by its `as_of` time, and which declarations were
in force then. Every read of runs' and declarations' lineage goes through these."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa

from upstream.store import schema as t
from upstream.store.edge_rows import EDGES


class Bounds(Protocol):
    """A window's bounds as statements compare them: a `Window`'s instants, or bound
    parameters standing for them."""

    @property
    def start(self) -> Any: ...

    @property
    def end(self) -> Any: ...

    @property
    def as_of(self) -> Any: ...


#: Made once: an alias builds its column collection anew each time it is made, which cost
#: more than the rest of a lineage level's statements together.
_WINDOW_RUN = t.runs.alias("window_run")


def run_in_window(
    run_id: sa.ColumnElement[object], window: Bounds | None
) -> sa.ColumnElement[bool]:
    """True for declared lineage (no run) and for runs that overlap `window` and had started
    by its `as_of` time.

    A correlated EXISTS on the run's primary key: the database looks up only the runs the
    query touches, where `run_id IN (runs overlapping the window)` made it collect every run
    of the window first (tens of milliseconds per statement on a medium store)."""
    if window is None:
        return sa.true()
    run = _WINDOW_RUN
    overlapping = (
        sa.select(sa.literal(1))
        .select_from(run)
        .where(run.c.id == run_id, run_overlaps(run, window))
        .exists()
    )
    return sa.or_(run_id.is_(None), overlapping)


def run_overlaps(run: sa.FromClause, window: Bounds) -> sa.ColumnElement[bool]:
    """The run (a `runs` row) overlaps `window` and had started by its `as_of` time: for a
    statement that joins the runs itself, to test one row against several windows."""
    return sa.and_(
        run.c.started_at < window.end,
        sa.or_(run.c.ended_at.is_(None), run.c.ended_at >= window.start),
        run_started_by(run, window.as_of),
    )


def run_started_by(
    run: sa.FromClause, as_of: datetime | sa.BindParameter[Any] | None
) -> sa.ColumnElement[bool]:
    """The run (a `runs` row) had started by `as_of`; every run when there is no `as_of`."""
    return sa.true() if as_of is None else run.c.started_at <= as_of


def edges_as_of(window: Bounds | None) -> sa.FromClause:
    """The edges an answer reads (`upstream.store.edge_rows`): runs' edges and the
    declarations in force at the window's `as_of` time (the current ones without it)."""
    as_of = window.as_of if window is not None else None
    if as_of is None:
        return EDGES
    return _with_declarations(
        EDGES, t.declared_edges, EDGES.c.scope == "run", as_of, t.EDGE_COLUMNS
    )


def relations_as_of(window: Bounds | None) -> sa.FromClause:
    """The `relations` an answer reads, as `edges_as_of` does for edges."""
    as_of = window.as_of if window is not None else None
    if as_of is None:
        return t.relations
    current_runs = t.relations.c.run_id.is_not(None)
    return _with_declarations(t.relations, t.declared_relations, current_runs, as_of)


#: The flows with their run (`schema.owned_run`) and its span, and the declarations' with
#: none.
_FLOWS = (
    sa.select(
        *t.flows.c,
        t.owned_run(t.flows).label("run_id"),
        t.runs.c.started_at,
        t.runs.c.ended_at,
    )
    .select_from(t.flows_with_runs())
    .subquery("flows")
)
_DECLARED_FLOWS = sa.select(
    *t.declared_flows.c,
    *(sa.null().label(name) for name in ("run_id", "started_at", "ended_at")),
).subquery("declared_flows")


def flows_as_of(window: Bounds | None) -> sa.FromClause:
    """The `flows` an answer reads, as `edges_as_of` does for edges: runs' flows and those of
    the declarations in force at the window's `as_of` time, each with its run (`run_id`)."""
    as_of = window.as_of if window is not None else None
    if as_of is None:
        return _FLOWS
    return _with_declarations(_FLOWS, _DECLARED_FLOWS, _FLOWS.c.scope == "run", as_of)


def in_force(as_of: datetime) -> sa.ColumnElement[bool]:
    """The declaration (a `declarations` row) was in force at `as_of`."""
    d = t.declarations.c
    return sa.and_(d.declared_at <= as_of, sa.or_(d.replaced_at.is_(None), d.replaced_at > as_of))


def _with_declarations(
    current: sa.FromClause,
    history: sa.Table | sa.Subquery,
    run_rows: sa.ColumnElement[bool],
    as_of: datetime,
    names: Sequence[str] | None = None,
) -> sa.FromClause:
    """`current`'s rows of runs and the rows of the declarations in force at `as_of`, in
    the columns `names` (by default all of `current`'s that a declaration's rows have: not
    the month a run's rows are kept under)."""
    names = names or [column.name for column in current.columns if column.name in history.c]
    of_runs = sa.select(*(current.c[n] for n in names)).where(run_rows)
    declared = (
        sa.select(*(history.c[n] for n in names))
        .join(t.declarations, t.declarations.c.id == history.c.declaration_id)
        .where(in_force(as_of))
    )
    return sa.union_all(of_runs, declared).subquery(history.name.removeprefix("declared_"))
