"""Keep the `flows` table true: re-derive the flows of the owners a write touched (design §6).

An owner is a run, or the declaration of a job or of a dataset. Its flows are derived from all
it has stored so far (`upstream.model.flow_rules.derive_flows`), then its old rows are deleted
and the new ones inserted, in the writer's transaction: a later event of the same run that
adds inputs, outputs or a facet re-derives the whole run, so arrival order never matters.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.flow_rules import Access, DatasetEdge, Flow, OwnerLineage, derive_flows
from upstream.store import schema as t
from upstream.store.dialect import ByIds, advisory_xact_locks, id_filters, in_id_order, insert_rows
from upstream.store.lineage_writer import unwritten_sets
from upstream.store.months import with_months

#: Version of the derivation rules. A store whose derived tables were built by other rules
#: is rebuilt from its raw events on start (`upstream.ingest.rebuild`). 3: field edges read
#: from `sql` job facets (design §3.3), or the history of declarations (design §4.5); 4: both;
#: 5: derived rows name the canonical identity of a dataset's symlink group (design §3.3).
#: 6: edges stored once per distinct lineage set, linked to each owner (design §6);
#: 7: a run's SQL resolves against the datasets of all its events, whatever their order.
#: 8: OpenLineage's `datasetType` (JOB_OUTPUT, subtype TEMPORARY) marks relations temporary.
#: 9: a COMPLETE_SNAPSHOT event of a streaming run supersedes its earlier events' lineage.
#: 10: the `jobDependencies` run facet's control-flow edges (`job_dependencies`).
DERIVED_VERSION = "10"


@dataclass
class Owners:
    """The owners whose flows a write may have changed."""

    runs: set[uuid.UUID] = field(default_factory=set)
    jobs: set[uuid.UUID] = field(default_factory=set)
    datasets: set[uuid.UUID] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.runs or self.jobs or self.datasets)


def rederive_flows(conn: Connection, owners: Owners) -> None:
    """Replace the flows of every owner in `owners` by those its stored facts give now.

    On PostgreSQL each owner is locked for the transaction first (in id order, so writers
    never deadlock), so two writers of one run cannot interleave their delete and insert."""
    if not owners:
        return
    every = in_id_order(owners.runs | owners.jobs | owners.datasets)
    advisory_xact_locks(conn, every)
    runs = _runs(conn, owners.runs)
    lineages = [
        *_run_lineages(conn, runs),
        *_job_lineages(conn, owners.jobs),
        *_dataset_lineages(conn, owners.datasets),
    ]
    for matches in id_filters(conn, t.flows.c.owner_id, every):
        conn.execute(t.flows.delete().where(matches))
    rows = [flow_row(lineage, flow) for lineage in lineages for flow in derive_flows(lineage)]
    insert_rows(conn, t.flows, with_months(conn, t.flows, rows))


def flow_row(lineage: OwnerLineage, flow: Flow) -> dict[str, Any]:
    """A row of `flows` for one flow of `lineage` (its run's span is the run's row's)."""
    return {
        "scope": lineage.scope,
        "owner_id": lineage.owner_id,
        "source_dataset_id": flow.source,
        "target_dataset_id": flow.target,
        "job_id": flow.job_id,
        "inferred": flow.inferred,
    }


_LINEAGE_FACETS = ByIds(
    t.runs.c.id, lambda ids: sa.select(t.runs.c.id, t.runs.c.has_lineage_facet).where(ids)
)


def _runs(conn: Connection, run_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, bool]:
    """Whether the events of each of `run_ids` carry the lineage facet (then no inputs x
    outputs product, flow rules; a run without a stored row has none), in one statement."""
    runs = dict.fromkeys(run_ids, False)
    for rows in _LINEAGE_FACETS.run(conn, run_ids):
        for row in rows:
            runs[row.id] = bool(row.has_lineage_facet)
    return runs


def _accesses(
    conn: Connection, column: sa.Column[Any], ids: Collection[uuid.UUID], *where: Any
) -> dict[uuid.UUID, list[Access]]:
    r = t.relations.c
    found: dict[uuid.UUID, list[Access]] = defaultdict(list)
    for matches in id_filters(conn, column, ids):
        query = sa.select(column.label("owner"), r.dataset_id, r.job_id, r.access, r.origin).where(
            matches, *where
        )
        for owner, *access in conn.execute(query):
            found[owner].append(Access(*access))
    return found


def _edges(
    conn: Connection, ids: Collection[uuid.UUID], scope: str
) -> dict[uuid.UUID, list[DatasetEdge]]:
    """What the flow rules need of each owner's edges: the outputs its links describe, and
    the dataset -> dataset edges (no field) of the sets they link to. Field edges, most of
    every set, are never read here."""
    link, e = t.lineage_links.c, t.lineage_set_edges.c
    links: list[tuple[uuid.UUID, uuid.UUID | None, uuid.UUID | None, uuid.UUID]] = []
    for matches in id_filters(conn, link.owner_id, ids):
        query = sa.select(link.owner_id, link.target_dataset_id, link.job_id, link.set_id).where(
            matches, link.scope == scope
        )
        links.extend(tuple(row) for row in conn.execute(query))
    dataset_level: dict[uuid.UUID, list[tuple[uuid.UUID | None, uuid.UUID | None]]]
    dataset_level = defaultdict(list)
    linked = {row[3] for row in links}
    unwritten = unwritten_sets(conn)  # this transaction's sets, stored at its end
    for set_id in linked & unwritten.keys():
        dataset_level[set_id] = [
            (edge.source_dataset_id, edge.target_dataset_id)
            for edge in unwritten[set_id].edges
            if edge.source_type == "dataset"
            and edge.target_type == "dataset"
            and edge.source_field is None
            and edge.target_field is None
        ]
    for matches in id_filters(conn, e.set_id, sorted(linked - unwritten.keys())):
        query = sa.select(e.set_id, e.source_dataset_id, e.target_dataset_id).where(
            matches,
            e.source_type == "dataset",
            e.target_type == "dataset",
            e.source_field.is_(None),
            e.target_field.is_(None),
        )
        for row in conn.execute(query):
            dataset_level[row.set_id].append((row.source_dataset_id, row.target_dataset_id))
    found: dict[uuid.UUID, list[DatasetEdge]] = defaultdict(list)
    for owner, output, job_id, set_id in links:
        found[owner].append(DatasetEdge(None, None, job_id, output))
        found[owner].extend(
            DatasetEdge(source, target, job_id, target) for source, target in dataset_level[set_id]
        )
    return found


def dataset_edge(row: Mapping[Any, Any]) -> DatasetEdge:
    """An edge row (a declaration's, in `declared_edges`) as the flow rules read it."""
    dataset_ends = (
        row["source_type"] == "dataset"
        and row["target_type"] == "dataset"
        and row["source_field"] is None
        and row["target_field"] is None
    )
    return DatasetEdge(
        source=row["source_dataset_id"] if dataset_ends else None,
        target=row["target_dataset_id"] if dataset_ends else None,
        job_id=row["job_id"],
        target_dataset=row["target_dataset_id"],
    )


def _run_lineages(conn: Connection, runs: Mapping[uuid.UUID, bool]) -> Iterable[OwnerLineage]:
    accesses = _accesses(conn, t.relations.c.run_id, runs)
    edges = _edges(conn, runs, "run")
    for run_id in in_id_order(runs):
        yield OwnerLineage(
            scope="run",
            owner_id=run_id,
            run_id=run_id,
            no_product=runs[run_id],
            accesses=tuple(accesses.get(run_id, ())),
            edges=tuple(edges.get(run_id, ())),
        )


def _job_lineages(conn: Connection, job_ids: Collection[uuid.UUID]) -> Iterable[OwnerLineage]:
    accesses = _accesses(conn, t.relations.c.job_id, job_ids, t.relations.c.run_id.is_(None))
    edges = _edges(conn, job_ids, "job")
    no_product: set[uuid.UUID] = set()
    j = t.jobs.c
    for matches in id_filters(conn, j.id, job_ids):
        query = sa.select(j.id).where(matches, j.declared_lineage_facet)
        no_product.update(conn.execute(query).scalars())
    for job_id in sorted(job_ids):
        yield OwnerLineage(
            scope="job",
            owner_id=job_id,
            run_id=None,
            no_product=job_id in no_product,
            accesses=tuple(accesses.get(job_id, ())),
            edges=tuple(edges.get(job_id, ())),
        )


def _dataset_lineages(
    conn: Connection, dataset_ids: Collection[uuid.UUID]
) -> Iterable[OwnerLineage]:
    edges = _edges(conn, dataset_ids, "dataset")
    for dataset_id in sorted(dataset_ids):
        yield OwnerLineage(
            scope="dataset",
            owner_id=dataset_id,
            run_id=None,
            no_product=True,
            edges=tuple(edges.get(dataset_id, ())),
        )
