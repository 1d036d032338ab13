"""CDAP's access relations (dataset, job, run, access, component) as the answers built around
a walk hand them around. The relations a walk follows come from the graph index
(`upstream.query.graph_index.walk_reads`).
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

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
