"""One version of the graph index (design §6): the derived graph as integer columns at one
position of the change log, never changed once made.

A change makes a new version: the rows the changed runs and owners own are dropped and read
again, appended in place to the columns the old version views (`Table`), and the adjacency
shares the old arrays (`Adjacency.changed`); a reader holding the old version keeps a
consistent one, as it never looks past its own rows.
Ids are numbered densely (`numbering`); a missing instant is a sentinel that compares as SQL's
NULL does in the window's tests (`upstream.store.window`).
"""

from __future__ import annotations

import ctypes
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt
from sqlalchemy.engine import Connection

from upstream.query.graph_index.adjacency import Adjacency
from upstream.query.graph_index.numbering import NONE, Numbering
from upstream.query.graph_index.workflows import Workflows
from upstream.store import graph_rows
from upstream.store import schema as t

if TYPE_CHECKING:
    from upstream.query.graph_index.field_graph import FieldGraph

Column = npt.NDArray[Any]
Ints = npt.NDArray[np.int64]
#: An unknown start: no window contains the run (`started_at < end` is not true of NULL).
NO_START = np.iinfo(np.int64).max
#: An unknown end (still running), or a declaration still in force: later than any instant.
NO_END = np.iinfo(np.int64).max
DATASET, JOB = 0, 1


@dataclass(frozen=True)
class Numberings:
    """The numberings every version of one process's index shares."""

    datasets: Numbering
    jobs: Numbering
    runs: Numbering
    owners: Numbering
    components: Numbering
    #: The dataset versions producers named (run lineage, design §4.5).
    versions: Numbering


#: The rows a version appended past its base and the base rows it dropped, together, at
#: most this share of the base; the change that would pass it makes a fresh base (design §6).
COMPACT_AT = 1 / 8
#: Room left past a table's rows for the rows changes append; pages never written cost no
#: memory.
_ROOM = 1 / 8
_NO_ROWS: Ints = np.zeros(0, dtype=np.int64)


class _Shared:
    """Columns with room past their rows that versions share: a version's columns are views
    of the first rows; the next version appends past the last row filled, where no older
    version looks."""

    def __init__(self, columns: dict[str, Column], filled: int) -> None:
        self.columns = columns
        self.filled = filled
        # Two readers may bring one version forward at once (`GraphIndex`, an older
        # snapshot's): only one of them appends in place.
        self.lock = threading.Lock()

    def appended(self, length: int, added: Table) -> dict[str, Column] | None:
        """The first `length` rows followed by `added`, in place; None when a version was
        made past `length` already (its rows are there)."""
        with self.lock:
            if self.filled != length:
                return None
            end = length + len(added)
            if end > len(next(iter(self.columns.values()))):
                # Older versions keep the arrays they view; only this one and later move.
                self.columns = {n: _room([c[:length]], end) for n, c in self.columns.items()}
            for name, column in self.columns.items():
                column[length:end] = added[name]
            self.filled = end
            return {name: column[:end] for name, column in self.columns.items()}


def _room(parts: Sequence[Column], rows: int) -> Column:
    """`parts` one after another in an array with room for `rows` rows and `_ROOM` more."""
    made = np.empty(rows + int(rows * _ROOM) + 16, dtype=parts[0].dtype)
    np.concatenate(parts, out=made[: sum(len(part) for part in parts)])
    return made


@dataclass(frozen=True)
class Table:
    """Rows as named columns of equal length. A version made by a change views the columns
    of the version before it, with its new rows appended (design §6): its rows are the
    positions but `dropped`, and `held` lists them."""

    columns: dict[str, Column]
    #: Positions of rows this version does not hold (sorted): a change replaced them.
    dropped: Ints = field(default_factory=lambda: _NO_ROWS)
    #: Positions before `base` are those the adjacency's arrays were built from (None:
    #: every position).
    base: int | None = None
    #: The arrays the columns view, which the next version appends to (None: none).
    shared: _Shared | None = None

    def __getitem__(self, name: str) -> Column:
        return self.columns[name]

    def __len__(self) -> int:
        """The positions, held or not (`held`)."""
        return len(next(iter(self.columns.values())))

    @cached_property
    def held(self) -> Ints:
        """The positions of the rows this version holds, in order."""
        every = np.arange(len(self), dtype=np.int64)
        return np.delete(every, self.dropped) if len(self.dropped) else every

    def where(self, keep: npt.NDArray[np.bool_] | Ints) -> Table:
        return Table({name: column[keep] for name, column in self.columns.items()})

    def plus(self, other: Table) -> Table:
        return Table({n: np.concatenate([c, other.columns[n]]) for n, c in self.columns.items()})

    @property
    def nbytes(self) -> int:
        return sum(column.nbytes for column in self.columns.values())


def _with_room(tables: Sequence[Table], *, let_go: bool = False) -> Table:
    """`tables` one after another, in arrays with room for the rows changes append; with
    `let_go`, each of their columns is taken out of them as it is joined."""
    rows = sum(len(table) for table in tables)
    names = list(tables[0].columns)

    def parts(name: str) -> list[Column]:
        return [table.columns.pop(name) if let_go else table[name] for table in tables]

    columns = {name: _room(parts(name), rows) for name in names}
    return Table(
        {n: c[:rows] for n, c in columns.items()}, base=rows, shared=_Shared(columns, rows)
    )


@dataclass(frozen=True)
class Replaced:
    """One table of a new version as the old version's rows but `dropped` (positions),
    followed by `added`."""

    old: Table
    dropped: Ints
    added: Table

    @classmethod
    def whole(cls, table: Table) -> Replaced:
        """A table read whole: nothing of an old version kept."""
        return cls(
            Table({name: column[:0] for name, column in table.columns.items()}), _NO_ROWS, table
        )


class Changes(NamedTuple):
    """How a version's relations, flows and job-end edges were made."""

    relations: Replaced
    flows: Replaced
    edges: Replaced


def _packed(
    made: Callable[[Sequence[Sequence[Any]], Numberings], Table],
    chunks: Iterable[Sequence[Sequence[Any]]],
    ids: Numberings,
) -> Table:
    """The rows of `chunks` as one table, each chunk packed into columns before the next is
    read (at most one chunk's rows are Python objects at a time), with room for the rows
    changes append. The chunks' columns are let go one column at a time as the whole ones
    are made: a large store's relations are about 90 MB of columns, not to be held twice
    over while they are joined."""
    return _with_room([made(chunk, ids) for chunk in chunks] or [made([], ids)], let_go=True)


def _instants(values: Sequence[int | None], missing: int) -> Column:
    return np.fromiter((missing if v is None else v for v in values), dtype=np.int64)


def _interval(rows: Sequence[Sequence[Any]]) -> dict[str, Column]:
    """The last two fields of `rows`: None for current rows, else the declaration's interval."""
    return {
        "current": np.fromiter((row[-2] is None for row in rows), dtype=np.bool_),
        "since": _instants([row[-2] for row in rows], 0),
        "until": _instants([row[-1] for row in rows], NO_END),
    }


def _relations(rows: Sequence[Sequence[Any]], ids: Numberings) -> Table:
    return Table(
        {
            "owner": ids.owners.numbers(row[0] for row in rows),
            "dataset": ids.datasets.numbers(row[1] for row in rows),
            "job": ids.jobs.numbers(row[2] for row in rows),
            "run": ids.runs.numbers(row[3] for row in rows),
            "write": np.fromiter((row[4] == "write" for row in rows), dtype=np.bool_),
            "component": ids.components.numbers(row[5] for row in rows),
            "version": ids.versions.numbers(row[6] for row in rows),
            "event_time": _instants([row[7] for row in rows], 0),
            **_interval(rows),
        }
    )


def _flows(rows: Sequence[Sequence[Any]], ids: Numberings) -> Table:
    return Table(
        {
            "owner": ids.owners.numbers(row[0] for row in rows),
            "source": ids.datasets.numbers(row[1] for row in rows),
            "target": ids.datasets.numbers(row[2] for row in rows),
            "job": ids.jobs.numbers(row[3] for row in rows),
            "run": ids.runs.numbers(row[4] for row in rows),
            "inferred": np.fromiter((bool(row[5]) for row in rows), dtype=np.bool_),
            "started": _instants([row[6] for row in rows], NO_START),
            "ended": _instants([row[7] for row in rows], NO_END),
            **_interval(rows),
        }
    )


def _runs(rows: Sequence[Sequence[Any]], ids: Numberings) -> Table:
    """Run rows (`graph_rows.RunRow`) as columns: each run's number, job, parent (NONE:
    none), span, whether it completed and whether it had events of its own."""
    # A run and the parent it names numbered in the order they come, as one at a time did.
    numbers = ids.runs.numbers([text for row in rows for text in (row[0], row[5])])
    return Table(
        {
            "run": numbers[0::2],
            "parent": numbers[1::2],
            "job": ids.jobs.numbers(row[1] for row in rows),
            "started": _instants([row[2] for row in rows], NO_START),
            "ended": _instants([row[3] for row in rows], NO_END),
            "completed": np.fromiter((bool(row[4]) for row in rows), dtype=np.bool_),
            "events": np.fromiter((bool(row[6]) for row in rows), dtype=np.bool_),
        }
    )


def _edges(rows: Sequence[Sequence[Any]], ids: Numberings) -> Table:
    def kind(position: int) -> Column:
        return np.fromiter((row[position] == "job" for row in rows), dtype=np.int8)

    columns: dict[str, Column] = {
        "owner": ids.owners.numbers(row[0] for row in rows),
        "of_run": np.fromiter((bool(row[1]) for row in rows), dtype=np.bool_),
        "run": ids.runs.numbers(row[2] for row in rows),
    }
    for side, at in (("source", 3), ("target", 7)):
        columns[f"{side}_type"] = kind(at)
        columns[f"{side}_dataset"] = ids.datasets.numbers(row[at + 1] for row in rows)
        columns[f"{side}_job"] = ids.jobs.numbers(row[at + 2] for row in rows)
        columns[f"{side}_run"] = ids.runs.numbers(row[at + 3] for row in rows)
    # An end that is a dataset's field (a job's edge to or from one field).
    columns["fields"] = np.fromiter((bool(row[11]) for row in rows), dtype=np.bool_)
    return Table({**columns, **_interval(rows)})


@dataclass(frozen=True)
class Graph:
    """The index at change-log position `position`. The per-entity arrays have one place
    more than the entities numbered when it was made: a later one reads that place."""

    position: int
    ids: Numberings
    #: Each run's start and end (by run number), NO_START/NO_END where unknown.
    run_started: Column
    run_ended: Column
    #: Whether each run's state is COMPLETE (run lineage: only such a run made a version).
    run_completed: npt.NDArray[np.bool_]
    deleted_datasets: npt.NDArray[np.bool_]
    deleted_jobs: npt.NDArray[np.bool_]
    relations: Table
    flows: Table
    edges: Table
    by_dataset: Adjacency
    by_job: Adjacency
    by_run: Adjacency
    by_source: Adjacency
    by_target: Adjacency
    edges_by: dict[str, Adjacency]
    #: The field edges (`field_graph`), which the field walks follow; None in an index
    #: loaded for dataset walks only (`GraphIndex.fields_wanted`).
    field_part: FieldGraph | None
    #: Parent runs, workflows and temporary marks (`workflows`), which rollups read.
    workflows: Workflows

    @property
    def fields(self) -> FieldGraph:
        """The field graph; an index loaded without it has no answer to give."""
        if self.field_part is None:
            raise LookupError("the lineage index was loaded without its field graph")
        return self.field_part

    def deleted(self, flags: npt.NDArray[np.bool_], numbers: Column) -> npt.NDArray[np.bool_]:
        """`flags` (deleted datasets or jobs) of `numbers`; NONE is never deleted."""
        # A number past the flags reads the last place (`take` clips), NONE the first.
        return (numbers >= 0) & np.take(flags, numbers, mode="clip")

    def spans(self, runs: Column) -> tuple[Column, Column]:
        """The start and end of each run of `runs` (NONE: a declaration, always in)."""
        at = np.minimum(np.maximum(runs, 0), len(self.run_started) - 1)
        return self.run_started[at], self.run_ended[at]

    @cached_property
    def dataset_order(self) -> Column:
        """Each dataset number's place in the order of the ids' text (the order the store
        sorts uuids in), for walks whose answer depends on the order nodes are met in."""
        return self.ids.datasets.text_order()

    @cached_property
    def job_order(self) -> Column:
        """As `dataset_order`, for jobs."""
        return self.ids.jobs.text_order()

    @cached_property
    def names_components(self) -> bool:
        """Whether a relation of this version names a component (the unnamed one, "", is
        numbered first): most stores name none, and a walk then looks none up."""
        r = self.relations
        return bool(np.any(r["component"][r.held] != 0))

    @cached_property
    def newest_first(self) -> Column:
        """Each run number's place when this version's runs are listed newest first (design
        §4.2): by start, runs without one last, ties by the id's text. Worked out once per
        version, for the collapsed answers that list thousands of runs, most of them started
        at the same instant as another (`query.run_order`)."""
        count = len(self.run_started) - 1  # runs numbered later hold the last place
        starts = self.run_started[:count]
        unknown = starts == NO_START
        newest = np.where(unknown, 0, -starts)
        by_id = self.ids.runs.text_order()[:count]
        places = np.empty(count, dtype=np.int64)
        places[np.lexsort((by_id, newest, unknown))] = np.arange(count)
        return places

    @property
    def nbytes(self) -> int:
        """Bytes the version's columns and adjacency hold (the numberings' ids apart)."""
        tables = self.relations.nbytes + self.flows.nbytes + self.edges.nbytes
        adjacency = [self.by_dataset, self.by_job, self.by_run, self.by_source, self.by_target]
        adjacency += list(self.edges_by.values())
        runs = self.run_started.nbytes + self.run_ended.nbytes + self.run_completed.nbytes
        adjacent = sum(a.nbytes for a in adjacency)
        fields = 0 if self.field_part is None else self.field_part.nbytes
        return tables + runs + adjacent + fields + self.workflows.nbytes


def load(
    conn: Connection, position: int, ids: Numberings | None = None, *, fields: bool = True
) -> Graph:
    """Every row of the derived graph as `conn`'s snapshot holds it; the field edges only
    with `fields` (a dataset walk follows none, and they are a third of the load)."""
    from upstream.query.graph_index import workflows

    ids = ids or Numberings(*(Numbering() for _ in range(6)))
    ids.components.number("")
    ids.datasets.numbers(graph_rows.entity_ids(conn, t.datasets))
    ids.jobs.numbers(graph_rows.entity_ids(conn, t.jobs))
    field_part = None
    if fields:  # imported here: the field graph is made of this module's tables
        from upstream.query.graph_index import field_graph

        field_part = field_graph.load(conn, ids)
    relations = _packed(_relations, graph_rows.relation_rows(conn), ids)
    flows = _packed(_flows, graph_rows.flow_rows(conn), ids)
    edges = _packed(_edges, graph_rows.job_edge_rows(conn), ids)
    runs = _packed(_runs, graph_rows.run_rows(conn), ids)
    numberings = (ids.jobs, ids.datasets, ids.runs)
    graph = _made(
        position,
        ids,
        _run_columns(None, runs, ids),
        set(graph_rows.deleted_ids(conn)),
        Changes(Replaced.whole(relations), Replaced.whole(flows), Replaced.whole(edges)),
        field_part,
        workflows.load(conn, runs, *numberings),
    )
    del runs, relations, flows, edges
    return_free_memory()
    keep_freed_blocks()
    return graph


def return_free_memory() -> None:
    """Hand the C allocator's free memory back to the system (glibc's `malloc_trim`, where
    there is one): a load's temporary columns and chunks leave free memory in its heap that a
    worker otherwise keeps resident — 123 MB of the 544 MB a large store's load left."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # no glibc
        return
    trim(0)


#: glibc's `mallopt` parameters, and the sizes `keep_freed_blocks` sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD = 16 << 20
_TRIM_THRESHOLD = 32 << 20


def keep_freed_blocks() -> None:
    """Have glibc's allocator serve blocks up to 16 MB from its heap and keep up to 32 MB
    free at the heap's top, rather than map each block of more than 128 KB afresh and
    unmap it when freed. A deep walk's arrays (an int64 column of 18,000 relations is
    145 KB) and an answer's megabytes of text are such blocks, allocated anew at every read:
    each one mapped afresh was zero-filled by the kernel page by page, 1,600 page faults
    per read of the listed downstream walk at levels=10, a quarter of its CPU. (glibc
    raises its threshold past a freed block's size by itself, but a block of that same
    size is still mapped.)"""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):  # no glibc
        return
    mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD)


def applied(
    conn: Connection,
    graph: Graph,
    position: int,
    runs: Collection[uuid.UUID],
    owners: Collection[uuid.UUID],
    entities: Collection[uuid.UUID],
) -> Graph:
    """`graph` with the rows of `runs` and of the declarations of `owners` read again (and
    the deletions and the jobs' workflow flags, when `entities` changed), at `position`."""
    from upstream.query.graph_index import field_graph, workflows

    ids = graph.ids
    changed = [ids.owners.known(str(i)) for i in (*runs, *owners)]
    # One place more: the owners numbered after `graph` was made, which none of its rows has.
    gone = np.zeros(len(ids.owners) + 1, dtype=np.bool_)
    gone[[n for n in changed if n is not None]] = True

    def replaced(table: Table, read: Callable[..., Any], make: Callable[..., Table]) -> Replaced:
        dropped = np.flatnonzero(gone[table["owner"]])
        return Replaced(table, dropped, _packed(make, read(conn, runs, owners), ids))

    changes = None
    if runs or owners:
        changes = Changes(
            replaced(graph.relations, graph_rows.relation_rows, _relations),
            replaced(graph.flows, graph_rows.flow_rows, _flows),
            replaced(graph.edges, graph_rows.job_edge_rows, _edges),
        )
    fields = graph.field_part
    if fields is not None:
        fields = field_graph.applied(conn, fields, ids, runs, owners)
    run_columns = (graph.run_started, graph.run_ended, graph.run_completed)
    run_rows = _packed(_runs, graph_rows.run_rows(conn, runs) if runs else [], ids)
    if runs:
        run_columns = _run_columns(graph, run_rows, ids)
    deleted = set(graph_rows.deleted_ids(conn)) if entities else _deleted_texts(graph)
    flows_of = workflows.applied(
        conn,
        graph.workflows,
        run_rows,
        runs,
        {*entities, *owners},
        (ids.jobs, ids.datasets, ids.runs),
    )
    if changes is None:
        return replace(
            graph,
            position=position,
            deleted_datasets=_flags(ids.datasets, deleted),
            deleted_jobs=_flags(ids.jobs, deleted),
            workflows=flows_of,
        )
    return _made(position, ids, run_columns, deleted, changes, fields, flows_of, graph)


def _deleted_texts(graph: Graph) -> set[str]:
    found = graph.ids.datasets.texts.take(np.flatnonzero(graph.deleted_datasets))
    return {*found, *graph.ids.jobs.texts.take(np.flatnonzero(graph.deleted_jobs))}


RunColumns = tuple[Column, Column, npt.NDArray[np.bool_]]


def _run_columns(graph: Graph | None, rows: Table, ids: Numberings) -> RunColumns:
    """Each run's start, end and whether it completed, by run number: `graph`'s, with the
    runs of `rows` (`_runs`) read again."""
    size = len(ids.runs)
    started = np.full(size, NO_START, dtype=np.int64)
    ended = np.full(size, NO_END, dtype=np.int64)
    completed = np.zeros(size, dtype=np.bool_)
    if graph is not None:
        known = min(size, len(graph.run_started) - 1)
        started[:known] = graph.run_started[:known]
        ended[:known] = graph.run_ended[:known]
        completed[:known] = graph.run_completed[:known]
    started[rows["run"]] = rows["started"]
    ended[rows["run"]] = rows["ended"]
    completed[rows["run"]] = rows["completed"]
    return started, ended, completed


def _flags(numbering: Numbering, texts: set[str]) -> npt.NDArray[np.bool_]:
    """Whether each entity is deleted, with one place more for entities numbered later."""
    flags = np.zeros(len(numbering) + 1, dtype=np.bool_)
    for text in texts:
        number = numbering.known(text)
        if number is not None:
            flags[number] = True
    return flags


def _made(
    position: int,
    ids: Numberings,
    run_columns: RunColumns,
    deleted: set[str],
    changes: Changes,
    fields: FieldGraph | None,
    workflows: Workflows,
    previous: Graph | None = None,
) -> Graph:
    datasets, jobs = len(ids.datasets), len(ids.jobs)
    # Runs numbered after this version was made stand at the last place: a run unknown here.
    started, ended, completed = run_columns
    missing = len(ids.runs) + 1 - len(started)
    started = np.concatenate([started, np.full(missing, NO_START, dtype=np.int64)])
    ended = np.concatenate([ended, np.full(missing, NO_END, dtype=np.int64)])
    completed = np.concatenate([completed, np.zeros(missing, dtype=np.bool_)])
    relations, flows, edges = changes

    def ends(side: str, kind: str, code: int) -> Callable[[Table], Column]:
        def keys(table: Table) -> Column:
            of_kind = table[f"{side}_type"] == code
            return np.where(of_kind, table[f"{side}_{kind}"], NONE).astype(np.int32)

        return keys

    ends_by: Keyed = {
        f"{side}_{kind}": (ends(side, kind, code), datasets if kind == "dataset" else jobs)
        for side in ("source", "target")
        for kind, code in (("dataset", DATASET), ("job", JOB))
    }
    by_relations: Keyed = {
        "by_dataset": (lambda t: t["dataset"], datasets),
        "by_job": (lambda t: t["job"], jobs),
        "by_run": (lambda t: t["run"], len(ids.runs)),
    }
    by_flows: Keyed = {
        "by_source": (lambda t: t["source"], datasets),
        "by_target": (lambda t: t["target"], datasets),
    }

    def before(keyed: Keyed) -> dict[str, Adjacency] | None:
        return None if previous is None else {name: getattr(previous, name) for name in keyed}

    r, by_r = _grown(relations, by_relations, before(by_relations))
    f, by_f = _grown(flows, by_flows, before(by_flows))
    e, by_e = _grown(edges, ends_by, None if previous is None else previous.edges_by)
    return Graph(
        position=position,
        ids=ids,
        run_started=started,
        run_ended=ended,
        run_completed=completed,
        deleted_datasets=_flags(ids.datasets, deleted),
        deleted_jobs=_flags(ids.jobs, deleted),
        relations=r,
        flows=f,
        edges=e,
        by_dataset=by_r["by_dataset"],
        by_job=by_r["by_job"],
        by_run=by_r["by_run"],
        by_source=by_f["by_source"],
        by_target=by_f["by_target"],
        edges_by=by_e,
        field_part=fields,
        workflows=workflows,
    )


#: The adjacencies over one table: each one's key column and the number of nodes it keys.
Keyed = dict[str, tuple[Callable[[Table], Column], int]]


def _grown(
    change: Replaced, keyed: Keyed, before: dict[str, Adjacency] | None
) -> tuple[Table, dict[str, Adjacency]]:
    """The table `change` makes and its adjacencies `keyed`, given those of the version
    before (None: none, the table is read whole). The new rows are appended to the arrays
    the old version views and the adjacencies share theirs (design §6), unless another
    version appended there already or the rows appended and dropped since the base would
    pass `COMPACT_AT` of it: then the rows held are copied into a fresh base."""
    old, added = change.old, change.added
    if before is None:
        return added, {name: Adjacency(keys(added), nodes) for name, (keys, nodes) in keyed.items()}
    dropped = np.union1d(old.dropped, change.dropped)
    base = len(old) if old.base is None else old.base
    since = len(old) + len(added) - base + len(dropped)
    columns = None
    if old.shared is not None and since <= COMPACT_AT * base:
        columns = old.shared.appended(len(old), added)
    if columns is not None:
        table = Table(columns, dropped, base, old.shared)
        gone = np.zeros(len(table) if len(dropped) else 0, dtype=np.bool_)
        gone[dropped] = True
        return table, {
            name: before[name].changed(gone, len(old), keys(added))
            for name, (keys, _) in keyed.items()
        }
    held = np.delete(np.arange(len(old), dtype=np.int64), dropped)
    kept = np.ones(base, dtype=np.bool_)
    kept[dropped[dropped < base]] = False
    later = old.where(held[held >= base])
    return _with_room([old.where(held), added]), {
        # The old arrays' rows kept, then the rows appended since they were built, then
        # the new rows: the table's order.
        name: before[name].updated(kept, np.concatenate([keys(later), keys(added)]), nodes)
        for name, (keys, nodes) in keyed.items()
    }
