"""Read-your-writes by position (design §6): a read that names a change-log position waits
until what this process answers from includes it.

Every acknowledged write answers with the position it committed at (`Store.write_at`). A
client that passes it to its next read (`after`) is answered only by a view that includes
that write, whichever process answers. The views of a process are the store as its reads see
it and whatever else it answers from — the in-memory graph index plugs in with `plug`, the
read replica (`upstream.store.replicas`) is plugged when the store reads from one. A
read waits, up to a bound, for the slowest of them to catch up, then gives up with
`NotCaughtUp` (503, retry later). A position beyond the newest the store (its primary) has
given was never answered to anyone: it is refused, naming `after`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from upstream.model.errors import InvalidParameter, NotCaughtUp, Problem
from upstream.store.change_log import position
from upstream.store.engine import Store

#: The position a view includes now (it may catch up first, as an index applying changes).
View = Callable[[], int]

#: Seconds between two looks at a view that is behind, at first and at most.
_FIRST_PAUSE, _LONGEST_PAUSE = 0.005, 0.1


def parse_after(*given: str | None) -> int | None:
    """The position a read names, as `?after=` or the `X-Upstream-Position` header (the
    larger when both are given); None when neither is. A value that is no position is
    refused, naming `after`."""
    positions: list[int] = []
    for text in given:
        if text is None:
            continue
        if not re.fullmatch("[0-9]+", text):
            raise InvalidParameter(
                [Problem("after", f"must be a change-log position (0 or more), not {text!r}")]
            )
        positions.append(int(text))
    return max(positions, default=None)


class Views:
    """What this process answers reads from, and how far each has caught up."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._plugged: list[View] = []
        if store.replicas is not None:
            self.plug(store.read_position)  # a replica's replay

    def plug(self, view: View) -> None:
        """Answer reads from `view` too: reads naming a position wait for it as well."""
        self._plugged.append(view)

    def wait_for(self, after: int, within: float) -> None:
        """Return once every view includes position `after`, waiting at most `within`
        seconds; raise NotCaughtUp past that, InvalidParameter for a position the store
        never gave."""
        with self._store.read(primary=True) as conn:
            stored = position(conn)
        if after > stored:
            raise InvalidParameter(
                [Problem("after", f"position {after} is beyond the newest, {stored}")]
            )
        deadline = time.monotonic() + within
        pause = _FIRST_PAUSE
        while (included := min((view() for view in self._plugged), default=stored)) < after:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotCaughtUp(after, included)
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)
