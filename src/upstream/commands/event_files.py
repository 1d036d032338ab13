"""Reading OpenLineage events from files for `upstream ingest`, each located by file and line.

A file holds one JSON event, a JSON array of events, NDJSON (one event per line), or events
written one after another (what `jq . events.json` prints). NDJSON streams line by line, so a
file of millions of events never sits in memory; a broken line is reported and the next one
read. In an array or a stream of pretty-printed events a syntax error ends that file, since
nothing after it can be located reliably.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"


@dataclass(frozen=True)
class Located:
    """One event document and where it was read: file name and 1-based line."""

    origin: str
    line: int
    document: dict[str, Any]


@dataclass(frozen=True)
class Malformed:
    """Text at `origin:line` that is no event (line 0: the file as a whole); `message` says
    why."""

    origin: str
    line: int
    message: str


Item = Located | Malformed


def read_events(stream: IO[str], origin: str) -> Iterator[Item]:
    """Every event in `stream` (named `origin` in reports), in order."""
    first_line, number = "", 0
    for raw in stream:
        number += 1
        if raw.strip(_BLANK):
            first_line = raw
            break
    if not first_line:
        return
    if first_line.lstrip(_BLANK).startswith("["):
        yield from _decode_all(first_line + stream.read(), origin, number, array=True)
        return
    try:
        document = json.loads(first_line)
    except ValueError:
        # Not one event per line: pretty-printed JSON, one event or several after another.
        yield from _decode_all(first_line + stream.read(), origin, number, array=False)
        return
    yield _event(document, origin, number)
    yield from _ndjson(stream, origin, number)


def _ndjson(stream: IO[str], origin: str, number: int) -> Iterator[Item]:
    for raw in stream:
        number += 1
        if not raw.strip(_BLANK):
            continue
        try:
            document = json.loads(raw)
        except ValueError as exc:
            yield Malformed(origin, number, f"malformed JSON: {_reason(exc)}")
            continue
        yield _event(document, origin, number)


def _decode_all(text: str, origin: str, first_line: int, *, array: bool) -> Iterator[Item]:
    """Decode JSON values one after another from `text` (whose line 1 is the file's line
    `first_line`), inside `[` … `]` when `array`."""
    position, line = 0, first_line
    counted = 0  # text[:counted] has had its newlines added to `line`

    def line_at(index: int) -> int:
        nonlocal counted, line
        line += text.count("\n", counted, index)
        counted = index
        return line

    position = _skip_blank(text, position)
    if array:
        position = _skip_blank(text, position + 1)  # past "["
        if text.startswith("]", position):
            return
    while position < len(text):
        try:
            document, end = _DECODER.raw_decode(text, position)
        except ValueError as exc:
            yield Malformed(origin, line_at(position), f"malformed JSON: {_reason(exc)}")
            return
        yield _event(document, origin, line_at(position))
        position = _skip_blank(text, end)
        if not array:
            continue
        if text.startswith(",", position):
            position = _skip_blank(text, position + 1)
        elif text.startswith("]", position):
            rest = _skip_blank(text, position + 1)
            if rest < len(text):
                yield Malformed(origin, line_at(rest), "unexpected text after the array")
            return
        else:
            message = "expected ',' or ']' after an array element"
            yield Malformed(origin, line_at(position), message)
            return
    if array:
        yield Malformed(origin, line_at(len(text)), "the array is not closed with ']'")


def _event(document: Any, origin: str, line: int) -> Item:
    if isinstance(document, dict):
        return Located(origin, line, document)
    kind = "an array" if isinstance(document, list) else f"a JSON {type(document).__name__}"
    return Malformed(origin, line, f"expected an event (a JSON object), found {kind}")


def _skip_blank(text: str, position: int) -> int:
    while position < len(text) and text[position] in _BLANK:
        position += 1
    return position


def _reason(exc: ValueError) -> str:
    return exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
