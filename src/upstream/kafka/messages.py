"""A batch of Kafka messages into the store: each message stands alone, the batch shares one
transaction.

A message value is decoded by the same function as a `POST /api/v1/lineage` body
(`ingest.body.decode_events`: the same size and shape limits, gzip, strict JSON), then
validated by the same `prepare`; it holds one event, as the OpenLineage `KafkaTransport`
writes it, or a JSON array of events stored all-or-nothing, as a posted array. `REASON` says
how each refusal is counted and dead-lettered. The good
messages of a batch are written in one transaction. A bad message is refused alone: the
others of its batch are stored. When the shared transaction fails for a reason other than an
outage (the store refuses one message's events), each good message is written alone, so the
one that fails is found and the rest are stored. An outage of the database is raised, never
turned into refusals: the caller waits and tries the same batch again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from upstream.collector import batch_in_flight
from upstream.ingest.body import MESSAGE_VALUE, Events, Limits, decode_events
from upstream.ingest.service import Also, prepare, store_parts
from upstream.model.errors import (
    Conflict,
    DocumentTooLarge,
    InvalidInput,
    InvalidParameter,
    MalformedDocument,
)
from upstream.model.facts import EventFacts
from upstream.store import kafka_offsets
from upstream.store.engine import Store
from upstream.store.writer import WriteResult

_GZIP_MAGIC = b"\x1f\x8b"

#: The refusal reason (the metric label, and the dead-letter header `upstream.reason`) of each
#: error the decoding and the validation of a message raise; every class has its own entry
#: (`tests/api/test_error_mapping.py` checks). A refused message is never tried again: sending the
#: same bytes changes nothing.
REASON: dict[type[InvalidInput], str] = {
    InvalidInput: "invalid",
    InvalidParameter: "invalid",
    Conflict: "invalid",
    MalformedDocument: "malformed",
    DocumentTooLarge: "too_large",
}


def reason_of(exc: InvalidInput) -> str:
    """The reason of the most specific class of `exc` that `REASON` names."""
    return next(REASON[k] for k in type(exc).__mro__ if k in REASON)


@dataclass(frozen=True)
class Refusal:
    """Why a message was stored nowhere: `reason` is a metric label (malformed, too_large,
    invalid, refused_by_store), `message` says what is wrong, naming the path in the event."""

    reason: str
    message: str


@dataclass(frozen=True)
class MessageOutcome:
    """What became of one message: its events stored or already known, or its refusal."""

    events: int
    stored: int = 0
    duplicates: int = 0
    refusal: Refusal | None = None


def ingest_messages(
    store: Store,
    values: Sequence[bytes | None],
    limits: Limits,
    following: Mapping[tuple[str, int], int] | None = None,
) -> list[MessageOutcome]:
    """Store the events of every good message of the batch; one outcome per message, in
    order. Raises only when the database is unavailable (nothing was stored then).

    `following` (topic and partition: the offset after the batch's last message there) is
    recorded with the events (`store.kafka_offsets`), in their transaction: a refused
    message is done with as surely as a stored one."""
    outcomes: list[MessageOutcome | None] = []
    prepared: dict[int, list[EventFacts]] = {}
    # The watcher's rounds wait for the decoding too.
    with store.taking_write(), batch_in_flight():
        for index, value in enumerate(values):
            try:
                prepared[index] = prepare_message(value, limits)
                outcomes.append(None)
            except MessageRefused as exc:
                outcomes.append(MessageOutcome(events=0, refusal=exc.refusal))
        also = None if not following else partial(kafka_offsets.record, following=following)
        for index, outcome in _store(store, prepared, also).items():
            outcomes[index] = outcome
    return [outcome for outcome in outcomes if outcome is not None]


class MessageRefused(Exception):
    """The message cannot be stored as it is; sending it again changes nothing."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def prepare_message(value: bytes | None, limits: Limits) -> list[EventFacts]:
    """The validated events of one message value; raises MessageRefused."""
    try:
        events = decode_value(value, limits)
        return prepare(events.documents, batch=events.batch, texts=events.texts)
    except InvalidInput as exc:
        raise MessageRefused(Refusal(reason_of(exc), str(exc))) from None


def decode_value(value: bytes | None, limits: Limits) -> Events:
    """The events of a message value, decoded as a request body is; a gzip value is known by
    its first bytes (Kafka has no content encoding). Raises MessageRefused for a tombstone,
    and the refusals of `decode_events`."""
    if value is None:
        raise MessageRefused(Refusal("malformed", "the message has no value (a tombstone)"))
    gzipped = value.startswith(_GZIP_MAGIC)
    return decode_events(value, gzipped=gzipped, limits=limits, source=MESSAGE_VALUE)


def _store(
    store: Store, prepared: dict[int, list[EventFacts]], also: Also | None
) -> dict[int, MessageOutcome]:
    """One transaction for every prepared message, else one per message
    (`ingest.service.store_parts`, which raises an outage); `also` with them."""
    if not prepared:
        if also is not None:
            store.write(also)
        return {}
    results = store_parts(store, list(prepared.values()), also)
    return {
        index: _outcome(facts, result)
        for (index, facts), result in zip(prepared.items(), results, strict=True)
    }


def _outcome(facts: list[EventFacts], result: WriteResult | Exception) -> MessageOutcome:
    if isinstance(result, InvalidInput):
        return MessageOutcome(events=len(facts), refusal=Refusal(reason_of(result), str(result)))
    if isinstance(result, Exception):
        reason = " ".join(str(getattr(result, "orig", None) or result).split())[:500]
        refusal = Refusal("refused_by_store", f"the store refused it: {reason}")
        return MessageOutcome(events=len(facts), refusal=refusal)
    return MessageOutcome(events=len(facts), stored=result.stored, duplicates=result.duplicates)
