"""Every error a route answers is in its OpenAPI `responses` (and so in docs/api.md), with the
status `api.errors.STATUS` gives the error (issue 33). Each route is asked what makes its
service fail: names that are not stored (404), a database that cannot serve (503), a bad
parameter (400), and for a route that takes a JSON body, a body that is malformed (400), invalid
(422) or not declared JSON (415). Whatever status it answers must be documented."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from upstream.api.app import create_app
from upstream.api.errors import STATUS
from upstream.model.errors import (
    DocumentTooLarge,
    InvalidInput,
    InvalidParameter,
    MalformedDocument,
    NotFound,
    StoreUnavailable,
)
from upstream.settings import Settings
from upstream.store.engine import Store

#: A value for each required query parameter that the route reads without complaint.
REQUIRED = {"nodeId": "dataset:nowhere:nothing", "q": "nothing"}
#: Statuses the probes provoke, and the error class each stands for.
PROBED = {
    STATUS[NotFound],
    STATUS[StoreUnavailable],
    STATUS[InvalidParameter],
    STATUS[InvalidInput],
    STATUS[MalformedDocument],
    STATUS[DocumentTooLarge],
    415,
}


@pytest.fixture
def app_client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings, migrate=False)) as test_client:
        yield test_client


def _operations(client: TestClient) -> list[tuple[str, str, dict[str, Any]]]:
    document = client.get("/openapi.json").json()
    return [
        (method.upper(), path, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    ]


#: What a path parameter that is not stored is called: a well-formed id where one is asked.
MISSING_ID = "00000000-0000-4000-8000-000000000000"


def _missing(parameter: re.Match[str]) -> str:
    name = parameter.group(1).lower()
    return MISSING_ID if "run" in name or "version" in name else "missing"


def _accepted(parameter: dict[str, Any]) -> str:
    """A value the route accepts for a required query parameter: a known one, the first of
    fixed values, else a number."""
    if parameter["name"] in REQUIRED:
        return REQUIRED[parameter["name"]]
    schema = parameter.get("schema", {})
    fixed = [v for s in [schema, *schema.get("anyOf", [])] for v in s.get("enum", [])]
    return str(fixed[0]) if fixed else "1"


def _url(path: str, operation: dict[str, Any], extra: str = "") -> str:
    """`path` naming nothing stored, with the required query parameters."""
    url = re.sub(r"\{([^}]+)\}", _missing, path)
    query = [
        f"{p['name']}={_accepted(p)}"
        for p in operation.get("parameters", [])
        if p["in"] == "query" and p.get("required")
    ]
    if extra:
        query.append(extra)
    return url + ("?" + "&".join(query) if query else "")


def _bad_parameter(operation: dict[str, Any]) -> str | None:
    """A query parameter with a value no route accepts for it (an integer, a boolean, one of
    fixed values), or None when the route has none of them."""
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        kinds = {schema.get("type")} | {s.get("type") for s in schema.get("anyOf", [])}
        if parameter["in"] == "query" and (kinds & {"integer", "boolean"} or "enum" in schema):
            return f"{parameter['name']}=not-a-value"
    return None


def _answers(client: TestClient, method: str, path: str, operation: dict[str, Any]) -> set[int]:
    statuses = {client.request(method, _url(path, operation)).status_code}
    bad = _bad_parameter(operation)
    if bad:
        statuses.add(client.request(method, _url(path, operation, bad)).status_code)
    if "requestBody" in operation:
        url = _url(path, operation)
        json = {"content-type": "application/json"}
        for body, headers in (
            (b"[1, 2", json),  # malformed
            (b'{"unexpected": 1}', json),  # JSON that means nothing
            (b"{}", {"content-type": "text/plain"}),
        ):
            statuses.add(client.request(method, url, content=body, headers=headers).status_code)
    return statuses & PROBED


def _undocumented(client: TestClient) -> list[str]:
    found = []
    for method, path, operation in _operations(client):
        documented = {int(status) for status in operation["responses"]}
        for status in sorted(_answers(client, method, path, operation) - documented):
            found.append(f"{method} {path} answers {status}")
    return found


def test_every_error_a_route_answers_is_documented(app_client: TestClient) -> None:
    assert _undocumented(app_client) == []


def test_every_route_that_reads_the_store_documents_an_outage(
    app_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unavailable(*_: object, **__: object) -> Any:
        raise StoreUnavailable("connection refused")

    for name in ("read", "write"):
        monkeypatch.setattr(Store, name, unavailable)
    answered = _undocumented(app_client)
    assert answered == []


def test_the_probe_sees_what_it_should(app_client: TestClient) -> None:
    """Guard: the probes do reach the errors (a 404, a 400 and a 415 at least)."""
    operations = {(m, p): o for m, p, o in _operations(app_client)}
    dataset = ("GET", "/api/v1/namespaces/{namespace}/datasets/{dataset}")
    assert 404 in _answers(app_client, *dataset, operations[dataset])
    lineage = ("POST", "/api/v1/lineage")
    assert {400, 415, 422} <= _answers(app_client, *lineage, operations[lineage])
