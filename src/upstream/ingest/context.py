"""Who an event's edges belong to: its job, its run (if any) and the scope it declares."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upstream.model.facts import EdgeFact, JobNode, Node, Origin, Scope
from upstream.model.identity import JobRef
from upstream.model.lineage_sets import EdgePart


@dataclass(frozen=True)
class Owner:
    """The event's own job and run: the subject of `JOB` references without an identity."""

    job: JobRef | None
    run_id: uuid.UUID | None
    scope: Scope
    event_time: datetime

    def edge(
        self,
        origin: Origin,
        source: Node,
        target: Node,
        transformations: list[dict[str, Any]],
        *,
        implied: bool = False,
        part: EdgePart | None = None,
    ) -> EdgeFact:
        """An edge owned by this event's scope, job and run; `part`: the part it was read
        from, with the other edges it states."""
        return EdgeFact(
            scope=self.scope,
            origin=origin,
            source=source,
            target=target,
            run_id=self.run_id,
            job=self.job,
            implied=implied,
            transformations=transformations,
            part=part,
        )

    def job_node(self) -> JobNode:
        if self.job is None:
            raise ValueError("this event has no job of its own")
        return JobNode(self.job, self.run_id)
