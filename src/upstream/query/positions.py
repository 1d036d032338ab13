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

import threading
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
#: Seconds a read waits for its views before the primary is asked whether its position was
#: ever given: a replica replays a write within milliseconds, so most reads never ask.
_CHECK_GIVEN_AFTER = 0.05


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
        #: The newest position every view was seen to include (`_included`).
        self._seen = 0
        #: Guards `_seen`, `_looking` and `_waiting`; waiting reads wait on it for a look.
        self._looked = threading.Condition()
        #: Whether a waiting read is looking at the views now, for all of them.
        self._looking = False
        #: The positions the reads waiting now name.
        self._waiting: list[int] = []
        if store.replicas is not None:
            self.plug(lambda _wanted: store.read_position())  # a replica's replay

    def plug(self, view: View) -> None:
        """Answer reads from `view` too: reads naming a position wait for it as well."""
        with self._looked:
            self._plugged.append(view)
            self._seen = 0  # never looked at yet

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
        """Return once every view includes `after`.

        One waiting read at a time looks at the views, for every read waiting, and wakes
        the others when it has looked: reads that wait together cost the views one look
        (one question to a replica, one application of changes to the index), not one each,
        and a read naming a position the views were seen to include asks nothing (views
        only move forward; a read switched to a replica further behind is checked in its
        own snapshot, `replicas.reads_must_include`). The primary is asked whether `after`
        was ever given only once the read has waited `_CHECK_GIVEN_AFTER` seconds, or
        before it gives up: a position a view includes was, and one just given is mostly
        included within that."""
        if not self._plugged:
            self._refuse_beyond_newest(after)
            return
        check_at = min(time.monotonic() + _CHECK_GIVEN_AFTER, deadline)
        checked = False
        pause = _FIRST_PAUSE
        looking = False
        with self._looked:
            self._waiting.append(after)
        try:
            while True:
                with self._looked:
                    if looking:  # looked and paused: another read may look now
                        self._looking = looking = False
                        self._looked.notify_all()
                    looking = self._my_turn(after, deadline if checked else check_at)
                    if self._seen >= after:
                        return
                    smallest, largest = min(self._waiting), max(self._waiting)
                now = time.monotonic()
                if not checked and now >= check_at:
                    self._refuse_beyond_newest(after)
                    checked = True
                if now >= deadline:
                    raise NotCaughtUp(after, self._seen)
                if looking:
                    if self._looked_at(smallest, largest) >= after:
                        return
                    time.sleep(max(min(pause, deadline - time.monotonic()), 0.0))
                    pause = min(pause * 2, _LONGEST_PAUSE)
        finally:
            with self._looked:
                self._waiting.remove(after)
                if looking:
                    self._looking = False
                    self._looked.notify_all()

    def _my_turn(self, after: int, until: float) -> bool:
        """Whether this read looks at the views now (holding `_looked`): none looks, and the
        views were not seen to include `after`. Else waits, at most until `until`, for the
        look of the read that is looking."""
        while self._seen < after:
            if not self._looking:
                self._looking = True
                return True
            left = until - time.monotonic()
            if left <= 0:
                return False
            self._looked.wait(left)
        return False

    def _looked_at(self, smallest: int, largest: int) -> int:
        """Look at the views for the reads waiting (their positions run from `smallest` to
        `largest`): the position every view includes. The views after one behind `smallest`
        are not asked: every read waits anyway, and they look again next time."""
        answers: list[int] = []
        for view in self._plugged:
            answers.append(view(largest))
            if answers[-1] < smallest:
                break
        included = min(answers)
        with self._looked:
            self._seen = max(self._seen, included)
            self._looked.notify_all()
        return included

    def _refuse_beyond_newest(self, after: int) -> None:
        stored = self._store.read_position(primary=True)
        if after > stored:
            raise InvalidParameter(
                [Problem("after", f"position {after} is beyond the newest, {stored}")]
            )
