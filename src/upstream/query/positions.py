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

import time
from collections.abc import Callable, Sequence

from upstream.model.errors import InvalidParameter, NotCaughtUp, Problem
from upstream.model.read_position import KafkaOffset, ReadPosition
from upstream.store import kafka_offsets
from upstream.store.change_log import position
from upstream.store.engine import Store

#: The position a view includes now, given the position a read waits for: it may catch up
#: first, as an index applying changes, and need not look further when it holds that already.
View = Callable[[int], int]
#: Refuses (InvalidParameter) Kafka offsets that were never given: beyond their partition's
#: newest, or of a partition Kafka does not have (`kafka.watermarks`).
OffsetCheck = Callable[[Sequence[KafkaOffset]], None]

#: Seconds between two looks at a view that is behind, at first and at most.
_FIRST_PAUSE, _LONGEST_PAUSE = 0.005, 0.1


def parse_after(*given: str | None) -> ReadPosition | None:
    """The position a read names, as `?after=` or the `X-Upstream-Position` header (both
    when both are given); None when neither is. A value that is no position is refused,
    naming `after`."""
    positions = [ReadPosition.parse(text) for text in given if text is not None]
    if not positions:
        return None
    joined = positions[0]
    for other in positions[1:]:
        joined = joined.together(other)
    return joined


class Views:
    """What this process answers reads from, and how far each has caught up."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._plugged: list[View] = []
        self._check_offsets: OffsetCheck | None = None
        if store.replicas is not None:
            self.plug(lambda _wanted: store.read_position())  # a replica's replay

    def plug(self, view: View) -> None:
        """Answer reads from `view` too: reads naming a position wait for it as well."""
        self._plugged.append(view)

    def check_offsets_with(self, check: OffsetCheck) -> None:
        """Refuse Kafka offsets `check` refuses; without one such a read only waits."""
        self._check_offsets = check

    def wait_for(self, after: ReadPosition, within: float) -> int | None:
        """Return once every view includes `after` — its store position, and the store
        position at which the consumers had stored its Kafka offsets — waiting at most
        `within` seconds in all; raise NotCaughtUp past that, InvalidParameter for a position
        never given. The store position waited for is returned: the read's own snapshot
        must include it."""
        deadline = time.monotonic() + within
        change = after.change
        if after.offsets:
            stored_at = self._consumed(after.offsets, deadline)
            change = stored_at if change is None else max(change, stored_at)
        if change is not None:
            self._included(change, deadline)
        return change

    def _consumed(self, offsets: Sequence[KafkaOffset], deadline: float) -> int:
        """The store position of the first primary snapshot in which consumers have stored
        every message of `offsets`."""
        pause = _FIRST_PAUSE
        checked = False
        while True:
            with self._store.read(primary=True) as conn:
                stored = kafka_offsets.stored(conn, offsets)
                if kafka_offsets.covers(stored, offsets):
                    return position(conn)
            if not checked:
                self._refuse_unknown(offsets)  # once, and only for a read that must wait
                checked = True
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotCaughtUp(
                    str(ReadPosition(offsets=tuple(offsets))),
                    str(ReadPosition(offsets=stored)) or "none of their partitions",
                    by="what the Kafka consumers stored",
                )
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)

    def _refuse_unknown(self, offsets: Sequence[KafkaOffset]) -> None:
        """Refuse offsets never given: as the brokers say when this process knows them, else
        those of a topic no consumer ever stored anything of into this database (a consumer
        stores a topic's first batch within moments of its first message)."""
        if self._check_offsets is not None:
            self._check_offsets(offsets)
            return
        topics = {o.topic for o in offsets}
        with self._store.read(primary=True) as conn:
            unknown = topics - kafka_offsets.known_topics(conn, topics)
        if unknown:
            raise InvalidParameter(
                [
                    Problem("after", f"no Kafka consumer has stored anything of topic {topic}")
                    for topic in sorted(unknown)
                ]
            )

    def _included(self, after: int, deadline: float) -> None:
        """Return once every view includes `after`. The primary is asked whether `after` was
        ever given only when a view is behind it: a position a view of the store includes
        was. Most reads find their views caught up, and cost the primary nothing."""
        if not self._plugged:
            self._refuse_beyond_newest(after)
            return
        pause = _FIRST_PAUSE
        checked = False
        while (behind := self._behind(after)) is not None:
            if not checked:
                self._refuse_beyond_newest(after)
                checked = True
            left = deadline - time.monotonic()
            if left <= 0:
                raise NotCaughtUp(after, behind)
            time.sleep(min(pause, left))
            pause = min(pause * 2, _LONGEST_PAUSE)

    def _behind(self, after: int) -> int | None:
        """The position of the first view (in the order plugged) that does not include
        `after` yet; None when all do. The views after one behind are not asked: the
        read waits anyway, and they look again next time."""
        for view in self._plugged:
            included = view(after)
            if included < after:
                return included
        return None

    def _refuse_beyond_newest(self, after: int) -> None:
        with self._store.read(primary=True) as conn:
            stored = position(conn)
        if after > stored:
            raise InvalidParameter(
                [Problem("after", f"position {after} is beyond the newest, {stored}")]
            )
