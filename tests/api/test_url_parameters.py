"""Every parameter of every route refuses what it does not accept with 400 naming it: the test
walks the app's own OpenAPI document and derives the bad values from each parameter's schema
(below the minimum, above the maximum, not a number, 10,000 digits, empty, an unknown enum
value, a malformed time), and sends every path segment and query parameter NUL, bytes that are
not UTF-8 and an encoded lone surrogate (design §5: bad input is a clear 4xx, never a crash).

Each route is first asked with good values only, which must not be refused, so every 400 seen
is the bad parameter's doing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.builders import column_lineage, ds, run_event, schema_facet
from tests.conftest import LiveServer
from tests.field_scenarios import USERS, as_document, seed_operations
from upstream.api.app import create_app
from upstream.api.params import TIME_FORMAT
from upstream.settings import Settings
from upstream.store import schema as t
from upstream.store.engine import Store

MAX_LEVELS = 25  # above depth's default of 20
#: The names that exist in the test store, used as good path values.
GOOD_UUID = "00000000-0000-4000-8000-000000000001"
GOOD_PATH = {
    "namespace": "walk",
    "dataset": "clean",
    "field": "id",
    "job": "job",
    "source": "walk",
    "tag": "PII",
    "asset": "jobs",
    "token_id": GOOD_UUID,
    "subscription": GOOD_UUID,
    "delivery": GOOD_UUID,
}
#: Text no store can keep, as a client sends it: percent-encoded.
NOT_TEXT = {
    "NUL": "a%00b",
    "invalid UTF-8": "a%FFb",
    "a lone surrogate": "a%ED%A0%80b",
}


def _typed(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional parameter's schema."""
    options = [s for s in schema.get("anyOf", []) if s.get("type") != "null"]
    return options[0] if options else schema


def invalid_values(schema: dict[str, Any]) -> dict[str, str]:
    """What the parameter's schema does not allow, each as the raw query value to send."""
    typed = _typed(schema)
    if typed.get("type") == "array":
        typed = typed["items"]
    kind, bad = typed.get("type"), {}
    if kind == "integer":
        bad = {"not a number": "abc", "a fraction": "2.5", "10,000 digits": "9" * 10_000}
        if "minimum" in typed:
            bad["below the minimum"] = str(typed["minimum"] - 1)
            bad["10,000 negative digits"] = "-" + "9" * 10_000
        if "maximum" in typed:
            bad["above the maximum"] = str(typed["maximum"] + 1)
    elif kind == "boolean":
        bad = {"not a boolean": "perhaps"}
    elif {"enum", "const", "pattern"} & set(typed):
        bad = {"an unknown value": "nonsense"}
    elif typed.get("format") == TIME_FORMAT:
        bad = {
            "not a time": "yesterday",
            "negative": "-1476321533",
            "10,000 digits": "9" * 10_000,
            "a term of 10,000 digits": "now-" + "9" * 10_000 + "d",
            "an unknown unit": "now-7x",
        }
    elif typed.get("format") == "date-time":
        bad = {"not a time": "yesterday"}
    elif typed.get("format") == "uuid":
        bad = {"not a UUID": "not-a-uuid"}
    constrained = {"minLength", "format", "enum", "const", "pattern"} & set(typed)
    if kind != "string" or constrained:
        bad["empty"] = ""
    return bad


def good_value(parameter: dict[str, Any]) -> str:
    schema = _typed(parameter["schema"])
    if parameter["in"] == "path":
        return GOOD_UUID if schema.get("format") == "uuid" else GOOD_PATH[parameter["name"]]
    if parameter["name"] == "nodeId":
        return "dataset:walk:clean"
    if "enum" in schema:
        return str(schema["enum"][0])
    return "raw"


Operation = tuple[str, str, list[dict[str, Any]]]


def operations(document: dict[str, Any]) -> Iterator[Operation]:
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield method.upper(), path, operation.get("parameters", [])


def request_url(path: str, parameters: list[dict[str, Any]], changed: dict[str, str]) -> str:
    """The URL with good values for the required parameters and `changed` values (raw,
    already percent-encoded) for the others named."""
    url = path
    query = []
    for parameter in parameters:
        name = parameter["name"]
        value = changed.get(name)
        if parameter["in"] == "path":
            url = url.replace(f"{{{name}}}", value or quote(good_value(parameter), safe=""))
        elif value is not None:
            query.append(f"{name}={value}")
        elif parameter.get("required"):
            query.append(f"{name}={quote(good_value(parameter), safe='')}")
    query.extend(f"{k}={v}" for k, v in changed.items() if k not in {p["name"] for p in parameters})
    return url + ("?" + "&".join(query) if query else "")


def send(client: TestClient, method: str, url: str) -> httpx.Response:
    if method in ("POST", "PUT"):
        headers = {"content-type": "application/json"}
        return client.request(method, url, content=b"{}", headers=headers)
    return client.request(method, url)


@pytest.fixture
def walk_client(db_url: str) -> Iterator[TestClient]:
    """The API with max_levels 7, holding walk/raw -> job -> walk/clean (field id)."""
    settings = Settings(db_url=db_url, max_levels=MAX_LEVELS)
    with TestClient(create_app(settings, migrate=False), raise_server_exceptions=False) as client:
        event = run_event(
            ("walk", "job"),
            inputs=[ds("walk", "raw", schema=schema_facet(("id", "int")))],
            outputs=[
                ds(
                    "walk",
                    "clean",
                    schema=schema_facet(("id", "int")),
                    columnLineage=column_lineage({"id": [("walk", "raw", "id")]}),
                )
            ],
        )
        assert client.post("/api/v1/lineage", json=event).status_code == 201
        yield client


def refusal_problem(response: httpx.Response, name: str) -> str | None:
    """Why `response` is not a 400 naming the parameter `name`, or None when it is."""
    if response.status_code != 400:
        return f"{response.status_code} {response.text[:200]}"
    body = response.json()
    if body.get("code") != 400 or name not in [e.get("path") for e in body.get("errors", [])]:
        return f"does not name {name}: {response.text[:200]}"
    if not body["message"].startswith(f"{name}: ") or len(body["message"]) > 600:
        return f"message does not start with {name}, or is long: {body['message'][:200]}"
    return None


def test_every_parameter_of_every_route_refuses_bad_values_with_400_naming_it(
    walk_client: TestClient,
) -> None:
    document = walk_client.get("/openapi.json").json()
    failures: list[str] = []
    tried = 0
    for method, path, parameters in operations(document):
        base = send(walk_client, method, request_url(path, parameters, {}))
        if base.status_code == 400 or base.status_code >= 500:
            failures.append(f"{method} {path} with good values: {base.status_code} {base.text}")
            continue
        probes = [(p, p["name"], invalid_values(p["schema"]) | NOT_TEXT) for p in parameters]
        probes.append(({"in": "query"}, "undeclared", NOT_TEXT))  # every route checks them all
        for parameter, name, values in probes:
            for label, value in values.items():
                if parameter["in"] == "path" and value == "":
                    continue  # an empty segment is another route (404), not a value
                tried += 1
                response = send(walk_client, method, request_url(path, parameters, {name: value}))
                problem = refusal_problem(response, name)
                if problem:
                    failures.append(f"{method} {path} {name} {label}: {problem}")
    assert not failures, "\n".join(failures)
    assert tried > 300, tried  # the document was walked, not skipped


def test_the_document_states_each_parameter_type() -> None:
    """The walk derives bad values from the schemas, so they must say what is accepted."""
    document = create_app(Settings.model_construct(), migrate=False).openapi()
    by_name = {
        (path, p["name"]): _typed(p["schema"])
        for path, methods in document["paths"].items()
        for operation in methods.values()
        for p in operation.get("parameters", [])
    }
    lineage = "/v3/namespaces/{namespace}/datasets/{dataset}/lineage"
    levels = by_name[lineage, "levels"]
    assert (levels["type"], levels["minimum"], levels["maximum"]) == ("integer", 1, 100)
    assert by_name[lineage, "start"]["format"] == TIME_FORMAT
    assert by_name[lineage, "direction"]["enum"] == ["both", "upstream", "downstream"]
    assert by_name[lineage, "rollup"]["enum"] == ["workflow", "jobs"]
    assert by_name["/api/v1/lineage", "depth"]["maximum"] == 100
    assert by_name["/api/v1/events/lineage", "after"]["format"] == TIME_FORMAT
    assert by_name["/api/v1/search", "namespace"]["minLength"] == 1


@pytest.mark.parametrize(
    ("url", "parameter", "reason"),
    [
        ("/v3/namespaces/fo%00ns/lineage/field-operations", "namespace", "NUL"),
        ("/v3/namespaces/fo%ED%A0%80ns/lineage/field-operations", "namespace", "surrogate"),
        ("/v3/namespaces/fo%FFns/lineage/field-operations", "namespace", "UTF-8"),
        ("/v3/namespaces/walk/lineage/field-operations?x=%00", "x", "NUL"),
    ],
)
def test_a_write_with_a_bad_name_in_the_url_stores_nothing(
    walk_client: TestClient, store: Store, url: str, parameter: str, reason: str
) -> None:
    document = as_document(seed_operations(), {"name": "made"}, USERS, job="maker")
    with store.read() as conn:
        before = conn.execute(t.events.select()).all()
    response = walk_client.post(url, json=document)
    assert refusal_problem(response, parameter) is None, response.text
    assert reason in response.json()["message"]
    with store.read() as conn:
        assert conn.execute(t.events.select()).all() == before
    good = walk_client.post("/v3/namespaces/walk/lineage/field-operations", json=document)
    assert good.status_code == 201, good.text  # the document itself is good


def test_the_reasons_say_what_is_wrong(walk_client: TestClient) -> None:
    cases = {
        "/api/v1/search?q=%00": "q: contains the NUL character (%00)",
        "/api/v1/search?q=a%ED%A0%80": "q: contains a lone UTF-16 surrogate, which is no character",
        "/api/v1/search?q=a%C3": "q: is not valid UTF-8 (byte 2 of the decoded text)",
        "/api/v1/namespaces/a%00b/jobs": "namespace: contains the NUL character (%00)",
        "/nowhere/a%00": "path: contains the NUL character (%00)",
        "/v3/namespaces/walk/datasets/clean/lineage?levels=" + "9" * 10_000: (
            f"levels: must be at most {MAX_LEVELS} (the server's max_levels), not '{'9' * 40}…'"
        ),
        "/api/v1/events/lineage?after=now&before=now-1d": "after: after (",
    }
    for url, message in cases.items():
        response = walk_client.get(url)
        assert response.status_code == 400, (url, response.text)
        assert response.json()["message"].startswith(message), (url, response.json())


def test_a_refused_request_leaves_the_connection_usable(live_server: LiveServer) -> None:
    """A 10,000-digit parameter once crashed the handler and the server dropped the next
    request on the same keep-alive connection."""
    with httpx.Client(base_url=live_server.url, timeout=10) as client:
        for _ in range(2):
            bad = client.get("/v3/namespaces/a/datasets/b/lineage", params={"levels": "9" * 10_000})
            assert bad.status_code == 400
            assert client.get("/health").status_code == 200
        assert client.get("/api/v1/search", params={"q": "\0"}).status_code == 400
        assert client.get("/health").status_code == 200


def test_the_web_ui_checks_its_urls_too(walk_client: TestClient) -> None:
    assert refusal_problem(walk_client.get("/?x=%00"), "x") is None
    assert walk_client.get("/").status_code == 200
