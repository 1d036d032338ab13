"""The shape of a body, measured before parsing: values per event and events per batch, so a
small body that would parse into millions of objects is refused without building them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from upstream.ingest.body import REQUEST_BODY, Limits, decode
from upstream.ingest.json_shape import (
    PARSE_FIRST_VALUES,
    ShapeLimits,
    check_batch_size,
    check_events,
    check_shape,
    values_in,
)
from upstream.model.errors import DocumentTooLarge
from upstream.settings import Settings


def _values(document: Any) -> int:
    """Values counted by walking the parsed document: the reference for `values_in`."""
    if isinstance(document, dict):
        return 1 + sum(_values(v) for v in document.values())
    if isinstance(document, list):
        return 1 + sum(_values(v) for v in document)
    return 1


def _skeleton_values(text: str) -> int:
    from upstream.ingest.json_shape import _STRING, _WHITESPACE

    return values_in(_STRING.sub(b"0", text.encode()).translate(None, _WHITESPACE))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", 1),
        ('"a"', 1),
        ("[]", 1),
        ("{}", 1),
        ("[{},{}]", 3),
        ('{"a": 1, "b": []}', 3),  # the object, 1 and []: keys are no values
        ('{"a": {"b": {"c": [1, 2, 3]}}}', 7),  # three objects, the array, three numbers
        ('[ { } , [ ] , "x" ]', 4),  # whitespace inside empty containers
        ('{"k": "[{,,,}]"}', 2),  # brackets and commas inside a string do not count
        ('{"k\\"[": "a\\\\", "x": "\\"{,"}', 3),  # nor escaped quotes and backslashes
        ('[null, true, false, -1.5e3, "\\u0041"]', 6),
        ('["a", "b" , "c"]', 4),  # commas between strings are kept
        ('{"a": "x,]", "b" :\n "[{"}', 3),  # a key and its value are blanked together
    ],
)
def test_values_are_counted_without_parsing(text: str, expected: int) -> None:
    assert _values(json.loads(text)) == expected  # the hand count agrees with the parse
    assert _skeleton_values(text) == expected


def _check(document: Any, *, max_items: int | None = 10, max_values: int = 20) -> None:
    """The body's whole check: on its bytes, and for a batch parsed first, on its events."""
    limits = Limits(10**9, max_events=max_items, max_values=max_values)
    decode(json.dumps(document).encode(), gzipped=False, limits=limits, source=REQUEST_BODY)


def test_an_event_at_its_limit_passes_and_one_value_more_is_413() -> None:
    event = {"facets": {"x": [{}] * 18}}  # 1 + 1 + 1 + 18 values = 21
    assert _values(event) == 21
    _check(event, max_values=21)
    with pytest.raises(DocumentTooLarge) as refused:
        _check(event, max_values=20)
    assert refused.value.message == (
        "the event holds more than 20 JSON values (the server's max_event_values); "
        "split it into smaller events"
    )


def test_each_event_of_a_batch_is_measured_alone() -> None:
    small = {"a": [1, 2, 3]}  # 5 values
    big = {"a": list(range(25))}  # 27 values
    _check([small] * 10, max_values=20)  # 51 values in all, but 5 per event
    with pytest.raises(DocumentTooLarge) as refused:
        _check([small, small, big, small], max_values=20)
    assert refused.value.message.startswith("[2]: holds more than 20 JSON values")


def _shape_then_size(batch: list[Any], limits: ShapeLimits) -> None:
    check_shape(json.dumps(batch).encode(), limits)
    check_batch_size(batch, limits)


def test_a_batch_over_the_event_limit_is_413() -> None:
    """Measured on the bytes when the body could hold more than max_values values, else
    counted once parsed: the answer is the same."""
    for max_values in (5, 100):
        limits = ShapeLimits(max_items=10, max_values=max_values)
        check_shape(json.dumps([{}] * 10).encode(), limits)
        check_batch_size([{}] * 10, limits)
        for batch in ([{}] * 11, [{}] * 10 + [7], [1] * 11):
            with pytest.raises(DocumentTooLarge) as refused:
                _shape_then_size(batch, limits)
            assert refused.value.message == (
                "a batch may hold at most 10 events; this one holds more"
            )


def test_a_document_without_batches_counts_the_whole() -> None:
    with pytest.raises(DocumentTooLarge) as refused:
        _check([{}] * 25, max_items=None, max_values=20)
    assert refused.value.message.startswith("the document holds more than 20 JSON values")


def test_a_bomb_is_refused_after_its_first_items() -> None:
    bomb = b"[" + b"{}," * 3_300_000 + b"{}]"
    with pytest.raises(DocumentTooLarge) as refused:
        check_shape(bomb, ShapeLimits(max_items=5_000, max_values=200_000))
    assert refused.value.message == "a batch may hold at most 5000 events; this one holds more"
    one_event = b'{"run": {"facets": {"x": [' + b"{}," * 3_200_000 + b"{}]}}}"
    with pytest.raises(DocumentTooLarge) as refused:
        check_shape(one_event, ShapeLimits(max_items=5_000, max_values=200_000))
    assert refused.value.message.startswith("the event holds more than 200000 JSON values")
    wrapped = b"[" + one_event + b"]"
    with pytest.raises(DocumentTooLarge) as refused:
        check_shape(wrapped, ShapeLimits(max_items=5_000, max_values=200_000))
    assert refused.value.message.startswith("[0]: holds more than 200000 JSON values")


def test_a_batch_small_enough_to_parse_is_measured_after_parsing() -> None:
    """Its bound (1 + commas + brackets) is past max_values but within PARSE_FIRST_VALUES:
    check_shape leaves it to check_events, which measures each event's compact text."""
    small = {"a": [1, 2, 3]}  # 5 values
    big = {"a": list(range(25)), "b": "x,[{"}  # 1 + 26 + 1 = 28 values; the string is one
    limits = ShapeLimits(max_items=10, max_values=20)
    assert check_shape(json.dumps([small] * 10).encode(), limits)
    assert not check_shape(json.dumps(small).encode(), limits)  # within max_values: no walk
    check_events([json.dumps(small, separators=(",", ":"))] * 10, 20)
    texts = [json.dumps(e, separators=(",", ":")) for e in (small, {"b": ",,,[[[{{{"}, big)]
    with pytest.raises(DocumentTooLarge) as refused:
        check_events(texts, 20)
    assert refused.value.message.startswith("[2]: holds more than 20 JSON values")
    check_events(texts, 28)
    outsized = b"[" + b"0," * PARSE_FIRST_VALUES + b"0]"  # past the budget: measured unparsed
    assert not check_shape(outsized, ShapeLimits(max_items=PARSE_FIRST_VALUES + 1, max_values=20))


def test_malformed_json_is_left_to_the_parser() -> None:
    for text in (b"[{]", b"]]]", b'{"a": "unterminated', b"[1,,2"):
        check_shape(text, ShapeLimits(max_items=10, max_values=20))


def test_every_real_producer_event_is_far_below_the_default(fixtures_dir: Path) -> None:
    limit = Settings().max_event_values
    largest = 0
    for path in fixtures_dir.rglob("*.json"):
        document = json.loads(path.read_text(encoding="utf-8"))
        events = document if isinstance(document, list) else [document]
        largest = max([largest, *(_values(event) for event in events)])
        check_shape(path.read_bytes(), ShapeLimits(max_items=None, max_values=limit))
    assert 0 < largest * 10 < limit
