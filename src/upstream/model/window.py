"""A time window for lineage queries (design §4.1): start inclusive, end exclusive, and the
time the answer is as of (design §4.5)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from upstream.model.timeexpr import EPOCH

#: The stores' time resolution: an end just past `as_of` includes runs that started at it.
_RESOLUTION = timedelta(microseconds=1)


@dataclass(frozen=True)
class Window:
    """Runs count when they overlap the window: started before `end` and not finished before
    `start`. Declared (run-less) lineage is always inside.

    With `as_of`, the answer is the lineage as it stood then: only runs that had started by
    `as_of` count, and each job's and dataset's declaration is the one in force at `as_of`.
    Without it, now: every run, the current declarations."""

    start: datetime
    end: datetime
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError("start must not be after end")

    @classmethod
    def until(cls, as_of: datetime) -> Window:
        """Every run that had started by `as_of`: for answers that have no window of their
        own (the Marquez graph, run lineage)."""
        return cls(EPOCH, max(as_of, EPOCH) + _RESOLUTION, as_of)
