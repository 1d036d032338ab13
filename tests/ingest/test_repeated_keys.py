"""A key written twice in one object is refused wherever a document comes in, naming its path,
and nothing is stored: parsers disagree on which value wins, so accepting it would record what
another consumer of the same event reads differently (issue 34). The detection counts keys on
the text and in the parsed objects; the texts here are chosen to mislead a count (escaped
spellings, whitespace before the colon, `\\":` inside strings)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from tests.readback import counts
from upstream.model.errors import MalformedDocument
from upstream.model.strict_json import parse_batch, parse_json
from upstream.store.engine import Store

JSON = {"content-type": "application/json"}
#: Both ways a document is parsed: alone, and as a batch whose items' texts are kept.
PARSERS = [parse_json, lambda raw: parse_batch(raw)[0]]
GOOD = json.dumps(
    run_event(("keys", "job"), inputs=[ds("keys", "in")], outputs=[ds("keys", "out")])
)


def twice(text: str, key: str, first: str) -> str:
    """`text` whose `key` is written first with the value `first`, then as it was."""
    assert f'"{key}": ' in text
    return text.replace(f'"{key}": ', f'"{key}": {first}, "{key}": ', 1)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": 1, "a": 2}', "a"),
        ('{"a": 1, "a": 1}', "a"),  # the same value twice is still two answers to one name
        ('{"x": {"b": [1, {"c": 0, "c": 0}]}}', "x.b[1].c"),
        ('[{"a": 1}, {"k": 1, "k": 2}]', "[1].k"),
        ('{"\\u0061": 1, "a": 2}', "a"),  # one name, two spellings
        ('{"a" : 1, "a"\n:\t2}', "a"),  # whitespace before the colons
        ('{"s": "\\":", "a": 1, "a": 2}', "a"),  # a `":` inside a string, and a repeat
        ('{"a": {"a": 1}, "b": {"a": 1}, "b": 2}', "b"),  # the same key in other objects is fine
        ('{"o": {"p": 1, "p": 2}, "o": 3}', "o"),  # the outer repeat is found first
    ],
)
@pytest.mark.parametrize("parse", PARSERS, ids=["document", "batch"])
def test_a_repeated_key_is_refused_with_its_path(
    text: str, path: str, parse: Callable[[bytes], Any]
) -> None:
    with pytest.raises(MalformedDocument) as refused:
        parse(text.encode())
    assert str(refused.value) == f"{path}: repeated key"
    assert [p.path for p in refused.value.problems] == [path]


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": {"a": 1}, "c": [{"a": 1}, {"a": 2}]}',
        '{"sql": "SELECT \\"id\\"::int, \\"x\\":1", "a": 1}',  # `\\":` counted, no repeat
        '{"nested": "{\\"a\\": 1, \\"a\\": 2}"}',  # JSON inside a string is a string
        '{"a" :1, "b"\r\n: 2}',
        '[{}, [], "\\":"]',
        '"just a string"',
    ],
)
@pytest.mark.parametrize("parse", PARSERS, ids=["document", "batch"])
def test_documents_without_a_repeated_key_are_accepted(
    text: str, parse: Callable[[bytes], Any]
) -> None:
    assert parse(text.encode()) == json.loads(text)


def test_a_repeated_key_found_by_the_slow_parser_is_refused_too() -> None:
    """A body orjson does not parse exactly (a 20-digit integer) goes to `json`: same rule."""
    with pytest.raises(MalformedDocument, match=r"^n: repeated key$"):
        parse_json(b'{"big": 123456789012345678901, "n": 1, "n": 2}')


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (twice(GOOD, "name", '"other"'), "job.name"),  # the job's name: the first `name`
        (twice(GOOD, "eventTime", '"nope"'), "eventTime"),  # invalid, then valid
        (twice(GOOD, "run", '{"runId": "00000000-0000-4000-8000-000000000001"}'), "run"),
        ("[" + GOOD + ", " + twice(GOOD, "producer", '"x"') + "]", "[1].producer"),
    ],
    ids=["job.name", "eventTime", "run", "in-a-batch"],
)
def test_a_posted_event_with_a_repeated_key_is_refused_and_nothing_stored(
    client: TestClient, store: Store, body: str, path: str
) -> None:
    before = counts(store)
    for content, headers in (
        (body.encode(), JSON),
        (gzip.compress(body.encode()), {**JSON, "content-encoding": "gzip"}),
    ):
        response = client.post("/api/v1/lineage", content=content, headers=headers)
        assert response.status_code == 400, response.text
        assert response.json() == {
            "code": 400,
            "message": f"{path}: repeated key",
            "errors": [{"path": path, "message": "repeated key"}],
        }
    assert counts(store) == before


def test_a_field_operations_document_with_a_repeated_key_is_refused(
    client: TestClient, store: Store
) -> None:
    document = '{"operations": [{"name": "read", "name": "write", "inputs": [], "outputs": []}]}'
    before = counts(store)
    response = client.post(
        "/v3/namespaces/keys/lineage/field-operations", content=document, headers=JSON
    )
    assert response.status_code == 400
    assert response.json()["message"] == "operations[0].name: repeated key"
    assert counts(store) == before
