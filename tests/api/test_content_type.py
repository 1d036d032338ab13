"""A posted body is read as JSON only when it says it is JSON: `Content-Type: application/json`
or an `application/*+json` type, any parameters, any case (issue 34). Anything else, and no
Content-Type at all, is 415 saying what to send, and nothing is stored, on every route that
takes a JSON body; the `any_content_type` setting relaxes it for old senders of lineage."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.ingest.test_field_operations_document import seed_document
from tests.readback import counts
from upstream.api.app import create_app
from upstream.api.body import is_json_type
from upstream.settings import Settings
from upstream.store.engine import Store

EVENT = json.dumps(run_event(("types", "job"), outputs=[ds("types", "out")])).encode()
OPERATIONS = json.dumps(seed_document()).encode()
#: Every route that reads a JSON body, with a body it accepts.
JSON_BODY_ROUTES = [
    ("POST", "/api/v1/lineage", EVENT),
    ("POST", "/v3/namespaces/types/lineage/field-operations", OPERATIONS),
    ("PUT", "/api/v1/tags/pii", b'{"description": "personal data"}'),
]
ROUTE_IDS = [f"{method} {path}" for method, path, _ in JSON_BODY_ROUTES]


@pytest.mark.parametrize(
    "header",
    [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",  # what the OpenLineage Java client sends
        "application/vnd.openlineage+json",
        "APPLICATION/LD+JSON; profile=x",
    ],
)
def test_json_types_are_accepted(header: str) -> None:
    assert is_json_type(header)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "text/plain",
        "application/notjson",
        "image/x-json",
        "text/json",
        "application/x-ndjson",
        "application/+json",
        "application/json-seq",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "json",
    ],
)
def test_other_types_are_not_json(header: str | None) -> None:
    assert not is_json_type(header)


@pytest.mark.parametrize(("method", "path", "body"), JSON_BODY_ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize(
    ("header", "said"),
    [
        (None, "and none was sent"),
        ("text/plain", "not text/plain"),
        ("application/notjson", "not application/notjson"),
        ("image/x-json", "not image/x-json"),
        ("application/x-www-form-urlencoded", "not application/x-www-form-urlencoded"),
    ],
)
def test_a_body_not_declared_json_is_415_and_changes_nothing(
    client: TestClient,
    store: Store,
    method: str,
    path: str,
    body: bytes,
    header: str | None,
    said: str,
) -> None:
    before = counts(store)
    headers = {} if header is None else {"content-type": header}
    response = client.request(method, path, content=body, headers=headers)
    assert response.status_code == 415, response.text
    assert response.json() == {
        "code": 415,
        "message": f"content-type must be application/json, {said}: send the body with the "
        "header Content-Type: application/json (or an application/*+json type)",
    }
    assert counts(store) == before


@pytest.mark.parametrize(("method", "path", "body"), JSON_BODY_ROUTES, ids=ROUTE_IDS)
@pytest.mark.parametrize("header", ["application/json; charset=utf-8", "application/x+json"])
def test_a_body_declared_json_is_read(
    client: TestClient, method: str, path: str, body: bytes, header: str
) -> None:
    response = client.request(method, path, content=body, headers={"content-type": header})
    assert response.status_code in (200, 201), response.text


def test_a_request_without_a_body_need_not_say_its_type(client: TestClient) -> None:
    """`PUT /tags/{tag}` takes an optional body: sent without one, it has no type to state."""
    assert client.put("/api/v1/tags/pii").status_code == 200


@pytest.fixture
def lenient(db_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(Settings(db_url=db_url, any_content_type=True))) as client:
        yield client


@pytest.mark.parametrize("header", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_the_setting_reads_any_body_as_json(
    lenient: TestClient, store: Store, header: str | None
) -> None:
    headers = {} if header is None else {"content-type": header}
    for method, path, body in JSON_BODY_ROUTES[:2]:  # the routes that take lineage
        response = lenient.request(method, path, content=body, headers=headers)
        assert response.status_code in (200, 201), response.text
    assert counts(store)["events"] == 2  # the event and the field operations' run
