"""Keys and depth of a parsed document are counted by orjson, not walked in Python; the
limits stay where they were (`upstream.model.strict_json`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from tests.builders import ds, run_event, schema_facet
from upstream.ingest.body import REQUEST_BODY, Limits, decode_events
from upstream.model import json_text, strict_json
from upstream.model.errors import MalformedDocument
from upstream.model.strict_json import MAX_JSON_DEPTH, ORJSON_DEPTH, parse_batch, parse_json


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


@pytest.mark.parametrize("parse", [parse_json, lambda raw: parse_batch(raw)[0]])
@pytest.mark.parametrize("inner", ["1", "[]", "{}", '{"a": {}}'])
def test_the_deepest_nesting_accepted_is_unchanged(
    inner: str, parse: Callable[[bytes], Any]
) -> None:
    arrays = MAX_JSON_DEPTH - inner.count("{") - inner.count("[")
    accepted = nested(arrays, inner)
    assert parse(accepted) == json.loads(accepted)
    with pytest.raises(MalformedDocument, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
        parse(nested(arrays + 1, inner))


@pytest.mark.parametrize(
    "text",
    [
        '[{"a": 1, "b": [1.5, "é"]}, 2, "x", null]',
        '[{"s": "\\":"}, {"a": 1}]',  # a `\\":` in an item's text: its keys are walked
        '[{"big": 123456789012345678901}, {"a": 1}]',  # beyond orjson: `json` writes it
        "[]",
    ],
)
def test_a_batch_keeps_each_item_as_dumps_writes_it(text: str) -> None:
    document, texts = parse_batch(text.encode())
    assert document == json.loads(text)
    assert texts == [json_text.dumps(item) for item in document]


def _counting_writes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What orjson is asked to write from now on."""
    written: list[Any] = []
    dumps = orjson.dumps

    def counted(value: Any, *args: Any, **kwargs: Any) -> bytes:
        written.append(value)
        return dumps(value, *args, **kwargs)

    monkeypatch.setattr(orjson, "dumps", counted)
    return written


def test_a_batch_s_events_are_written_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """The strict checks count keys on the texts kept as the events' payloads: no write of
    the whole batch besides."""
    event = run_event(("once", "job"), inputs=[ds("once", "in")], outputs=[ds("once", "out")])
    kept = json_text.dumps(event)
    one = json.dumps(event)
    # Each event within the values allowed, the batch beyond them: measured after parsing.
    values = 1 + one.count(",") + one.count("{") + one.count("[")
    limits = Limits(max_bytes=100_000, max_events=10, max_values=values)
    body = f"[{one},{one},{one}]".encode()
    written = _counting_writes(monkeypatch)
    events = decode_events(body, gzipped=False, limits=limits, source=REQUEST_BODY)
    assert events.texts == [kept] * 3
    assert len(written) == 3


@pytest.mark.parametrize("size", [1, 3])
def test_every_event_is_written_once(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """A single event, and a batch small enough to be measured before it is parsed, keep
    their events' texts too: the text the strict checks count keys on is the payload, not
    written again."""
    event = run_event(("once", "job"), inputs=[ds("once", "in")], outputs=[ds("once", "out")])
    kept = json_text.dumps(event)
    one = json.dumps(event)
    body = (one if size == 1 else "[" + ",".join([one] * size) + "]").encode()
    limits = Limits(max_bytes=100_000, max_events=10, max_values=100_000)
    written = _counting_writes(monkeypatch)
    events = decode_events(body, gzipped=False, limits=limits, source=REQUEST_BODY)
    assert events.texts == [kept] * size
    assert events.batch is (size > 1)
    assert len(written) == size


@pytest.mark.parametrize(
    "text",
    ['{"a": 1, "b": [1.5, "é"]}', '{"s": "\\":", "a": 1}', '{"big": 123456789012345678901}', "7"],
)
def test_a_single_document_keeps_its_text_as_dumps_writes_it(text: str) -> None:
    document, texts = parse_batch(text.encode())
    assert document == json.loads(text)
    assert texts in ([json_text.dumps(document)], None)
    assert texts is not None or "big" in text  # beyond orjson: written later, by `json`


def _counting_key_checks(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """The key counts the strict checks compare from now on."""
    counted: list[int | None] = []
    check = strict_json._check

    def counting(document: Any, raw: bytes, keys: int | None) -> None:
        counted.append(keys)
        check(document, raw, keys)

    monkeypatch.setattr(strict_json, "_check", counting)
    return counted


@pytest.mark.parametrize(
    ("text", "counted"),
    [
        ('[{"a":1,"b":[1.5,"é"]},{"c":{"d":null}}]\n', 0),  # compact, as orjson writes it
        ('{"a":1,"b":"x"}', 0),  # one compact document
        ('[{"a": 1, "b": [1.5, "é"]}, {"c": {"d": null}}]', 1),  # spaces: keys counted
        ('[{"b":1,"a":1.50}]', 1),  # a number written otherwise than orjson writes it
    ],
)
def test_a_body_written_as_orjson_writes_it_is_taken_without_counting_its_keys(
    monkeypatch: pytest.MonkeyPatch, text: str, counted: int
) -> None:
    """A client's compact JSON, byte for byte the text orjson writes of what it parsed,
    holds no repeated key and no rounded number: its keys are not counted again."""
    checks = _counting_key_checks(monkeypatch)
    document, texts = parse_batch(text.encode())
    assert document == json.loads(text)
    items = document if isinstance(document, list) else [document]
    assert texts == [json_text.dumps(item) for item in items]
    assert len(checks) == counted


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('[{"a":1,"a":2}]', "[0].a"),  # orjson writes {"a":2}: not the body's text
        ('[{"s":"\\u0000"}]', "[0].s"),
    ],
)
def test_a_compact_body_is_still_refused_where_it_is_wrong(text: str, path: str) -> None:
    with pytest.raises(MalformedDocument) as refused:
        parse_batch(text.encode())
    assert refused.value.problems[0].path == path


def test_a_compact_body_s_integer_beyond_64_bits_is_read_exactly() -> None:
    """orjson reads it as a float, and writes that otherwise than the body: `json` reads it."""
    document, _ = parse_batch(b'[{"n":18446744073709551616}]')
    assert document == [{"n": 18446744073709551616}]
    assert isinstance(document[0]["n"], int)
