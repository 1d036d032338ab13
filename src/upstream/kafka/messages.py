"""A batch of Kafka messages into the store: each message stands alone, the batch shares one
transaction.

A message value is decoded exactly as a `POST /api/v1/lineage` body (same size limit, gzip,
strict JSON, the same validation); it holds one event, as the OpenLineage `KafkaTransport`
writes it, or a JSON array of events stored all-or-nothing, as a posted array. The good
messages of a batch are written in one transaction. A bad message is refused alone: the
others of its batch are stored. When the shared transaction fails for a reason other than an
outage (the store refuses one message's events), each good message is written alone, so the
one that fails is found and the rest are stored. An outage of the database is raised, never
turned into refusals: the caller waits and tries the same batch again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from upstream.api.body import inflate, parse_json
from upstream.api.errors import ApiError
from upstream.ingest.service import prepare, store_parts
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store.engine import Store
from upstream.store.writer import WriteResult

_GZIP_MAGIC = b"\x1f\x8b"


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


@dataclass(frozen=True)
class Limits:
    """The API's limits, applied to a message value as to a request body."""

    max_bytes: int
    max_events: int


def ingest_messages(
    store: Store, values: Sequence[bytes | None], limits: Limits
) -> list[MessageOutcome]:
    """Store the events of every good message of the batch; one outcome per message, in
    order. Raises only when the database is unavailable (nothing was stored then)."""
    outcomes: list[MessageOutcome | None] = []
    prepared: dict[int, list[EventFacts]] = {}
    for index, value in enumerate(values):
        try:
            prepared[index] = prepare_message(value, limits)
            outcomes.append(None)
        except MessageRefused as exc:
            outcomes.append(MessageOutcome(events=0, refusal=exc.refusal))
    for index, outcome in _store(store, prepared).items():
        outcomes[index] = outcome
    return [outcome for outcome in outcomes if outcome is not None]


class MessageRefused(Exception):
    """The message cannot be stored as it is; sending it again changes nothing."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


def prepare_message(value: bytes | None, limits: Limits) -> list[EventFacts]:
    """The validated events of one message value; raises MessageRefused."""
    documents, batch = decode_value(value, limits)
    try:
        return prepare(documents, batch=batch)
    except InvalidInput as exc:
        raise MessageRefused(Refusal("invalid", str(exc))) from None


def decode_value(value: bytes | None, limits: Limits) -> tuple[list[Any], bool]:
    """The documents of a message value and whether it was a JSON array; the rules of a
    request body (api/body.py), with the same messages."""
    if value is None:
        raise MessageRefused(Refusal("malformed", "the message has no value (a tombstone)"))
    if len(value) > limits.max_bytes:
        raise MessageRefused(
            Refusal("too_large", f"the message value is larger than {limits.max_bytes} bytes")
        )
    try:
        raw = inflate(value, limits.max_bytes) if value.startswith(_GZIP_MAGIC) else value
        document = parse_json(raw)
    except ApiError as exc:
        reason = "too_large" if exc.status == 413 else "malformed"
        text = exc.message.replace("request body", "message value").removeprefix("body: ")
        raise MessageRefused(Refusal(reason, text)) from None
    if not isinstance(document, list):
        return [document], False
    if not document:
        raise MessageRefused(Refusal("malformed", "an empty array holds no events"))
    if len(document) > limits.max_events:
        raise MessageRefused(
            Refusal(
                "too_large",
                f"an array may hold at most {limits.max_events} events, not {len(document)}",
            )
        )
    return document, True


def _store(store: Store, prepared: dict[int, list[EventFacts]]) -> dict[int, MessageOutcome]:
    """One transaction for every prepared message, else one per message
    (`ingest.service.store_parts`, which raises an outage)."""
    if not prepared:
        return {}
    results = store_parts(store, list(prepared.values()))
    return {
        index: _outcome(facts, result)
        for (index, facts), result in zip(prepared.items(), results, strict=True)
    }


def _outcome(facts: list[EventFacts], result: WriteResult | Exception) -> MessageOutcome:
    if isinstance(result, InvalidInput):
        return MessageOutcome(events=len(facts), refusal=Refusal("invalid", str(result)))
    if isinstance(result, Exception):
        reason = " ".join(str(getattr(result, "orig", None) or result).split())[:500]
        refusal = Refusal("refused_by_store", f"the store refused it: {reason}")
        return MessageOutcome(events=len(facts), refusal=refusal)
    return MessageOutcome(events=len(facts), stored=result.stored, duplicates=result.duplicates)
