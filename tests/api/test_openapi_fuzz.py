"""Schemathesis over the app's own OpenAPI document (design §5): whatever it generates for
every operation — valid and invalid parameters, bodies, encodings — no answer is a 5xx.

In-process (ASGI) and bounded: a few examples per operation, so the whole run stays short;
the database holds a small lineage graph first, so the read routes walk real data."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from tests.builders import (
    column_lineage,
    dataset_entry,
    dataset_input,
    ds,
    lineage_facet,
    run_event,
)
from upstream.api.app import create_app
from upstream.settings import Settings

#: Few examples per operation; the coverage phase's boundary values (huge numbers, empty and
#: odd strings) are kept, the stateful phase (links between operations) is not run.
BOUNDED = SchemathesisConfig.from_dict(
    {"generation": {"max-examples": 6}, "phases": {"stateful": {"enabled": False}}}
)


@pytest.fixture
def api_schema(db_url: str) -> Iterator[schemathesis.BaseSchema]:
    app = create_app(Settings(db_url=db_url), migrate=False)
    with TestClient(app) as client:  # runs the lifespan: the store is open while we fuzz
        upstream = ds("fuzz", "raw")
        middle = ds("fuzz", "clean", columnLineage=column_lineage({"id": [("fuzz", "raw", "id")]}))
        for event in (
            run_event(("fuzz", "clean"), inputs=[upstream], outputs=[middle]),
            run_event(
                ("fuzz", "report"),
                inputs=[ds("fuzz", "clean")],
                outputs=[ds("fuzz", "report")],
                job_facets=lineage_facet(
                    dataset_entry("fuzz", "report", inputs=[dataset_input("fuzz", "clean")])
                ),
            ),
        ):
            assert client.post("/api/v1/lineage", json=event).status_code == 201
        yield schemathesis.openapi.from_asgi("/openapi.json", app, config=BOUNDED)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.slow
@schema.parametrize()
@settings(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx(case: schemathesis.Case) -> None:
    response = case.call()
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}"
    )
