"""A batch of events is stored with its objects scanned by the collector at most once, as a
server's collector is set (`upstream.collector`)."""

from __future__ import annotations

import uuid
from typing import Any

from tests.builders import ds, run_event, schema_facet
from upstream.ingest.body import REQUEST_BODY, Limits, decode
from upstream.ingest.service import prepare, store_facts
from upstream.model.json_text import dumps
from upstream.store.engine import Store

NS = "collections"


def _event(job: int) -> dict[str, Any]:
    schema = schema_facet(*((f"column_{i}_of_{job}", "INT") for i in range(40)))
    return run_event(
        (NS, f"job_{job}"),
        run_id=str(uuid.uuid4()),
        inputs=[ds(NS, f"raw_{job}", schema=schema)],
        outputs=[ds(NS, f"table_{job}", schema=schema)],
    )


def test_a_batch_is_stored_without_collecting_the_middle_generation(
    store: Store, collections: list[int]
) -> None:
    raw = dumps([_event(job) for job in range(800)]).encode()
    limits = Limits(max_bytes=len(raw), max_events=800, max_values=10**6)
    body = decode(raw, gzipped=False, limits=limits, source=REQUEST_BODY)
    result = store_facts(store, prepare(body.document, batch=True, texts=body.texts))
    assert result.stored == 800
    # More than ten collections of the young generation (Python's default between two of the
    # middle one), none of the middle one.
    assert collections.count(0) > 10
    assert set(collections) == {0}
