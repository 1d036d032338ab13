"""An accepted JSON document as the store keeps it: its event, its facts and its record."""

from __future__ import annotations

from typing import Any

from upstream.ingest.translate import facts_for
from upstream.model.events import DatasetEvent, JobEvent, OpenLineageEvent, RunEvent, parse_event
from upstream.model.facts import EventFacts, EventRecord
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.json_text import content_key, dumps
from upstream.model.named_namespaces import io_namespaces_text, namespaces_in_text


def translate_document(
    document: Any, *, sql_lineage: bool = True, text: str | None = None
) -> EventFacts:
    event = parse_event(document)
    return facts_for(event, event_record(event, document, text), sql_lineage=sql_lineage)


def event_record(
    event: OpenLineageEvent, document: dict[str, Any], text: str | None = None
) -> EventRecord:
    """The event as it will be kept: its content verbatim (`text` when the caller has already
    written it), keyed by a hash of that content. Each is written once, by orjson
    (`upstream.model.json_text`)."""
    payload = dumps(document) if text is None else text
    record = EventRecord(
        key=content_key(document),
        payload=payload,
        namespaces=namespaces_in_text(payload),
        io_namespaces=io_namespaces_text(document),
        event_type=type(event).__name__,
        event_kind=getattr(event, "eventType", None),
        event_time=event.eventTime,
    )
    if isinstance(event, RunEvent):
        record.run_id = event.run.runId
    if isinstance(event, RunEvent | JobEvent):
        record.job = JobRef(event.job.namespace, event.job.name)
    if isinstance(event, DatasetEvent):
        record.dataset = DatasetRef(event.dataset.namespace, event.dataset.name)
    return record
