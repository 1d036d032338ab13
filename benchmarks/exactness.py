"""Stored lineage against the generator's ground truth: precision and recall of the effective
dataset edges per run (explicit and inferred, as `upstream.model.flow_rules` derives them when
events are written), of the stored field edges the producers stated (edges with a field end,
not the implied dataset edges), and of those the server parsed from the plain jobs' `sql`
facets."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from upstream.store import schema as t
from upstream.store.edge_rows import EDGES
from upstream.store.engine import Store
from upstream.store.walks import flows


@dataclass(frozen=True)
class Score:
    """How one stored edge set compares with its truth."""

    name: str
    stored: int
    expected: int
    matched: int
    missing: list[tuple[str, ...]]
    unexpected: list[tuple[str, ...]]

    @property
    def precision(self) -> float:
        return self.matched / self.stored if self.stored else 1.0

    @property
    def recall(self) -> float:
        return self.matched / self.expected if self.expected else 1.0

    @property
    def exact(self) -> bool:
        return self.precision == 1.0 and self.recall == 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "stored": self.stored,
            "expected": self.expected,
            "precision": self.precision,
            "recall": self.recall,
            "missing_sample": [list(x) for x in self.missing[:5]],
            "unexpected_sample": [list(x) for x in self.unexpected[:5]],
        }


def score(name: str, stored: set[tuple[str, ...]], expected: set[tuple[str, ...]]) -> Score:
    matched = stored & expected
    return Score(
        name,
        len(stored),
        len(expected),
        len(matched),
        sorted(expected - stored),
        sorted(stored - expected),
    )


def stored_dataset_edges(store: Store) -> set[tuple[str, ...]]:
    """(source ns, source name, target ns, target name, job name, run id) of every flow."""
    with store.read() as conn:
        names = {
            r.id: (r.namespace, r.name)
            for r in conn.execute(
                sa.select(t.datasets.c.id, t.datasets.c.namespace, t.datasets.c.name)
            )
        }
        jobs = {r.id: r.name for r in conn.execute(sa.select(t.jobs.c.id, t.jobs.c.name))}
        found = flows(conn, list(names), "upstream")
    return {
        (*names[f.source], *names[f.target], jobs[f.job_id] if f.job_id else "", _text(f.run_id))
        for f in found
    }


def stored_field_edges(store: Store, *, from_sql: bool) -> set[tuple[str, ...]]:
    """(source ns, name, field, target ns, name, field or "", run id) of every field edge
    parsed from SQL (`from_sql`), or of every other one."""
    e = EDGES
    source = t.datasets.alias("source")
    target = t.datasets.alias("target")
    query = (
        sa.select(
            source.c.namespace,
            source.c.name,
            e.c.source_field,
            target.c.namespace.label("target_namespace"),
            target.c.name.label("target_name"),
            e.c.target_field,
            e.c.run_id,
        )
        .join_from(e, source, source.c.id == e.c.source_dataset_id)
        .join(target, target.c.id == e.c.target_dataset_id)
        .where(
            sa.or_(e.c.source_field.is_not(None), e.c.target_field.is_not(None)),
            ~e.c.implied,
            (e.c.origin == "sql") if from_sql else (e.c.origin != "sql"),
        )
    )
    with store.read() as conn:
        return {
            (r[0], r[1], r[2] or "", r[3], r[4], r[5] or "", _text(r[6]))
            for r in conn.execute(query)
        }


def _text(run_id: uuid.UUID | None) -> str:
    return "" if run_id is None else str(run_id)


def check(store: Store, truth: dict[str, Any]) -> list[Score]:
    """The scores for the store against the truth loaded by `generator.load_truth`."""
    return [
        score("dataset edges", stored_dataset_edges(store), truth["dataset_edges"]),
        score("field edges", stored_field_edges(store, from_sql=False), truth["field_edges"]),
        score(
            "SQL field edges",
            stored_field_edges(store, from_sql=True),
            truth["sql_field_edges"],
        ),
    ]
