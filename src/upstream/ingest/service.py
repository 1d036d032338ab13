"""The one ingestion path (design §3): validate every event, translate it to facts, store the
batch in one transaction. A batch is all-or-nothing; re-posting an event changes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.engine import Connection

from upstream.collector import batch_in_flight
from upstream.ingest.documents import translate_document
from upstream.ingest.recipe import apply_recipe
from upstream.model.errors import InvalidInput
from upstream.model.facts import EventFacts
from upstream.store.engine import Store
from upstream.store.outage import is_database_outage
from upstream.store.writer import WriteResult


def ingest_documents(
    store: Store, documents: Sequence[Any], *, batch: bool, sql_lineage: bool = True
) -> WriteResult:
    """Store `documents` (parsed JSON events) atomically.

    `batch` says the client posted a JSON array, so problems are located as `[i].path`;
    `sql_lineage` whether `sql` job facets are parsed for column lineage (§3.3).
    Raises InvalidInput, and stores nothing, when any event is invalid.
    """
    with batch_in_flight():
        return store_facts(store, prepare(documents, batch=batch, sql_lineage=sql_lineage))


#: More work for the transaction that stores a batch, after the recipe (a consumer's offsets).
Also = Callable[[Connection], None]


def store_facts(
    store: Store,
    facts: Sequence[EventFacts],
    received: datetime | None = None,
    also: Also | None = None,
) -> WriteResult:
    """Write prepared events in one transaction (all-or-nothing) through the write recipe
    (`ingest.recipe.apply_recipe`), as received now, or at `received` (a replay of history
    received over months, which files it by month); `also` runs last in the transaction."""
    now = received or datetime.now(UTC)

    def work(conn: Connection) -> WriteResult:
        result = apply_recipe(conn, facts, now)
        if also is not None:
            also(conn)
        return result

    result, position = store.write_at(work)
    return dataclasses.replace(result, position=position)


def store_parts(
    store: Store, parts: Sequence[Sequence[EventFacts]], also: Also | None = None
) -> list[WriteResult | Exception]:
    """Store each part (a post, a Kafka message) all-or-nothing, in one shared transaction,
    else each part alone: the result or the error of each, in order. `also` runs in the
    shared transaction, or, when the parts are written alone, in one of its own after them:
    either way it commits only after every part that could be stored is.

    One transaction for all costs a commit instead of one per part. When it fails for a
    reason other than an outage (the store refuses one part's events), each part is written
    again alone, in order, so one bad part never fails the others and each gets the error
    its own transaction gives. An outage (`store.outage.is_database_outage`) is raised, with
    nothing stored: writing each part alone would only wait for the same outage in turn.
    Each transaction runs the recipe, which takes its locks in the order its docstring
    lists (`ingest.recipe.apply_recipe`)."""
    try:
        shared = store_facts(store, [f for part in parts for f in part], also=also)
    except Exception as exc:
        if is_database_outage(exc):
            raise
        results: list[WriteResult | Exception] = (
            [exc] if len(parts) == 1 else [_alone(store, part) for part in parts]
        )
        if also is not None:
            store.write(also)
        return results
    return list(split_result(shared, parts))


def _alone(store: Store, part: Sequence[EventFacts]) -> WriteResult | Exception:
    try:
        return store_facts(store, part)
    except Exception as exc:
        if is_database_outage(exc):
            raise
        return exc


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
    each = prepare_each(documents, batch=batch, sql_lineage=sql_lineage, texts=texts)
    problems = [p for item in each if isinstance(item, InvalidInput) for p in item.problems]
    if problems:
        raise InvalidInput(problems[:50])
    return [item for item in each if isinstance(item, EventFacts)]


def prepare_each(
    documents: Sequence[Any],
    *,
    batch: bool,
    sql_lineage: bool = True,
    texts: Sequence[str] | None = None,
) -> list[EventFacts | InvalidInput]:
    """Each document's facts, or why it is refused (located as `[i].path` in a batch)."""
    prepared: list[EventFacts | InvalidInput] = []
    for index, document in enumerate(documents):
        text = None if texts is None else texts[index]
        try:
            prepared.append(translate_document(document, sql_lineage=sql_lineage, text=text))
        except InvalidInput as exc:
            prepared.append(exc.within(f"[{index}]") if batch else exc)
    return prepared
