"""Group commit: posts that arrive while a write is in flight share the next transaction.

One event per transaction costs ≈ 20 statements and a commit (an fsync) per event; eight
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
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from anyio.to_thread import run_sync

from upstream.ingest.service import split_result, store_facts
from upstream.model.errors import StoreUnavailable
from upstream.model.facts import EventFacts
from upstream.store.engine import Store
from upstream.store.writer import WriteResult


@dataclass(frozen=True)
class _Post:
    facts: Sequence[EventFacts]
    answer: asyncio.Future[WriteResult]


class GroupCommit:
    """The write path of one API process (see the module docstring)."""

    def __init__(self, store: Store, *, max_events: int) -> None:
        self._store = store
        self._max_events = max_events
        self._waiting: deque[_Post] = deque()
        self._writer: asyncio.Task[None] | None = None

    async def write(self, facts: Sequence[EventFacts]) -> WriteResult:
        """Store `facts` (one post's events) atomically; returns once they are committed."""
        post = _Post(facts, asyncio.get_running_loop().create_future())
        self._waiting.append(post)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._drain())
        # Shielded: when a client hangs up, its request is cancelled but not its answer,
        # which the writer still sets once the write (which other posts share) is done.
        return await asyncio.shield(post.answer)

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
        """One transaction for the group, or, when it fails, one per post."""
        try:
            shared = store_facts(self._store, [f for post in group for f in post.facts])
        except Exception as exc:
            if len(group) == 1 or isinstance(exc, StoreUnavailable):
                return [exc] * len(group)
            return [self._alone(post) for post in group]
        return list(split_result(shared, [post.facts for post in group]))

    def _alone(self, post: _Post) -> WriteResult | Exception:
        try:
            return store_facts(self._store, post.facts)
        except Exception as exc:
            return exc
