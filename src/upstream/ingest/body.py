"""The bytes of a posted document into JSON, safely: size limits before and after gzip
inflation, a bound on its shape before any object is built, then strict JSON.

Every way in decodes with this module, told what it decodes (`Source`): the HTTP API's request
bodies (`api.body` reads the headers and the stream, then calls `decode_events` or `decode`
once) and Kafka message values (`kafka.messages`). Refusals are `MalformedDocument` (not
JSON the server reads) and `DocumentTooLarge` (over a limit); each adapter maps them in its own
table (`api.errors.STATUS`, `kafka.messages.REASON`).

Work per document is bounded before any object is built: its bytes (before and after
inflation), then its shape (events per batch, values per event: `json_shape`), so a 10 kB
gzip value that would parse into millions of empty objects is refused on its bytes.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from upstream.ingest.json_shape import ShapeLimits, check_batch_size, check_events, check_shape
from upstream.model.errors import DocumentTooLarge, MalformedDocument
from upstream.model.strict_json import parse_batch, parse_json


@dataclass(frozen=True)
class Source:
    """What is decoded, as the messages name it: `noun` where a size limit is passed
    ("request body is larger than …"), `label` where the text as a whole is refused
    ("body: malformed JSON …"; empty: the message alone)."""

    noun: str
    label: str


REQUEST_BODY = Source("request body", "body")
MESSAGE_VALUE = Source("message value", "")


@dataclass(frozen=True)
class Limits:
    """The server's limits on one document (`max_body_bytes`, `max_batch_events`,
    `max_event_values`); `max_events` None: the document is one whole, not a batch."""

    max_bytes: int
    max_events: int | None
    max_values: int

    @property
    def shape(self) -> ShapeLimits:
        return ShapeLimits(max_items=self.max_events, max_values=self.max_values)


@dataclass(frozen=True)
class Body:
    """A parsed document. `texts`: the compact JSON text of each event (of each item of an
    array, or of the one document), written once by the strict parse (`parse_batch`) and
    kept as the events' payloads, so no event is written twice; a batch too large to be
    measured before parsing is measured on them (`json_shape.check_events`)."""

    document: Any
    texts: list[str] | None = None


@dataclass(frozen=True)
class Events:
    """The events of a document: `batch` when it was a JSON array (stored all-or-nothing)."""

    documents: list[Any]
    batch: bool
    texts: list[str] | None = None


def too_large(source: Source, max_bytes: int) -> DocumentTooLarge:
    """The refusal of a document whose bytes pass `max_bytes`."""
    return DocumentTooLarge.at("", f"{source.noun} is larger than {max_bytes} bytes")


def decode_events(raw: bytes, *, gzipped: bool, limits: Limits, source: Source) -> Events:
    """The OpenLineage events of `raw`: one event, or a non-empty JSON array of them."""
    body = decode(raw, gzipped=gzipped, limits=limits, source=source)
    if not isinstance(body.document, list):
        return Events([body.document], batch=False, texts=body.texts)
    if not body.document:
        raise MalformedDocument.at(source.label, "an empty array holds no events")
    return Events(body.document, batch=True, texts=body.texts)


def decode(raw: bytes, *, gzipped: bool, limits: Limits, source: Source) -> Body:
    """Inflate (when `gzipped`), check the size and the shape, parse; raises
    MalformedDocument or DocumentTooLarge."""
    if len(raw) > limits.max_bytes:
        raise too_large(source, limits.max_bytes)
    if gzipped:
        raw = inflate(raw, limits.max_bytes, source)
    measured_after = check_shape(raw, limits.shape)
    if limits.max_events is None:  # one whole document, not events: no text is kept
        document = parse_json(raw, source.label)
        return Body(document)
    document, texts = parse_batch(raw, source.label)
    check_batch_size(document, limits.shape)
    if texts is None:
        return Body(document)
    if measured_after:
        check_events(texts, limits.max_values)
    return Body(document, texts)


def inflate(raw: bytes, max_bytes: int, source: Source) -> bytes:
    """Gunzip with a ceiling, so a gzip bomb is refused before it fills memory. A document of
    several gzip members (as `cat a.gz b.gz` makes) inflates to their concatenation."""
    parts: list[bytes] = []
    size = 0
    rest = raw
    try:
        while True:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            part = inflater.decompress(rest, max_bytes - size + 1)
            size += len(part)
            if size > max_bytes or inflater.unconsumed_tail:
                message = f"{source.noun} inflates to more than {max_bytes} bytes"
                raise DocumentTooLarge.at("", message)
            if not inflater.eof:
                raise MalformedDocument.at(source.label, "gzip stream is truncated")
            parts.append(part)
            rest = inflater.unused_data
            if not rest.strip(b"\0"):  # some writers pad the last member with zeros
                return b"".join(parts)
    except zlib.error as exc:
        raise MalformedDocument.at(source.label, f"not valid gzip ({exc})") from None
