"""`upstream ingest --db`: batches stored straight into a database by the ingestion service the
server calls, refused whole and located as a server refuses them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upstream.commands.sinks import BatchRejected, problems_from
from upstream.ingest.service import ingest_documents
from upstream.model.errors import InvalidInput
from upstream.store.engine import Store


class DatabaseSink:
    """Stores each batch straight into a database, through `ingest_documents`."""

    def __init__(self, store: Store, *, sql_lineage: bool = True) -> None:
        self.store = store
        self.sql_lineage = sql_lineage

    def send(self, documents: Sequence[dict[str, Any]]) -> int | None:
        try:
            result = ingest_documents(
                self.store, documents, batch=True, sql_lineage=self.sql_lineage
            )
        except InvalidInput as exc:
            entries = [(p.path, p.message) for p in exc.problems]
            raise BatchRejected(str(exc), problems_from(entries)) from exc
        return result.duplicates
