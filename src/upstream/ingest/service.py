"""The one ingestion path (design §3): validate every event, translate it to facts, store the
batch in one transaction. A batch is all-or-nothing; re-posting an event changes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Connection

from upstream.ingest.relink import rederive_runs, relink
from upstream.ingest.sql_runs import with_run_sql_lineage
from upstream.ingest.translate import facts_for
from upstream.model.errors import InvalidInput, Problem
from upstream.model.events import DatasetEvent, JobEvent, OpenLineageEvent, RunEvent, parse_event
from upstream.model.facts import EventFacts, EventRecord
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.json_text import content_key, dumps
from upstream.store.engine import Store
from upstream.store.writer import WriteResult, write_facts


def ingest_documents(
    store: Store, documents: Sequence[Any], *, batch: bool, sql_lineage: bool = True
) -> WriteResult:
    """Store `documents` (parsed JSON events) atomically.

    `batch` says the client posted a JSON array, so problems are located as `[i].path`;
    `sql_lineage` whether `sql` job facets are parsed for column lineage (§3.3).
    Raises InvalidInput, and stores nothing, when any event is invalid.
    """
    return store_facts(store, prepare(documents, batch=batch, sql_lineage=sql_lineage))


def store_facts(
    store: Store, facts: Sequence[EventFacts], received: datetime | None = None
) -> WriteResult:
    """Write prepared events in one transaction (all-or-nothing), as received now, or at
    `received` (a replay of history received over months, which files it by month)."""
    now = received or datetime.now(UTC)

    def write(conn: Connection) -> WriteResult:
        step = with_run_sql_lineage(conn, facts)
        result = write_facts(conn, step.facts, now)
        relink(conn, result.stale, sorted(result.new_keys), translate_document)
        rederive_runs(conn, step.rederive, translate_document)
        return result

    result, position = store.write_at(write)
    return dataclasses.replace(result, position=position)


def split_result(shared: WriteResult, parts: Sequence[Sequence[EventFacts]]) -> list[WriteResult]:
    """Each part's share of one transaction's result: an event is stored for the first part
    that carried it and a duplicate for every other, as separate transactions would say."""
    claimed: set[str] = set()
    results: list[WriteResult] = []
    for facts in parts:
        keys = [f.record.key for f in facts]
        new = {k for k in keys if k in shared.new_keys and k not in claimed}
        claimed |= new
        results.append(
            WriteResult(
                stored=len(new),
                duplicates=len(keys) - len(new),
                new_keys=frozenset(new),
                position=shared.position,
            )
        )
    return results


def prepare(
    documents: Sequence[Any],
    *,
    batch: bool,
    sql_lineage: bool = True,
    texts: Sequence[str] | None = None,
) -> list[EventFacts]:
    """Validate and translate every document; collect the problems of all of them. `texts`,
    when given, are the documents' compact JSON texts (`json_text.dumps`), kept as payloads."""
    prepared: list[EventFacts] = []
    problems: list[Problem] = []
    for index, document in enumerate(documents):
        text = None if texts is None else texts[index]
        try:
            prepared.append(translate_document(document, sql_lineage=sql_lineage, text=text))
        except InvalidInput as exc:
            problems.extend((exc.within(f"[{index}]") if batch else exc).problems)
    if problems:
        raise InvalidInput(problems[:50])
    return prepared


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
    record = EventRecord(
        key=content_key(document),
        payload=dumps(document) if text is None else text,
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
