"""The line `upstream lineage` adds when its window hides every relation of a dataset that has
history (the answer's `latestRunOutsideWindow`): when that run started, and the window option
that shows it. The answer itself, and the exit status 0, stay as they are."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any


def window_hint(response: Mapping[str, Any], namespace: str, dataset: str) -> str | None:
    """One line naming the window to use, or None when the answer needs none. A run before
    the window is shown by starting the window at the run's start (to the second, earlier);
    a run after it by ending the window just after the run's start."""
    latest = response.get("latestRunOutsideWindow")
    if not isinstance(latest, str):
        return None
    started = datetime.fromisoformat(latest).astimezone(UTC)
    floor = started.replace(microsecond=0)
    if started.timestamp() < response.get("start", 0):
        option = f"--start {_written(floor)}"
    else:
        option = f"--end {_written(floor + timedelta(seconds=1))}"
    return (
        f"no lineage of {namespace} / {dataset} in this window; its latest run started "
        f"{_written(floor)}: use {option} to see it"
    )


def _written(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
