"""Who an event's edges belong to: its job, its run (if any) and the scope it declares."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from upstream.model.facts import JobNode, Scope
from upstream.model.identity import JobRef


@dataclass(frozen=True)
class Owner:
    """The event's own job and run: the subject of `JOB` references without an identity."""

    job: JobRef | None
    run_id: uuid.UUID | None
    scope: Scope
    event_time: datetime

    def job_node(self) -> JobNode:
        if self.job is None:
            raise ValueError("this event has no job of its own")
        return JobNode(self.job, self.run_id)
