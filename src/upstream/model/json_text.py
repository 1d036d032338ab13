"""JSON text at C speed (orjson), with the standard library where orjson would be wrong.

orjson is five to ten times faster than `json` at parsing and writing events, but it differs
in three places, each handled here rather than by its callers:

- it refuses to write integers beyond 64 bits, and silently parses those beyond 64 bits as
  floats (18446744073709551616 becomes 1.8446744073709552e+19): a body holding a run of 19 or
  more digits is parsed by `json`, and a value orjson cannot write is written by `json`;
- it writes floats below 1e-4 as `0.00001` or `1e-8` where `json` writes `1e-05` and `1e-08`:
  the canonical text of an event (whose hash is the event's key, so it must never change) is
  written by `json` whenever orjson's text holds such a number;
- its error messages differ from `json`'s, which the API quotes: callers parse a body that
  orjson refuses again with `json` to get its message (`loads` returns None for them).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

import orjson

#: Every digit as `0`, so that a run of 19 or more digits (possibly an integer orjson parses as a
#: float: below -2**63 or above 2**64 - 1) is found by a plain substring search; a regular
#: expression over every digit of an event costs more than parsing it. Strings of digits
#: match too; they only take the slower, exact path.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19
#: Where orjson writes a float below 1e-4 in magnitude, which `json` writes otherwise: in
#: fixed notation it starts a value with `0.0000` (after `:`, `,` or `[` in compact text, and
#: an optional `-`), else it has a negative exponent.
_SMALL_FIXED = b"0.0000"
_NEGATIVE_EXPONENT = re.compile(rb"e-[0-9]")
_MANTISSA = frozenset(b"0123456789.")
_VALUE_START = frozenset(b":,[")


def loads(raw: bytes) -> Any | None:
    """The parsed JSON of `raw`, or None when orjson refuses it or might round one of its
    integers: the caller then parses it with `json` (which also says why it is invalid)."""
    if may_round(raw):
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def may_round(raw: bytes) -> bool:
    """Whether orjson might round an integer of `raw` (it holds a run of 19 or more digits)."""
    return _LONG_DIGITS in raw.translate(_DIGITS_AS_ZERO)


def parse(text: str | bytes) -> Any:
    """The value of JSON text exactly as `json.loads` reads it, at orjson's speed wherever the
    two agree: how stored JSON (facets, fields) is read back (`upstream.store.engine`)."""
    raw = text.encode() if isinstance(text, str) else bytes(text)
    value = loads(raw)
    return json.loads(raw) if value is None else value


def dumps(value: Any) -> str:
    """Compact JSON text of `value` (non-ASCII characters kept as they are)."""
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def canonical(value: Any) -> bytes:
    """The canonical UTF-8 text of `value`: keys sorted, no spaces, non-ASCII kept, exactly as
    `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)` writes it
    (the form events have always been keyed by). A uuid is written as its text, as orjson
    writes it: a lineage set's edges hold ids."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        text = None
    if text is None or _writes_a_small_float(text):
        standard = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_uuid_text
        )
        return standard.encode("utf-8")
    return text


def _uuid_text(value: object) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _writes_a_small_float(text: bytes) -> bool:
    """Whether compact JSON `text` may hold a float below 1e-4 as orjson writes it. Text in
    strings can look like one too (a false alarm only costs time); a real one is never
    missed."""
    fixed = text.find(_SMALL_FIXED)
    while fixed != -1:  # one search for the digits, then a look at what comes before them
        position = fixed - 1 if fixed > 0 and text[fixed - 1] == ord("-") else fixed
        if position == 0 or text[position - 1] in _VALUE_START:  # 0: the whole text
            return True
        fixed = text.find(_SMALL_FIXED, fixed + 1)
    for found in _NEGATIVE_EXPONENT.finditer(text):
        start = position = found.start()
        while position > 0 and text[position - 1] in _MANTISSA:
            position -= 1
        if position == start:
            continue  # no digit before the `e`: a word, not a number
        if position > 0 and text[position - 1] == ord("-"):
            position -= 1
        if position == 0 or text[position - 1] in _VALUE_START:  # 0: the whole text
            return True
    return False


class Written:
    """Part of an answer written as JSON text already, as orjson writes its value, and
    holding no float nor integer beyond 64 bits (an answer's listed relations: names and
    ids; a diff's relations with their run counts). `answer_bytes` places
    it as it is, and its check for the floats `json` writes otherwise need not read it: of
    an answer of 18,000 relations, that check read 4 MB of ids."""

    __slots__ = ("count", "text")

    def __init__(self, text: bytes, count: int) -> None:
        self.text = text
        #: How many items the text holds (it is a JSON array or object).
        self.count = count

    def __len__(self) -> int:
        return self.count

    def value(self) -> Any:
        return orjson.loads(self.text)


#: Where `answer_bytes` writes a `Written` part first: orjson writes no control character
#: raw, so the byte cannot be found in its text elsewhere.
_PLACE = b"\x00"


def answer_bytes(value: Any, encode: Callable[[Any], Any]) -> bytes:
    """The UTF-8 JSON of an answer, byte for byte what `json.dumps(encode(value),
    separators=(",", ":"), ensure_ascii=False)` writes, at orjson's speed. `encode` turns
    what JSON has no type for (a set, a model) into what it has; orjson asks it only for
    those values, where the standard library's way walks the whole answer first (220 ms
    of an 18,000-relation answer, which orjson writes in 10). `Written` parts are placed
    as they are."""
    written: list[bytes] = []

    def default(item: Any) -> Any:
        if isinstance(item, Written):
            written.append(item.text)
            return orjson.Fragment(_PLACE)
        return encode(item)

    try:
        text = orjson.dumps(value, default=default)
    except (orjson.JSONEncodeError, TypeError):  # beyond 64 bits, or keys that are no str
        text = None
    if text is None or _writes_a_small_float(text):
        standard = json.dumps(encode(_read(value)), separators=(",", ":"), ensure_ascii=False)
        return standard.encode("utf-8")
    if not written:
        return text
    pieces = text.split(_PLACE)
    placed = [piece for pair in zip(pieces, written, strict=False) for piece in pair]
    return b"".join([*placed, pieces[-1]])


def _read(value: Any) -> Any:
    """`value` with each `Written` part read back into its value, for `json` to write."""
    if isinstance(value, Written):
        return value.value()
    if isinstance(value, dict):
        return {key: _read(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_read(item) for item in value]
    return value


def content_key(value: Any) -> str:
    """SHA-256 (hex) of the canonical text: the key of an event's content."""
    return hashlib.sha256(canonical(value)).hexdigest()
