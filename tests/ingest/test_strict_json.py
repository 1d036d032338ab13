"""Keys and depth of a parsed document are counted by orjson, not walked in Python; the
limits stay where they were (`upstream.model.strict_json`)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from tests.builders import ds, run_event, schema_facet
from upstream.model import strict_json
from upstream.model.errors import MalformedDocument
from upstream.model.strict_json import MAX_JSON_DEPTH, ORJSON_DEPTH, parse_json


def nested(levels: int, inner: str = "1") -> bytes:
    """`levels` arrays, the innermost holding `inner`."""
    return ("[" * levels + inner + "]" * levels).encode()


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every document whose keys are counted by walking it in Python."""
    walked: list[Any] = []
    walk = strict_json._keys_within

    def counted(document: Any, limit: int) -> int | None:
        walked.append(document)
        return walk(document, limit)

    monkeypatch.setattr(strict_json, "_keys_within", counted)
    return walked


def test_orjson_writes_as_many_levels_as_the_count_assumes() -> None:
    assert orjson.dumps(json.loads(nested(ORJSON_DEPTH)))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(json.loads(nested(ORJSON_DEPTH + 1)))


def test_a_batch_of_events_is_counted_without_a_walk(walks: list[Any]) -> None:
    event = run_event(
        ("strict", "job"),
        inputs=[ds("strict", "in", schema=schema_facet(("id", "INT")))],
        outputs=[ds("strict", "out")],
    )
    text = json.dumps([event, event])
    assert parse_json(text.encode()) == [event, event]
    assert walks == []
    repeated = text.replace('"eventTime": ', '"eventTime": "x", "eventTime": ', 1)
    with pytest.raises(MalformedDocument, match=r"^\[0\]\.eventTime: repeated key$"):
        parse_json(repeated.encode())
    assert walks == []


def test_a_string_holding_an_escaped_key_end_is_walked(walks: list[Any]) -> None:
    assert parse_json(b'{"s": "\\":", "a": 1}') == {"s": '":', "a": 1}
    assert walks == [{"s": '":', "a": 1}]


@pytest.mark.parametrize("inner", ["1", "[]", "{}", '{"a": {}}'])
def test_the_deepest_nesting_accepted_is_unchanged(inner: str) -> None:
    arrays = MAX_JSON_DEPTH - inner.count("{") - inner.count("[")
    accepted = nested(arrays, inner)
    assert parse_json(accepted) == json.loads(accepted)
    with pytest.raises(MalformedDocument, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
        parse_json(nested(arrays + 1, inner))
