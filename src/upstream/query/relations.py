"""CDAP's access relations (dataset, job, run, access, component) as walks hand them around,
and the marks that may make a dataset temporary to a workflow run, read for whole frontiers
(one statement per chunk of ids, `upstream.store.dialect.id_filters`). The relations a walk
follows come from the graph index (`upstream.query.graph_index.walk_reads`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.workflow import TemporaryMark
from upstream.store import schema as t
from upstream.store.dialect import id_filters

#: A relation without its component: (dataset, job, run, access).
RelationKey = tuple[uuid.UUID, uuid.UUID, uuid.UUID | None, str]


class Relation(NamedTuple):
    """Job `job_id` read or wrote dataset `dataset_id` in run `run_id` (None: declared by a
    JobEvent), through `component` ("" when the producer named none).

    A named tuple rather than a dataclass: walks build and hash tens of thousands of them,
    and a tuple costs a fraction of a frozen dataclass to make."""

    dataset_id: uuid.UUID
    job_id: uuid.UUID
    run_id: uuid.UUID | None
    access: str
    component: str = ""

    @property
    def sort_key(self) -> tuple[int, int, int, str, str]:
        """A stable order: the ids' integers order as their text does (fixed-width hex)
        and cost nothing to make; a declared relation (no run) comes first."""
        return (
            self.dataset_id.int,
            self.job_id.int,
            self.run_id.int if self.run_id is not None else -1,
            self.access,
            self.component,
        )


@dataclass(frozen=True)
class RunMark:
    """A relation that may make its dataset temporary to its run's workflow run (§3.4)."""

    dataset_id: uuid.UUID
    run_id: uuid.UUID
    mark: TemporaryMark


def temporary_marks(conn: Connection, dataset_ids: Collection[uuid.UUID]) -> Iterator[RunMark]:
    """Relations of runs that mark one of `dataset_ids` temporary, or CREATE or DROP it
    (among all the lifecycle states the run reported for it).

    Not limited to the query's window: a workflow run's temporaries are a fact about the
    whole workflow run, even where some of its runs fall outside the window."""
    r = t.relations.c
    for matches in id_filters(conn, r.dataset_id, dataset_ids):
        query = sa.select(r.dataset_id, r.run_id, r.temporary, r.lifecycles).where(
            matches,
            r.run_id.is_not(None),
            sa.or_(r.temporary, r.lifecycles.is_not(None)),
        )
        for row in conn.execute(query).all():
            mark = TemporaryMark(row.temporary, tuple(row.lifecycles or ()))
            if mark.temporary or mark.creates_or_drops:
                yield RunMark(row.dataset_id, row.run_id, mark)
