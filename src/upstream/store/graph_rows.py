"""The rows the in-memory graph index is made of (design §6), read whole or by owner.

Each reader returns plain tuples (the many in chunks of `CHUNK_ROWS`) with ids as
their hyphenated text (`dialect.id_text`) and instants as integer microseconds since 1970
(`dialect.epoch_microseconds`), which the index numbers and packs into columns without making
a `uuid.UUID` or a `datetime` per row. A reader given `runs` or `owners` reads only the rows
those own, for a change the log names (`upstream.store.change_log`); without them it reads
every row.

Relations, flows and edges come in two sets: the current rows (`relations`, `flows`, the
edges through `lineage_links`), and every declaration's rows with the interval it was in
force, which answers as of a time read in place of the current declarations (design §4.5).
Only edges with a job at one end are read for the dataset graph: dataset walks follow nothing
else of the edges.

The field graph's edges (those with a field at one end or both) are kept as the store keeps
them: once per lineage set, apart from the links that say who stated each set. A set's id is
the hash of its content, so a set read once never needs reading again. A declaration's history
(`declared_edges`) has no set: each declaration's field edges are read with it, as a set of
its own (keyed `<declaration>/<run>`) linked once, for the interval it was in force.
Transformations come as their JSON text (a set edge's from `edge_transformations`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.dialect import epoch_microseconds, id_filters, id_text, text_id_filters

#: (id, job id, started, ended, completed, parent run id or None, has events): a run, its span
#: (None where unknown), whether its state is COMPLETE, the run it names as parent, and
#: whether any event was its own (not only a child's parent facet naming it).
RunRow = tuple[Any, ...]
#: (id, job type, seen as parent): what says whether a job is a workflow (design §3.4).
JobKindRow = tuple[Any, ...]
#: (run, dataset, temporary, lifecycles): a run's relation that may make its dataset
#: temporary to the run's workflow run (design §3.4); lifecycles as stored (a list or None).
MarkRow = tuple[Any, ...]
#: (owner, dataset, job, run or None, access, component, version, event time, from, until):
#: the owner is the run, or the job or dataset that declared the row; the version is the one
#: the producer named (or None); from/until are None for a current row, and the interval a
#: declaration was in force for a row of the history.
RelationRow = tuple[Any, ...]
#: (owner, source, target, job or None, run or None, inferred, started, ended, from, until).
FlowRow = tuple[Any, ...]
#: (owner, of a run, link run, source type, source dataset, source job, source run, target
#: type, target dataset, target job, target run, either end a field, from, until).
EdgeRow = tuple[Any, ...]


def _ids(dialect: str, *columns: Any) -> list[Any]:
    return [id_text(c, dialect) for c in columns]


def _when(column: Any, dialect: str) -> Any:
    return epoch_microseconds(column, dialect)


def _in_force(dialect: str) -> list[Any]:
    d = t.declarations.c
    return [_when(d.declared_at, dialect), _when(d.replaced_at, dialect)]


def _no_interval() -> list[Any]:
    return [sa.null(), sa.null()]


def _matching(
    conn: Connection, column: Any, ids: Collection[uuid.UUID] | None
) -> Iterator[sa.ColumnElement[bool]]:
    """Conditions selecting the rows `ids` own: one `true` for every row when `ids` is None."""
    if ids is None:
        yield sa.true()
        return
    yield from id_filters(conn, column, ids)


def entity_ids(conn: Connection, table: sa.Table) -> list[str]:
    """Every id of `table` (datasets or jobs)."""
    return list(conn.execute(sa.select(id_text(table.c.id, conn.dialect.name))).scalars())


def entity_names(
    conn: Connection, table: sa.Table, ids: Collection[str]
) -> Iterator[tuple[str, tuple[str, str]]]:
    """The (namespace, name) of each of `ids` (as text) that `table` (datasets or jobs)
    holds, in one statement (a few on SQLite, `dialect.text_id_filters`)."""
    c = table.c
    for matches in text_id_filters(conn, c.id, ids):
        query = sa.select(id_text(c.id, conn.dialect.name), c.namespace, c.name).where(matches)
        for id_, namespace, name in conn.execute(query):
            yield id_, (namespace, name)


def deleted_ids(conn: Connection) -> list[str]:
    """Every deleted namespace, dataset and job."""
    d = t.deletions.c
    return list(conn.execute(sa.select(id_text(d.entity_id, conn.dialect.name))).scalars())


def run_rows(conn: Connection, runs: Collection[uuid.UUID] | None = None) -> Iterator[list[RunRow]]:
    """Every run's row (or those of `runs`), in chunks as the relations come."""
    dialect = conn.dialect.name
    r = t.runs.c
    columns = (
        *_ids(dialect, r.id, r.job_id),
        _when(r.started_at, dialect),
        _when(r.ended_at, dialect),
        sa.func.coalesce(r.state == "COMPLETE", sa.false()),
        id_text(r.parent_run_id, dialect),
        r.has_events,
    )
    for matches in _matching(conn, r.id, runs):
        yield from _in_chunks(conn, sa.select(*columns).where(matches))


def job_kind_rows(conn: Connection, jobs: Collection[uuid.UUID] | None = None) -> list[JobKindRow]:
    """Every job's (or those of `jobs`) type and whether a run named it as parent."""
    j = t.jobs.c
    columns = (id_text(j.id, conn.dialect.name), j.job_type, j.seen_as_parent)
    found: list[JobKindRow] = []
    for matches in _matching(conn, j.id, jobs):
        found.extend(conn.execute(sa.select(*columns).where(matches)).all())
    return found


def mark_rows(conn: Connection, runs: Collection[uuid.UUID] | None = None) -> list[MarkRow]:
    """The relations of runs (all, or those of `runs`) that mark their dataset temporary or
    name a lifecycle state: the few the partial index `ix_relations_marked` holds."""
    dialect = conn.dialect.name
    r = t.relations.c
    columns = (*_ids(dialect, r.run_id, r.dataset_id), r.temporary, r.lifecycles)
    found: list[MarkRow] = []
    for matches in _matching(conn, r.run_id, runs):
        query = sa.select(*columns).where(
            matches, r.run_id.is_not(None), sa.or_(r.temporary, r.lifecycles.is_not(None))
        )
        found.extend(conn.execute(query).all())
    return found


#: A name ending with what may be a run id (CDAP names a workflow run's local datasets so).
_RUN_ID_TAIL = "%________-____-____-____-____________"


def run_suffix_rows(
    conn: Connection, datasets: Collection[uuid.UUID] | None = None
) -> list[tuple[str, str]]:
    """(id, name) of the datasets (all, or those of `datasets`) whose name ends with what may
    be a run id: the only names the rule of CDAP's local datasets reads (design §3.4)."""
    d = t.datasets.c
    found: list[tuple[str, str]] = []
    for matches in _matching(conn, d.id, datasets):
        query = sa.select(id_text(d.id, conn.dialect.name), d.name).where(
            matches, d.name.like(_RUN_ID_TAIL)
        )
        found.extend((row[0], row[1]) for row in conn.execute(query))
    return found


def relation_rows(
    conn: Connection,
    runs: Collection[uuid.UUID] | None = None,
    owners: Collection[uuid.UUID] | None = None,
) -> Iterator[list[RelationRow]]:
    """Current relations (all, or those of `runs` and of the declarations of `owners`) and
    the declarations' history (all, or that of `owners`)."""
    dialect = conn.dialect.name
    r, h, d = t.relations.c, t.declared_relations.c, t.declarations.c
    owner = sa.func.coalesce(r.run_id, r.job_id)
    current = [
        *_ids(dialect, owner, r.dataset_id, r.job_id, r.run_id),
        r.access,
        r.component,
        r.version,
        _when(r.event_time, dialect),
    ]
    for condition in _owned(conn, r.run_id.is_not(None), r.run_id, r.job_id, runs, owners):
        query = sa.select(*current, *_no_interval()).where(condition)
        yield from _in_chunks(conn, query)
    history = [
        *_ids(dialect, d.owner_id, h.dataset_id, h.job_id, h.run_id),
        h.access,
        h.component,
        h.version,
        _when(h.event_time, dialect),
    ]
    for matches in _history_of(conn, runs, owners):
        query = (
            sa.select(*history, *_in_force(dialect))
            .join_from(t.declared_relations, t.declarations, d.id == h.declaration_id)
            .where(matches)
        )
        yield from _in_chunks(conn, query)


def flow_rows(
    conn: Connection,
    runs: Collection[uuid.UUID] | None = None,
    owners: Collection[uuid.UUID] | None = None,
) -> Iterator[list[FlowRow]]:
    """Flows as `relation_rows` reads relations, each with its run's span."""
    dialect = conn.dialect.name
    f, h, d, run = t.flows.c, t.declared_flows.c, t.declarations.c, t.runs.c

    def columns(owner: Any, c: Any, run_id: Any) -> list[Any]:
        return _ids(dialect, owner, c.source_dataset_id, c.target_dataset_id, c.job_id, run_id)

    # A run's flows are its own (their owner is the run, `schema.owned_run`): found by the
    # owners' index, with the run's span from its row.
    current = [
        *columns(f.owner_id, f, t.owned_run(t.flows)),
        f.inferred,
        _when(run.started_at, dialect),
        _when(run.ended_at, dialect),
    ]
    for condition in _owned(conn, f.scope == "run", f.owner_id, f.owner_id, runs, owners):
        query = sa.select(*current, *_no_interval()).select_from(t.flows_with_runs())
        yield from _in_chunks(conn, query.where(condition))
    history = [*columns(d.owner_id, h, sa.null()), h.inferred, sa.null(), sa.null()]
    for matches in _history_of(conn, runs, owners):
        query = (
            sa.select(*history, *_in_force(dialect))
            .join_from(t.declared_flows, t.declarations, d.id == h.declaration_id)
            .where(matches)
        )
        yield from _in_chunks(conn, query)


def job_edge_rows(
    conn: Connection,
    runs: Collection[uuid.UUID] | None = None,
    owners: Collection[uuid.UUID] | None = None,
) -> Iterator[list[EdgeRow]]:
    """Edges with a job at one end or both, as `relation_rows` reads relations: each stored
    set's edges once per link to it, as every reader sees them (`upstream.store.edge_rows`)."""
    dialect = conn.dialect.name
    link, edge, h, d = (
        t.lineage_links.c,
        t.lineage_set_edges.c,
        t.declared_edges.c,
        t.declarations.c,
    )

    def columns(owner: Any, scope: Any, run: Any, ends: Any) -> list[Any]:
        return [
            *_ids(dialect, owner),
            scope.scope == "run",
            *_ids(dialect, run),
            ends.source_type,
            *_ids(dialect, ends.source_dataset_id, ends.source_job_id, ends.source_run_id),
            ends.target_type,
            *_ids(dialect, ends.target_dataset_id, ends.target_job_id, ends.target_run_id),
            sa.or_(ends.source_field.is_not(None), ends.target_field.is_not(None)),
        ]

    def job_end(c: Any) -> sa.ColumnElement[bool]:
        return sa.or_(c.source_type == "job", c.target_type == "job")

    # A run's links are its own (their owner is the run): found by the owners' index, as
    # flows are.
    current = columns(link.owner_id, link, t.owned_run(t.lineage_links), edge)
    for condition in _owned(conn, link.scope == "run", link.owner_id, link.owner_id, runs, owners):
        query = (
            sa.select(*current, *_no_interval())
            .join_from(t.lineage_set_edges, t.lineage_links, link.set_id == edge.set_id)
            .where(job_end(edge), condition)
        )
        yield from _in_chunks(conn, query)
    for matches in _history_of(conn, runs, owners):
        query = (
            sa.select(*columns(d.owner_id, h, h.run_id, h), *_in_force(dialect))
            .join_from(t.declared_edges, t.declarations, d.id == h.declaration_id)
            .where(job_end(h), matches)
        )
        yield from _in_chunks(conn, query)


#: Rows handed over at a time by the readers of the most rows: read whole, a table's
#: rows were Python objects all at once (70 MB for the medium benchmark workload), a peak a
#: server's worker kept as resident memory long after the load.
CHUNK_ROWS = 10_000


def _in_chunks(conn: Connection, query: sa.Select[Any]) -> Iterator[list[Any]]:
    """The rows of `query`, `CHUNK_ROWS` at a time (streamed from the server where the
    driver can)."""
    result = conn.execute(query.execution_options(yield_per=CHUNK_ROWS))
    for rows in result.partitions():
        yield list(rows)


def _owned(
    conn: Connection,
    of_run: sa.ColumnElement[bool],
    run: Any,
    owner: Any,
    runs: Collection[uuid.UUID] | None,
    owners: Collection[uuid.UUID] | None,
) -> Iterator[sa.ColumnElement[bool]]:
    """Conditions for the current rows of `runs` and of the declarations of `owners`
    (every row when both are None): `of_run` tells a run's rows from a declaration's, `run`
    holds the run's id on each (a flow's or link's owner), `owner` the declaring job's or
    dataset's."""
    if runs is None and owners is None:
        yield sa.true()
        return
    for matches in id_filters(conn, run, runs or ()):
        yield sa.and_(of_run, matches)
    for matches in id_filters(conn, owner, owners or ()):
        yield sa.and_(sa.not_(of_run), matches)


def _history_of(
    conn: Connection, runs: Collection[uuid.UUID] | None, owners: Collection[uuid.UUID] | None
) -> Iterator[sa.ColumnElement[bool]]:
    """Conditions for the history rows of the declarations of `owners` (all when neither
    `runs` nor `owners` is given; none for runs alone: runs declare nothing)."""
    if runs is None and owners is None:
        yield sa.true()
        return
    yield from id_filters(conn, t.declarations.c.owner_id, owners or ())


# -- the field graph ---------------------------------------------------------------------

#: (owner, set, run or None, of a run, from, until): a current link (from/until None), or a
#: declaration of the history with the interval it was in force.
LinkRow = tuple[Any, ...]
#: (set, origin, source dataset, source field, target dataset, target field,
#: transformations as JSON text); a job end has no dataset.
SetEdgeRow = tuple[Any, ...]


def _field_end(edges: Any) -> sa.ColumnElement[bool]:
    return sa.or_(edges.source_field.is_not(None), edges.target_field.is_not(None))


def _field_edge_columns(edges: Any, transformations: Any, dialect: str) -> list[Any]:
    return [
        edges.origin,
        id_text(edges.source_dataset_id, dialect),
        edges.source_field,
        id_text(edges.target_dataset_id, dialect),
        edges.target_field,
        sa.cast(transformations, sa.Text),
    ]


def field_link_rows(
    conn: Connection,
    runs: Collection[uuid.UUID] | None = None,
    owners: Collection[uuid.UUID] | None = None,
) -> Iterator[list[LinkRow]]:
    """The current links (all, or those of `runs` and of the declarations of `owners`), in
    chunks: a run of a large store's has one or more. A run's are found by their owner, the
    run (`job_edge_rows`)."""
    dialect = conn.dialect.name
    link = t.lineage_links.c
    columns = [
        id_text(link.owner_id, dialect),
        id_text(link.set_id, dialect),
        id_text(t.owned_run(t.lineage_links), dialect),
        link.scope == "run",
        *_no_interval(),
    ]
    for condition in _owned(conn, link.scope == "run", link.owner_id, link.owner_id, runs, owners):
        yield from _in_chunks(conn, sa.select(*columns).where(condition))


def field_set_edge_rows(
    conn: Connection, sets: Collection[str] | None = None
) -> Iterator[list[SetEdgeRow]]:
    """The field edges of the lineage sets `sets` (ids as text; every set when None), in
    chunks as the dataset graph's rows come."""
    dialect = conn.dialect.name
    e, kept = t.lineage_set_edges.c, t.edge_transformations
    columns = _field_edge_columns(e, kept.c.transformations, dialect)
    query = (
        sa.select(id_text(e.set_id, dialect), *columns)
        .join(kept, kept.c.id == e.transformations_id)
        .where(_field_end(e))
    )
    if sets is None:
        yield from _in_chunks(conn, query)
        return
    for matches in id_filters(conn, e.set_id, {uuid.UUID(s) for s in sets}):
        yield from _in_chunks(conn, query.where(matches))


def field_history_rows(
    conn: Connection,
    runs: Collection[uuid.UUID] | None = None,
    owners: Collection[uuid.UUID] | None = None,
) -> tuple[list[LinkRow], list[SetEdgeRow]]:
    """The field edges of every declaration (all, or those of `owners`), as one link and
    one set per declaration and run: the set's key is `<declaration>/<run>`."""
    dialect = conn.dialect.name
    h, d = t.declared_edges.c, t.declarations.c
    declaration, run = id_text(h.declaration_id, dialect), id_text(h.run_id, dialect)
    links: dict[str, LinkRow] = {}
    edges: list[SetEdgeRow] = []
    for matches in _history_of(conn, runs, owners):
        query = (
            sa.select(
                id_text(d.owner_id, dialect),
                declaration,
                run,
                *_in_force(dialect),
                *_field_edge_columns(h, h.transformations, dialect),
            )
            .join_from(t.declared_edges, t.declarations, d.id == h.declaration_id)
            .where(_field_end(h), matches)
        )
        for owner, declared, run_id, since, until, *edge in conn.execute(query):
            key = f"{declared}/{run_id}"
            links.setdefault(key, (owner, key, run_id, False, since, until))
            edges.append((key, *edge))
    return list(links.values()), edges
