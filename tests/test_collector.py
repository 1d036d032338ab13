"""The collector setting of long-running processes (`upstream.collector`)."""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient

from tests.builders import PRODUCER, ds, run_event
from upstream import collector
from upstream.api.app import create_app
from upstream.collector import (
    BATCH_YOUNG_THRESHOLD,
    MIDDLE_THRESHOLD,
    YOUNG_THRESHOLD,
    tune_collector,
)
from upstream.ingest.service import ingest_documents
from upstream.settings import Settings
from upstream.store.engine import Store

SCHEMA_SCHEMA = "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json"
COLUMN_LINEAGE_SCHEMA = "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json"


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_the_young_and_middle_generations_are_collected_less_often_and_start_up_is_frozen() -> None:
    old = gc.get_threshold()[2]
    tune_collector()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, MIDDLE_THRESHOLD, old)
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


@pytest.mark.usefixtures("restored_collector")
def test_only_the_first_app_of_a_process_collects_and_freezes(
    tmp_path: Path, sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector, "_app_started", threading.Event())  # a new process
    collections: list[int] = []
    collect = gc.collect

    def counted(generation: int = 2) -> int:
        collections.append(generation)
        return collect(generation)

    monkeypatch.setattr(gc, "collect", counted)
    path = tmp_path / "upstream.db"
    shutil.copy(sqlite_template, path)
    settings = Settings(db_url=f"sqlite:///{path}")
    with TestClient(create_app(settings, migrate=False)):
        assert collections == [2]
    with TestClient(create_app(settings, migrate=False)):
        assert collections == [2]


def _batch(events: int) -> list[dict[str, Any]]:
    """Runs that each write a table of 30 columns, read column by column from another."""
    fields = [{"name": f"c{i}", "type": "int"} for i in range(30)]
    batch = []
    for n in range(events):
        lineage = {
            "_producer": PRODUCER,
            "_schemaURL": COLUMN_LINEAGE_SCHEMA,
            "fields": {
                f["name"]: {
                    "inputFields": [{"namespace": "pg", "name": f"in{n}", "field": f["name"]}]
                }
                for f in fields
            },
        }
        schema = {"_producer": PRODUCER, "_schemaURL": SCHEMA_SCHEMA, "fields": fields}
        output = ds("pg", f"out{n}", schema=schema, columnLineage=lineage)
        batch.append(run_event(("etl", f"job{n}"), inputs=[ds("pg", f"in{n}")], outputs=[output]))
    return batch


def test_a_batch_is_read_and_stored_with_no_collection(
    store: Store, collections: list[int]
) -> None:
    """Hundreds of events make far more than 10,000 objects the collector tracks; while
    they are translated and stored none is collected, and once they are, the young
    generation at most (`collector.batch_in_flight`)."""
    batch = _batch(300)
    gc.collect()  # from an empty young generation
    collections.clear()
    ingest_documents(store, batch, batch=True)
    assert collections in ([], [0])
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD


def test_a_posted_batch_is_decoded_translated_and_stored_with_no_collection(
    client: TestClient, collections: list[int]
) -> None:
    body = orjson.dumps(_batch(300))
    gc.collect()  # from an empty young generation: the request's first steps add little
    collections.clear()
    answer = client.post(
        "/api/v1/lineage", content=body, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 201
    assert collections in ([], [0])
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD


@pytest.mark.usefixtures("restored_collector")
def test_the_threshold_comes_back_when_the_last_of_overlapping_batches_is_done() -> None:
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, 10)
    first, second = collector.batch_in_flight(), collector.batch_in_flight()
    first.__enter__()
    assert gc.get_threshold() == (BATCH_YOUNG_THRESHOLD, MIDDLE_THRESHOLD, 10)
    second.__enter__()
    first.__exit__(None, None, None)
    assert gc.get_threshold() == (BATCH_YOUNG_THRESHOLD, MIDDLE_THRESHOLD, 10)
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (YOUNG_THRESHOLD, MIDDLE_THRESHOLD, 10)
