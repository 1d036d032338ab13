"""A time window for lineage queries (DESIGN §4.1): start inclusive, end exclusive."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Window:
    """Runs count when they overlap the window: started before `end` and not finished before
    `start`. Declared (run-less) lineage is always inside."""

    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError("start must not be after end")
