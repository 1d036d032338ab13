"""orjson where it is exact, the standard library where it is not (`upstream.model.json_text`).

An event's key is the SHA-256 of its canonical text, so that text must stay exactly what
`json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)` has always written:
otherwise an event stored before would be stored again when re-posted."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given

from tests.json_values import json_values
from upstream.model.json_text import canonical, content_key, dumps, loads, parse


def standard(value: Any) -> bytes:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8")


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": {"d": [True, None], "c": 'é ✓ 😀 \u2028 \x7f \x1f \n \t " \\'}},
        {"z": 2**64, "a": -(2**63) - 1},  # beyond 64 bits: orjson cannot write them
        {"x": 1e-05, "y": -2.9058824021995135e-08, "w": 0.0001},  # orjson: 0.00001, …e-8
        {"big": 1e16, "huge": 1.7976931348623157e308, "tiny": 5e-324, "neg": -0.0},
        {"é": 1, "e": 2, "E": 3, "\U0001f600": 4, "\uffff": 5},  # key order by code point
        {"s": "1e-05", "t": ":0.00001"},  # strings that look like small floats
        {"l": [-0.00005, 3, 0.00002], "n": -0.00003, "m": 10.00001},  # after `[`, `,`, `-`
    ],
)
def test_the_canonical_text_is_the_standard_librarys(value: Any) -> None:
    assert canonical(value) == standard(value)
    assert content_key(value) == hashlib.sha256(standard(value)).hexdigest()


@given(json_values())
def test_any_json_value_has_the_standard_canonical_text(value: Any) -> None:
    assert canonical(value) == standard(value)


@pytest.mark.parametrize("value", [6.103515625e-05, -6.103515625e-05, 1e-05, -2.5e-07])
def test_a_small_float_alone_has_the_standard_text(value: float) -> None:
    # The whole document is the number: nothing stands before it (found by hypothesis).
    assert canonical(value) == standard(value)


def test_integers_beyond_64_bits_are_parsed_exactly_by_the_slow_path() -> None:
    # orjson alone would parse the first as the float 1.8446744073709552e+19.
    assert loads(b'{"n": 18446744073709551616}') is None
    assert loads(b'{"n": -9223372036854775809}') is None
    assert loads(b'{"id": "1234567890123456789"}') is None  # digits in a string: slow path too
    assert loads(b'{"n": 123456789012345678, "m": 1.5}') == {"n": 123456789012345678, "m": 1.5}


def test_bodies_orjson_refuses_are_left_to_the_standard_parser() -> None:
    for raw in (b"", b"NaN", b'{"a": 1e400}', b'"\\ud800"', b"\xef\xbb\xbf{}", b"{"):
        assert loads(raw) is None


def test_dumps_writes_what_orjson_cannot() -> None:
    assert json.loads(dumps({"n": 2**70, "s": "é"})) == {"n": 2**70, "s": "é"}
    assert dumps({"b": 1, "a": [1.5, None]}) == '{"b":1,"a":[1.5,null]}'  # key order kept


@pytest.mark.parametrize(
    "text",
    [
        '{"n": 18446744073709551616, "m": -9223372036854775809}',  # beyond 64 bits
        '{"x": NaN, "y": Infinity}',  # the standard library reads these; orjson does not
        "null",
        '[1.5, "é", {"a": null}]',
        '{"a": 1, "a": 2}',  # a repeated key: the last one stands
    ],
)
def test_stored_json_is_read_back_as_the_standard_library_reads_it(text: str) -> None:
    expected = json.loads(text)
    for given_text in (text, text.encode()):
        value = parse(given_text)
        assert json.dumps(value) == json.dumps(expected)  # NaN == NaN only as text


@given(json_values())
def test_any_stored_value_is_read_back_unchanged(value: Any) -> None:
    assert parse(dumps(value)) == json.loads(dumps(value))
