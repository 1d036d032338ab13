"""Who an event's edges belong to: its job, its run (if any) and the scope it declares."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from upstream.model.facts import EdgeFact, JobNode, Node, Origin, Scope
from upstream.model.identity import JobRef


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
    ) -> EdgeFact:
        """An edge owned by this event's scope, job and run."""
        return EdgeFact(
            scope=self.scope,
            origin=origin,
            source=source,
            target=target,
            run_id=self.run_id,
            job=self.job,
            implied=implied,
            transformations=transformations,
        )

    def job_node(self) -> JobNode:
        if self.job is None:
            raise ValueError("this event has no job of its own")
        return JobNode(self.job, self.run_id)
