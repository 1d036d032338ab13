"""A publishing front's batch as its messages carry it, and which of a consumer's messages
belong to a batch that must not be stored (design §6).

A post of several events becomes several messages, on several partitions, and Kafka may
acknowledge some and not others; the broker the tests run (Tansu) delivers even the messages of
an aborted Kafka transaction. So each message of such a post carries its batch's id and
deadline in headers, and the batch's one fate is a row (`store.published_batches`): a consumer
stores a tagged message only once its batch is committed, skips it once abandoned, and
abandons a batch itself when its deadline passed undecided (its front died or lost the
database). A message without the headers — one event posted alone, a producer's own
transport — is stored as it comes, as before.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.engine import Connection

from upstream.store import published_batches
from upstream.store.engine import Store

#: A message's headers, as confluent_kafka gives and takes them.
Headers = list[tuple[str, str | bytes | None]] | dict[str, str | bytes | None]
#: Headers of a batched message: its batch's id, and the Unix time after which a consumer
#: abandons the batch if it is still undecided.
BATCH_HEADER = "upstream.batch"
DEADLINE_HEADER = "upstream.batch.deadline"
#: Seconds past the publish time-out before a batch's deadline: the front gives up waiting for
#: Kafka 5 s after the time-out, so it has decided well before a consumer would.
DECISION_GRACE = 10.0


@dataclass(frozen=True)
class BatchTag:
    """Which batch a message belongs to, and until when its front may commit it."""

    batch: uuid.UUID
    deadline: float

    def headers(self) -> list[tuple[str, str | bytes | None]]:
        return [
            (BATCH_HEADER, str(self.batch).encode("ascii")),
            (DEADLINE_HEADER, f"{self.deadline:.3f}".encode("ascii")),
        ]

    @classmethod
    def of(cls, headers: Headers | None) -> BatchTag | None:
        """The tag in a message's headers; None for a message no front batched (or whose
        tag is unreadable: it is stored as any producer's message is)."""
        found = dict(headers or ())
        batch, deadline = found.get(BATCH_HEADER), found.get(DEADLINE_HEADER)
        if batch is None or deadline is None:
            return None
        try:
            return cls(uuid.UUID(_text(batch)), float(_text(deadline)))
        except (ValueError, UnicodeDecodeError):
            return None


def _text(value: str | bytes) -> str:
    return value.decode("ascii") if isinstance(value, bytes) else value


@dataclass(frozen=True)
class Verdict:
    """Of a consumer's batch of messages: the positions of those to skip (their batch was
    abandoned), and how many wait for their batch's decision."""

    abandoned: frozenset[int]
    undecided: int


def judge(store: Store, tags: Sequence[BatchTag | None], now: float) -> Verdict:
    """What becomes of each message of a consumer's batch, given the tag of each (None:
    untagged, stored); batches past their deadline (`now`, Unix time) and undecided are
    abandoned on the way, on the primary."""
    tagged = {index: tag for index, tag in enumerate(tags) if tag is not None}
    if not tagged:
        return Verdict(frozenset(), 0)
    batches = {tag.batch for tag in tagged.values()}
    with store.read(primary=True) as conn:
        fate = published_batches.decided(conn, batches)
    overdue = {
        t.batch: t.deadline for t in tagged.values() if t.batch not in fate and t.deadline <= now
    }
    if overdue:

        def abandon(conn: Connection) -> dict[uuid.UUID, bool]:
            published_batches.abandon(conn, overdue)
            return published_batches.decided(conn, batches)

        fate = store.write(abandon)
    return Verdict(
        abandoned=frozenset(i for i, tag in tagged.items() if fate.get(tag.batch) is False),
        undecided=sum(tag.batch not in fate for tag in tagged.values()),
    )
