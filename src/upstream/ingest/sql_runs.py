"""The `sql` lineage of a batch of events in the transaction that writes them (design §3.3).

The SQL's table names resolve against every dataset the run lists in any of its events, so a
run's SQL lineage is a function of all its events, whatever order they arrive in: against
the datasets its stored events list and those of every event of the batch. An event stored
before the others of its run (COMPLETE with the SQL and the outputs before START with the
inputs) was resolved against fewer; when a batch then adds datasets, or their fields, to a
run that has stored SQL edges, the step names the run to be derived again from all its
events (`upstream.ingest.recipe.rederive_runs`). The usual order (inputs first, then the
SQL) never needs that: the SQL edges are not stored when the inputs arrive.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from upstream.ingest.translate import with_sql_lineage
from upstream.model.facts import EventFacts
from upstream.model.identity import DatasetRef
from upstream.store.aliases import canonical_refs
from upstream.store.dialect import advisory_xact_locks
from upstream.store.run_datasets import RunDatasets, datasets_of_runs, runs_with_sql_edges


@dataclass(frozen=True)
class SqlStep:
    """The batch with its SQL lineage, and the runs whose stored SQL lineage it makes stale."""

    facts: list[EventFacts]
    rederive: frozenset[uuid.UUID]


def with_run_sql_lineage(
    conn: Connection,
    batch: Sequence[EventFacts],
    known: Mapping[uuid.UUID, RunDatasets] | None = None,
) -> SqlStep:
    """Each event's `sql` lineage, its table names resolved against the datasets its run
    lists in stored events and in any event of this batch; `known` gives all the datasets
    of runs being derived again, whose stored rows were just forgotten. Done inside the
    write, so a retried transaction computes it again from the same state."""
    known = known or {}
    listed = _listed(batch)
    sql_runs = {f.record.run_id for f in batch if f.sql is not None and f.record.run_id}
    if not listed and all(f.sql is None for f in batch):
        return SqlStep(list(batch), frozenset())
    # Writers of one run take turns from here (PostgreSQL): the second sees what the first
    # stored, its SQL edges or its datasets, and resolves or re-derives accordingly.
    advisory_xact_locks(conn, listed.keys() | sql_runs)
    derived = runs_with_sql_edges(conn, listed.keys() - known.keys())
    stored = datasets_of_runs(conn, (sql_runs | derived) - known.keys())
    rederive = _adding(conn, {run: listed[run] for run in derived}, stored)
    completed: list[EventFacts] = []
    for facts in batch:
        run = facts.record.run_id
        if facts.sql is None:
            completed.append(facts)
            continue
        datasets = dict(known[run] if run in known else stored.get(run, {})) if run else {}
        for ref, names in listed.get(run, {}).items() if run else ():
            datasets[ref] = names or datasets.get(ref)
        completed.append(with_sql_lineage(facts, datasets))
    return SqlStep(completed, rederive)


def _listed(batch: Sequence[EventFacts]) -> dict[uuid.UUID, RunDatasets]:
    """Per run, the datasets the batch's events list as inputs or outputs, with the fields
    an event states (a later event's stated fields win)."""
    listed: dict[uuid.UUID, RunDatasets] = {}
    for facts in batch:
        run = facts.record.run_id
        if run is None:
            continue
        fields = {d.ref: d.fields for d in facts.datasets}
        for relation in facts.relations:
            if relation.origin == "io":
                datasets = listed.setdefault(run, {})
                names = [f["name"] for f in fields.get(relation.dataset) or []]
                datasets[relation.dataset] = names or datasets.get(relation.dataset)
    return listed


def _adding(
    conn: Connection,
    listed: Mapping[uuid.UUID, RunDatasets],
    stored: Mapping[uuid.UUID, RunDatasets],
) -> frozenset[uuid.UUID]:
    """The runs to which `listed` adds a dataset, or fields that differ from the stored
    ones. Stored relations name a dataset's canonical identity (`upstream.store.aliases`):
    a listed alias adds nothing when its canonical identity is stored."""
    adding: set[uuid.UUID] = set()
    unknown: dict[uuid.UUID, list[DatasetRef]] = {}
    for run, datasets in listed.items():
        have = stored.get(run, {})
        for ref, names in datasets.items():
            if ref not in have:
                unknown.setdefault(run, []).append(ref)
            elif names is not None and names != have[ref]:
                adding.add(run)
    unknown = {run: refs for run, refs in unknown.items() if run not in adding}
    if unknown:
        canonical = canonical_refs(conn, {ref.id for refs in unknown.values() for ref in refs})
        for run, refs in unknown.items():
            have = stored.get(run, {})
            if any(canonical.get(ref.id, ref) not in have for ref in refs):
                adding.add(run)
    return frozenset(adding)
