"""The impact report (design §4.6): every dataset and field downstream of a dataset (or of one
of its fields) within `levels`, each with its hop count, the jobs that carried the data into
it, their owners and the dataset's, and the latest run that wrote it with its state.

Composed from the lineage services rather than walked again, so it follows their rules and
caps: the datasets are exactly those of the downstream dataset-lineage walk
(`upstream.query.dataset_lineage`), the fields those of the field summaries' walk
(`upstream.query.graph_index.field_walk`, the walk `GET …/lineage/fields/{field}` takes). A field
impact report lists the fields downstream of that field and the datasets holding them.

A reader limited to some namespaces gets the report of those walks as they run for it (one
`VisibleNodes` shared by both): nothing it may not see is a row or a job of a row, and the
report counts what the walks stopped at (`hiddenNodes`: the hidden datasets and jobs of the
dataset walk plus the hidden fields of the field walk; `hiddenRelations`: likewise their
relations and field edges).
"""

from __future__ import annotations

import csv
import io
import uuid
from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.identity import DatasetRef
from upstream.query.answers import (
    ImpactAnswer,
    ImpactJob,
    ImpactRow,
    ImpactRun,
    OwnerEntry,
)
from upstream.query.dataset_lineage import shown_walk
from upstream.query.field_operation_sets import known_fields, require_field
from upstream.query.graph_index.dataset_walk import FoundRelations
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.graph import NO_START, Graph
from upstream.query.graph_index.index import dataset_names_by_id, graph_of, names_of
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.graph_index.walk_reads import WalkReads
from upstream.query.lineage_params import LineageParams
from upstream.query.lookup import existing_dataset
from upstream.query.marquez.common import iso
from upstream.query.owners import owners_by_id
from upstream.store import schema as t
from upstream.store.dialect import id_filters

Ints = npt.NDArray[np.int64]

#: The CSV columns, in order (`csv_lines`).
CSV_COLUMNS = (
    "kind",
    "namespace",
    "name",
    "field",
    "hops",
    "jobs",
    "owners",
    "job_owners",
    "latest_run",
    "latest_run_state",
    "latest_run_ended_at",
)


@dataclass(frozen=True)
class _Reach:
    """What is downstream: datasets and fields by hop count (None: the walk found the
    dataset but no path to it within its own relations), and whether a cap cut it."""

    datasets: dict[uuid.UUID, int | None]
    fields: dict[tuple[uuid.UUID, str], int]
    truncated: bool


@dataclass(frozen=True)
class _Reader:
    """Whom the report is for: what it may see, and its view of the index that the walks
    share (None when it sees everything)."""

    visibility: Visibility
    visible: VisibleNodes | None

    @classmethod
    def of(cls, conn: Connection, visibility: Visibility) -> _Reader:
        return cls(visibility, VisibleNodes.of(conn, graph_of(conn), visibility))

    def field_edges(self, conn: Connection, params: LineageParams) -> FieldEdges:
        return FieldEdges(graph_of(conn), params.window, self.visible)


def dataset_impact(
    conn: Connection,
    namespace: str,
    name: str,
    params: LineageParams,
    *,
    max_nodes: int,
    max_relations: int,
    visibility: Visibility = EVERYTHING,
) -> ImpactAnswer:
    """The impact report of a whole dataset: the datasets of its downstream walk, and the
    fields downstream of any of its fields, of what `visibility` shows. NotFound for an
    unknown dataset, and in the same words for one `visibility` does not show."""
    seed = existing_dataset(conn, namespace, name, visibility)
    reader = _Reader.of(conn, visibility)
    down = replace(params, direction="downstream", collapse=frozenset(), rollup=None)
    graph = graph_of(conn)
    number = graph.ids.datasets.known(str(seed.id))
    walk = shown_walk(graph, number, down, reader.visible, (max_nodes, max_relations))
    datasets = _hops_in_walk(graph, walk.shown, number)
    starts = {(seed.id, f) for f in known_fields(conn, seed)}
    edges = reader.field_edges(conn, params)
    fields, cut = _field_hops(edges, starts, params, max_nodes - len(datasets))
    reach = _Reach(datasets, fields, walk.omitted is not None or cut)
    return _answer(conn, seed, None, params, reach, reader, edges)


def field_impact(
    conn: Connection,
    namespace: str,
    name: str,
    field: str,
    params: LineageParams,
    *,
    max_nodes: int,
    visibility: Visibility = EVERYTHING,
) -> ImpactAnswer:
    """The impact report of one field: the fields downstream of it and their datasets (a
    dataset's hop count is that of its nearest field), of what `visibility` shows. NotFound
    for an unknown dataset or field, and for a dataset `visibility` does not show."""
    seed = existing_dataset(conn, namespace, name, visibility)
    require_field(conn, seed, field)
    reader = _Reader.of(conn, visibility)
    edges = reader.field_edges(conn, params)
    fields, cut = _field_hops(edges, {(seed.id, field)}, params, max_nodes)
    datasets: dict[uuid.UUID, int | None] = {}
    for (dataset_id, _), hops in fields.items():
        known = datasets.get(dataset_id)
        datasets[dataset_id] = hops if known is None else min(known, hops)
    datasets.pop(seed.id, None)
    return _answer(conn, seed, field, params, _Reach(datasets, fields, cut), reader, edges)


def csv_text(answer: Mapping[str, Any]) -> str:
    """The report as CSV (RFC 4180 quoting, CRLF): a header, then one line per row; lists
    are joined with `; `, jobs and owners written `namespace/name`. What a line says of its
    dataset (its jobs, owners and latest run) is written once per dataset: a report says
    the same of it on the line of each of its fields."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    said: dict[tuple[str, str], tuple[str, ...]] = {}
    for row in answer["rows"]:
        dataset = row["namespace"], row["name"]
        of = said.get(dataset)
        if of is None:
            of = said[dataset] = _csv_dataset(row)
        hops = row["hops"]
        writer.writerow(
            (row["kind"], *dataset, row["field"] or "", "" if hops is None else str(hops), *of)
        )
    return buffer.getvalue()


def _csv_dataset(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The CSV columns of `row` that its dataset decides, from `jobs` on."""
    run = row["latestRun"]
    return (
        "; ".join(f"{j['namespace']}/{j['name']}" for j in row["jobs"]),
        "; ".join(o["name"] for o in row["owners"]),
        "; ".join(sorted({o["name"] for j in row["jobs"] for o in j["owners"]})),
        run["runId"] if run else "",
        (run["state"] or "") if run else "",
        (run["endedAt"] or "") if run else "",
    )


def _hops_in_walk(
    graph: Graph, found: FoundRelations, start: int | None
) -> dict[uuid.UUID, int | None]:
    """Each dataset of a downstream walk (but the seed, numbered `start`; None when the
    index does not hold it) with its hop count: breadth first from the seed, one hop being a
    program that read a dataset and wrote another (None: the walk shows the dataset but no
    such path to it)."""
    readers: dict[int, set[int]] = defaultdict(set)
    writes: dict[int, set[int]] = defaultdict(set)
    datasets, jobs, written = (found.rows[:, column].tolist() for column in (0, 1, 3))
    for dataset, job, write in zip(datasets, jobs, written, strict=True):
        if write:
            writes[job].add(dataset)
        else:
            readers[dataset].add(job)
    hops: dict[int, int] = {}
    if start is not None:
        hops[start] = 0
        frontier = {start}
        while frontier:
            level = hops[next(iter(frontier))] + 1
            frontier = {d for key in frontier for p in readers[key] for d in writes[p]} - set(hops)
            hops.update(dict.fromkeys(frontier, level))
    texts = graph.ids.datasets.texts
    return {uuid.UUID(texts[d]): hops.get(d) for d in set(datasets) - {start}}


def _field_hops(
    edges: FieldEdges, starts: set[tuple[uuid.UUID, str]], params: LineageParams, room: int
) -> tuple[dict[tuple[uuid.UUID, str], int], bool]:
    """The fields downstream of `starts` within `params.levels` on `edges`, each with its
    hop count, at most `room` of them (nearest first, then by dataset and field); and
    whether that cap cut them."""
    hops = edges.hops(starts, "downstream", params.levels)
    nearest = sorted(hops.items(), key=lambda item: (item[1], item[0]))
    room = max(room, 0)
    return dict(nearest[:room]), len(nearest) > room


def _answer(
    conn: Connection,
    seed: DatasetRef,
    field: str | None,
    params: LineageParams,
    reach: _Reach,
    reader: _Reader,
    edges: FieldEdges,
) -> ImpactAnswer:
    dataset_ids = set(reach.datasets) | {d for d, _ in reach.fields}
    # As the process keeps them: a statement only for datasets it has not named yet.
    names = dataset_names_by_id(conn, dataset_ids)
    nearest = dict(reach.datasets)
    for (dataset_id, _), hops in reach.fields.items():
        if dataset_id != seed.id and nearest.get(dataset_id) is None:
            nearest[dataset_id] = hops
    carried = _Carriers.of(graph_of(conn), seed.id, nearest, params, reader.visible)
    job_names = _job_names(conn, carried.jobs_of_every_dataset())
    writers = carried.jobs_by_dataset()
    job_owners = owners_by_id(conn, t.jobs, set(job_names))
    dataset_owners = owners_by_id(conn, t.datasets, dataset_ids)
    runs = _runs(conn, set(carried.latest.values()))
    latest_runs = {d: runs[run] for d, run in carried.latest.items() if run in runs}
    rows: list[ImpactRow] = []
    # What a row says of its dataset, made once per dataset (its fields' rows say the same):
    # each look-up by a uuid hashes it in Python, and a report of thousands of rows made
    # five per row.
    said: dict[uuid.UUID, _Said] = {}

    def row(dataset_id: uuid.UUID, field_name: str | None, hops: int | None) -> None:
        of = said.get(dataset_id)
        if of is None:
            of = said[dataset_id] = said_of(dataset_id)
        if not of:  # no dataset of that id is stored
            return
        namespace, name, carriers, owners, latest = of
        rows.append(
            {
                "kind": "field" if field_name is not None else "dataset",
                "namespace": namespace,
                "name": name,
                "field": field_name,
                "hops": hops,
                "jobs": carriers,
                "owners": owners,
                "latestRun": latest,
            }
        )

    def said_of(dataset_id: uuid.UUID) -> _Said:
        if dataset_id not in names:
            return ()
        jobs = sorted(writers.get(dataset_id, ()), key=job_names.__getitem__)
        return (
            *names[dataset_id],
            [_job(job_names[j], job_owners.get(j, [])) for j in jobs],
            dataset_owners.get(dataset_id, []),
            latest_runs.get(dataset_id),
        )

    for dataset_id, dataset_hops in reach.datasets.items():
        row(dataset_id, None, dataset_hops)
    for (dataset_id, field_name), field_hops in reach.fields.items():
        row(dataset_id, field_name, field_hops)
    rows.sort(
        key=lambda r: (
            r["hops"] is None,
            r["hops"] or 0,
            r["kind"] == "field",
            r["namespace"],
            r["name"],
            r["field"] or "",
        )
    )
    answer: ImpactAnswer = {
        "dataset": {"namespace": seed.namespace, "name": seed.name},
        "field": field,
        "levels": params.levels,
        "start": int(params.start.timestamp()),
        "end": int(params.end.timestamp()),
        "rows": rows,
    }
    if reach.truncated:
        answer["truncated"] = True
    if reader.visible is not None:
        answer["hiddenNodes"] = reader.visible.hidden_nodes + edges.hidden_nodes
        answer["hiddenRelations"] = reader.visible.hidden_relations + edges.hidden_relations
    return answer


#: What every row of a dataset says of it: its namespace and name, the jobs that carried
#: the data into it, its owners and its latest run; empty for a dataset not stored.
_Said = tuple[str, str, list[ImpactJob], list[OwnerEntry], ImpactRun | None] | tuple[()]

#: A dataset's distance when the walk shows it without a path to it (`None` hops): every
#: carrier's read is nearer; a job that read nothing at a known distance is farther still.
_UNREACHED = np.int64(1 << 40)
#: The distance of a dataset the report does not hold: its relations are not read.
_ABSENT = np.int64(-1)
_NO_READ = np.int64(1 << 41)


@dataclass(frozen=True)
class _Carriers:
    """The relations that carried the data into each reached dataset, as index numbers:
    writes in the window by a job that read the seed or a dataset nearer to the seed than
    the one it wrote (the jobs in between), of jobs the reader may see."""

    graph: Graph
    #: Dataset, job and run numbers of the carrying writes.
    dataset: Ints
    job: Ints
    run: Ints
    #: The latest run that wrote each dataset (`_latest`), by dataset id.
    latest: dict[uuid.UUID, uuid.UUID]

    @classmethod
    def of(
        cls,
        graph: Graph,
        seed: uuid.UUID,
        hops: Mapping[uuid.UUID, int | None],
        params: LineageParams,
        visible: VisibleNodes | None,
    ) -> _Carriers:
        numbers = graph.ids.datasets
        distance = np.full(len(numbers), _ABSENT, dtype=np.int64)
        for reached, hop in {**hops, seed: 0}.items():
            if (number := numbers.known(str(reached))) is not None:
                distance[number] = _UNREACHED if hop is None else hop
        reads = WalkReads(graph, params.window, "downstream")
        rows = reads.relation_rows_of_datasets(np.flatnonzero(distance != _ABSENT))
        r = graph.relations
        dataset, job, run = (r[c][rows].astype(np.int64) for c in ("dataset", "job", "run"))
        write = r["write"][rows].astype(np.bool_)
        at = distance[dataset]
        nearest_read = np.full(len(graph.ids.jobs), _NO_READ, dtype=np.int64)
        known = ~write & (at < _UNREACHED)
        np.minimum.at(nearest_read, job[known], at[known])
        seed_number = numbers.known(str(seed))
        carries = write & (dataset != seed_number) & (nearest_read[job] < at)
        # A job the reader may not see carries nothing it is shown (the walks met it already).
        if visible is not None:
            carries &= visible.shows_jobs(job)
        dataset, job, run = dataset[carries], job[carries], run[carries]
        return cls(graph, dataset, job, run, _latest(graph, dataset, run))

    def jobs_of_every_dataset(self) -> set[uuid.UUID]:
        return {self._job_id(j) for j in np.unique(self.job).tolist()}

    def jobs_by_dataset(self) -> dict[uuid.UUID, set[uuid.UUID]]:
        found: dict[uuid.UUID, set[uuid.UUID]] = defaultdict(set)
        pairs = np.unique(np.stack([self.dataset, self.job], axis=1), axis=0)
        texts = self.graph.ids.datasets.texts
        for dataset, job in pairs.tolist():
            found[uuid.UUID(texts[dataset])].add(self._job_id(job))
        return found

    def _job_id(self, number: int) -> uuid.UUID:
        return uuid.UUID(self.graph.ids.jobs.texts[number])


def _latest(graph: Graph, dataset: Ints, run: Ints) -> dict[uuid.UUID, uuid.UUID]:
    """For each dataset, the latest of the runs that wrote it: the newest start (a run
    without one last), ties to the greater id. Chosen on the index's run starts, so only
    the rows of the runs shown are read, not those of every run of every carrier."""
    dataset, run = dataset[run != NONE], run[run != NONE]
    if not len(run):
        return {}
    starts, _ = graph.spans(run)
    started = starts != NO_START
    order = np.lexsort((starts, started, dataset))
    dataset, run, starts, started = dataset[order], run[order], starts[order], started[order]
    # The last row of each dataset holds its newest (started, start); its ties are the rows
    # equal to it, whose order falls to the run id's text.
    last = np.flatnonzero(np.append(dataset[1:] != dataset[:-1], True))
    group = np.cumsum(np.concatenate([[0], dataset[1:] != dataset[:-1]]))
    tied = (starts == starts[last][group]) & (started == started[last][group])
    datasets, runs = graph.ids.datasets.texts, graph.ids.runs.texts
    latest: dict[str, str] = {}
    for d, r in zip(dataset[tied].tolist(), run[tied].tolist(), strict=True):
        text = runs[r]
        if latest.get(datasets[d], "") < text:
            latest[datasets[d]] = text
    return {uuid.UUID(d): uuid.UUID(r) for d, r in latest.items()}


def _job_names(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, tuple[str, str]]:
    """The (namespace, name) of each job of `ids`, as the process keeps them (`names_of`)."""
    texts = {str(i): i for i in ids}
    return {texts[text]: name for text, name in names_of(conn)[1].of(conn, texts).items()}


def _job(name: tuple[str, str], owners: list[OwnerEntry]) -> ImpactJob:
    return {"namespace": name[0], "name": name[1], "owners": owners}


def _runs(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, ImpactRun]:
    r = t.runs.c
    found: dict[uuid.UUID, ImpactRun] = {}
    for matches in id_filters(conn, r.id, ids):
        query = sa.select(r.id, r.state, r.started_at, r.ended_at).where(matches)
        for row in conn.execute(query):
            found[row.id] = {
                "runId": str(row.id),
                "state": row.state,
                "startedAt": iso(row.started_at),
                "endedAt": iso(row.ended_at),
            }
    return found
