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
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.identity import DatasetRef
from upstream.query.answers import (
    ImpactAnswer,
    ImpactJob,
    ImpactRow,
    ImpactRun,
    LineageAnswer,
    OwnerEntry,
)
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.field_operation_sets import dataset_names, known_fields, require_field
from upstream.query.graph_index.field_walk import FieldEdges
from upstream.query.graph_index.graph import NO_START
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.graph_index.walk_reads import WalkReads
from upstream.query.lineage_params import LineageParams
from upstream.query.lookup import existing_dataset
from upstream.query.marquez.common import iso
from upstream.query.owners import owners_by_id
from upstream.query.relations import Relation
from upstream.store import schema as t
from upstream.store.dialect import id_filters

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
    walk = dataset_lineage(
        conn,
        namespace,
        name,
        down,
        max_nodes=max_nodes,
        max_relations=max_relations,
        visibility=visibility,
        visible=reader.visible,
    )
    datasets = _hops_in_walk(walk, seed)
    starts = {(seed.id, f) for f in known_fields(conn, seed)}
    edges = reader.field_edges(conn, params)
    fields, cut = _field_hops(edges, starts, params, max_nodes - len(datasets))
    reach = _Reach(datasets, fields, bool(walk.get("truncated")) or cut)
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
    are joined with `; `, jobs and owners written `namespace/name`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for row in answer["rows"]:
        run = row["latestRun"]
        writer.writerow(
            (
                row["kind"],
                row["namespace"],
                row["name"],
                row["field"] or "",
                "" if row["hops"] is None else str(row["hops"]),
                "; ".join(f"{j['namespace']}/{j['name']}" for j in row["jobs"]),
                "; ".join(o["name"] for o in row["owners"]),
                "; ".join(sorted({o["name"] for j in row["jobs"] for o in j["owners"]})),
                run["runId"] if run else "",
                (run["state"] or "") if run else "",
                (run["endedAt"] or "") if run else "",
            )
        )
    return buffer.getvalue()


def _hops_in_walk(walk: LineageAnswer, seed: DatasetRef) -> dict[uuid.UUID, int | None]:
    """Each dataset of a downstream walk (but the seed) with its hop count: breadth first
    from the seed, one hop being a program that read a dataset and wrote another."""
    readers: dict[str, set[str]] = defaultdict(set)
    writes: dict[str, set[str]] = defaultdict(set)
    for relation in walk["relations"]:
        if "read" in relation["accesses"]:
            readers[relation["data"]].add(relation["program"])
        if "write" in relation["accesses"]:
            writes[relation["program"]].add(relation["data"])
    ids = {
        key: DatasetRef(e["entityId"]["namespace"], e["entityId"]["name"]).id
        for key, e in walk["data"].items()
    }
    seed_key = next(key for key, id_ in ids.items() if id_ == seed.id)
    hops: dict[str, int] = {seed_key: 0}
    frontier = [seed_key]
    while frontier:
        reached = {d for key in frontier for p in readers[key] for d in writes[p]} - set(hops)
        for key in reached:
            hops[key] = hops[frontier[0]] + 1
        frontier = sorted(reached)
    return {id_: hops.get(key) for key, id_ in ids.items() if id_ != seed.id}


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
    names = dataset_names(conn, dataset_ids)
    nearest = dict(reach.datasets)
    for (dataset_id, _), hops in reach.fields.items():
        if dataset_id != seed.id and nearest.get(dataset_id) is None:
            nearest[dataset_id] = hops
    every_writer = _carriers(conn, seed.id, nearest, params)
    job_names = _job_names(conn, {job for jobs in every_writer.values() for job, _ in jobs})
    # A job the reader may not see carries nothing it is shown (the walks met it already).
    writers = {
        dataset: {pair for pair in jobs if reader.visibility.shows(job_names[pair[0]][0])}
        for dataset, jobs in every_writer.items()
    }
    job_ids = {job for jobs in writers.values() for job, _ in jobs}
    job_owners = owners_by_id(conn, t.jobs, job_ids)
    dataset_owners = owners_by_id(conn, t.datasets, dataset_ids)
    latest_runs = _latest_runs(conn, writers)
    rows: list[ImpactRow] = []

    def row(dataset_id: uuid.UUID, field_name: str | None, hops: int | None) -> ImpactRow:
        jobs = sorted({job for job, _ in writers.get(dataset_id, ())}, key=job_names.__getitem__)
        return {
            "kind": "field" if field_name is not None else "dataset",
            "namespace": names[dataset_id].namespace,
            "name": names[dataset_id].name,
            "field": field_name,
            "hops": hops,
            "jobs": [_job(job_names[j], job_owners.get(j, [])) for j in jobs],
            "owners": dataset_owners.get(dataset_id, []),
            "latestRun": latest_runs.get(dataset_id),
        }

    for dataset_id, dataset_hops in reach.datasets.items():
        if dataset_id in names:
            rows.append(row(dataset_id, None, dataset_hops))
    for (dataset_id, field_name), field_hops in reach.fields.items():
        if dataset_id in names:
            rows.append(row(dataset_id, field_name, field_hops))
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


def _carriers(
    conn: Connection,
    seed: uuid.UUID,
    hops: dict[uuid.UUID, int | None],
    params: LineageParams,
) -> dict[uuid.UUID, set[tuple[uuid.UUID, uuid.UUID | None]]]:
    """For each reached dataset, the (job, run) pairs that wrote it in the window after
    reading the seed or a dataset nearer to it: the jobs in between."""
    reads = WalkReads(graph_of(conn), params.window, "downstream")
    relations = reads.relations_of_datasets({seed, *hops})
    distance: dict[uuid.UUID, int | None] = {**hops, seed: 0}
    read_at: dict[uuid.UUID, list[int]] = defaultdict(list)
    for r in relations:
        at = distance.get(r.dataset_id)
        if r.access == "read" and at is not None:
            read_at[r.job_id].append(at)
    carriers: dict[uuid.UUID, set[tuple[uuid.UUID, uuid.UUID | None]]] = defaultdict(set)
    for r in _writes(relations):
        at = distance.get(r.dataset_id)
        if r.dataset_id != seed and any(at is None or seen < at for seen in read_at[r.job_id]):
            carriers[r.dataset_id].add((r.job_id, r.run_id))
    return carriers


def _writes(relations: Collection[Relation]) -> list[Relation]:
    return [r for r in relations if r.access == "write"]


def _job_names(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, tuple[str, str]]:
    j = t.jobs.c
    found: dict[uuid.UUID, tuple[str, str]] = {}
    for matches in id_filters(conn, j.id, ids):
        for row in conn.execute(sa.select(j.id, j.namespace, j.name).where(matches)):
            found[row.id] = (row.namespace, row.name)
    return found


def _job(name: tuple[str, str], owners: list[OwnerEntry]) -> ImpactJob:
    return {"namespace": name[0], "name": name[1], "owners": owners}


def _latest_runs(
    conn: Connection, writers: Mapping[uuid.UUID, set[tuple[uuid.UUID, uuid.UUID | None]]]
) -> dict[uuid.UUID, ImpactRun]:
    """For each dataset of `writers`, the latest run that wrote it: the newest start (a run
    without one last), ties to the greater id. Chosen on the index's run starts, so only
    the rows of the runs shown are read, not those of every run of every carrier."""
    graph = graph_of(conn)
    runs = {run for jobs in writers.values() for _, run in jobs if run is not None}
    numbered = {run: graph.ids.runs.known(str(run)) for run in runs}
    known = {run: n for run, n in numbered.items() if n is not None}
    starts, _ = graph.spans(np.fromiter(known.values(), dtype=np.int64, count=len(known)))
    start_of = dict(zip(known, starts.tolist(), strict=True))

    def recency(run: uuid.UUID) -> tuple[bool, int, str]:
        start = start_of[run]
        return (start != NO_START, start, str(run))

    latest = {
        dataset: max(written, key=recency)
        for dataset, jobs in writers.items()
        if (written := [run for _, run in jobs if run in start_of])
    }
    rows = _runs(conn, set(latest.values()))
    return {dataset: rows[run] for dataset, run in latest.items() if run in rows}


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
