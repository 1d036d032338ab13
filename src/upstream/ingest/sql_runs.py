"""The `sql` lineage of a batch of events in the transaction that writes them (design §3.3):
the SQL's table names may name datasets only the run's earlier events listed."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.engine import Connection

from upstream.ingest.translate import with_sql_lineage
from upstream.model.facts import EventFacts
from upstream.store.run_datasets import datasets_of_runs


def with_run_sql_lineage(conn: Connection, batch: Sequence[EventFacts]) -> list[EventFacts]:
    """Each event's `sql` lineage, its table names resolved against the datasets its run
    listed before: in stored events, and in earlier events of this batch. Done inside the
    write, so a retried transaction computes it again from the same state."""
    if all(f.sql is None for f in batch):
        return list(batch)
    runs = {f.record.run_id for f in batch if f.sql is not None and f.record.run_id}
    known = datasets_of_runs(conn, runs) if runs else {}
    completed: list[EventFacts] = []
    for facts in batch:
        run = facts.record.run_id
        listed = known.setdefault(run, {}) if run in runs else {}
        completed.append(with_sql_lineage(facts, dict(listed)) if facts.sql else facts)
        if run in runs:
            fields = {d.ref: d.fields for d in facts.datasets}
            for relation in facts.relations:
                if relation.origin == "io":
                    names = [f["name"] for f in fields.get(relation.dataset) or []]
                    listed[relation.dataset] = names or listed.get(relation.dataset)
    return completed
