"""Group commit: posts that arrive while a write is in flight share the next transaction.

One event per transaction costs about 27 statements and a commit (an fsync) per event; eight
events in one transaction cost a third as much each (docs/performance.md). So each API
process writes through one `GroupCommit`: a post that finds no write in flight is written at
once, alone; posts that arrive meanwhile wait for it and then go together, up to
`max_events` events per transaction. An idle server adds no delay; a busy one commits less
often.

Every post still gets its own answer. Its events are acknowledged only after the
transaction holding them committed, and a post is all-or-nothing as before. When a shared
transaction fails (an event that the store refuses, a database error), each post of the
group is written again alone, in arrival order, so one bad post never fails the others and
each gets the error its own write gives — exactly what separate transactions would have
answered. A database that is unavailable fails the whole group at once: writing each post
alone would only make every one of them wait for the same outage in turn.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from anyio.to_thread import run_sync

from upstream.ingest.service import store_parts
from upstream.model.errors import StoreUnavailable
from upstream.model.facts import EventFacts
from upstream.store.engine import Store
from upstream.store.writer import WriteResult


class EventWriter(Protocol):
    """Where a server's posted OpenLineage events go: `GroupCommit` stores them, a
    publishing front's `upstream.kafka.publisher.KafkaPublisher` publishes them."""

    async def write(
        self, facts: Sequence[EventFacts], *, since: float | None = None
    ) -> WriteResult: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class _Post:
    facts: Sequence[EventFacts]
    answer: asyncio.Future[WriteResult]


class GroupCommit:
    """The write path of one API process (see the module docstring)."""

    def __init__(self, store: Store, *, max_events: int) -> None:
        self._store = store
        #: A post waiting for the writes before its own counts against its time too.
        self._answer_within = store.answer_within
        self._max_events = max_events
        self._waiting: deque[_Post] = deque()
        self._writer: asyncio.Task[None] | None = None

    async def write(
        self, facts: Sequence[EventFacts], *, since: float | None = None
    ) -> WriteResult:
        """Store `facts` (one post's events) atomically; returns once they are committed.
        Raises `StoreUnavailable` when that takes longer than one write may
        (`Store.answer_within`) from `since` (a `time.monotonic()`, when its request came;
        now by default), waiting for the writes before it included; its events may still be
        stored afterwards, which re-sending them allows."""
        post = _Post(facts, asyncio.get_running_loop().create_future())
        self._waiting.append(post)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain())
        # Shielded: when a client hangs up, or its time is up, its request is cancelled but
        # not its answer, which the writer still sets once the write (which other posts
        # share) is done, and nobody reads.
        post.answer.add_done_callback(_retrieved)
        try:
            waited = 0.0 if since is None else time.monotonic() - since
            left = max(self._answer_within - waited, 0.0)
            return await asyncio.wait_for(asyncio.shield(post.answer), left)
        except TimeoutError:
            raise StoreUnavailable(
                f"the database did not answer within {self._answer_within:g} s"
            ) from None

    async def close(self) -> None:
        """Wait for the writes under way, before the store goes away on shutdown: a post
        whose client hung up is still written, and nobody else waits for it."""
        if self._writer is not None:
            await asyncio.shield(self._writer)

    async def _drain(self) -> None:
        while self._waiting:
            group = self._next_group()
            try:
                outcomes = await run_sync(self._commit, group)
            except asyncio.CancelledError:  # the server stops: nobody will be answered
                for post in group + list(self._waiting):
                    post.answer.cancel()
                raise
            for post, outcome in zip(group, outcomes, strict=True):
                if isinstance(outcome, BaseException):
                    post.answer.set_exception(outcome)
                else:
                    post.answer.set_result(outcome)

    def _next_group(self) -> list[_Post]:
        """The oldest waiting posts, at most `max_events` events together (one post more
        than that goes alone)."""
        group = [self._waiting.popleft()]
        total = len(group[0].facts)
        while self._waiting and total + len(self._waiting[0].facts) <= self._max_events:
            total += len(self._waiting[0].facts)
            group.append(self._waiting.popleft())
        return group

    def _commit(self, group: list[_Post]) -> list[WriteResult | Exception]:
        """One transaction for the group, or, when it fails, one per post
        (`ingest.service.store_parts`); an outage fails every post of the group."""
        try:
            return store_parts(self._store, [post.facts for post in group])
        except Exception as exc:
            return [exc] * len(group)


def _retrieved(answer: asyncio.Future[WriteResult]) -> None:
    """Mark the answer's error as seen: a post whose time ran out has no reader."""
    if not answer.cancelled():
        answer.exception()
