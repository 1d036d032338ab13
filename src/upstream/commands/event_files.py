"""Reading OpenLineage events from files for `upstream ingest`, each located by file and line.

A file holds one JSON event, a JSON array of events, NDJSON (one event per line), or events
written one after another (what `jq . events.json` prints). NDJSON streams line by line, so a
file of millions of events never sits in memory; a broken line is reported and the next one
read, whichever line it is (a broken first line included: the next line starting an event of
its own says the file is NDJSON). In a stream of pretty-printed events a broken event is
reported and reading resumes at the next line that starts with `{`, where the writers put each
top-level event (nested objects are indented). In an array a syntax error ends that file,
since nothing after it can be located reliably.

Each event's text is held to the server's strict JSON (`model.strict_json.check_document`):
a key repeated in an object (`job.name: repeated key`), a string no database stores or nesting
too deep makes the entry unreadable, as it would make a posted body.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from upstream.model.errors import MalformedDocument, json_syntax_reason
from upstream.model.strict_json import check_document

_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"
#: Cut from a line before it is parsed, so a line cut inside a string is reported as an
#: unterminated string, not as a string holding a newline.
_NEWLINE = "\r\n"


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
        document = json.loads(first_line.rstrip(_NEWLINE))
    except ValueError as exc:
        # A bad NDJSON line, or the first line of pretty-printed JSON: the next line tells.
        read = _through_next_nonblank(stream)
        if not read:
            yield Malformed(origin, number, _line_malformed(exc))
        elif read[-1].startswith("{"):
            yield Malformed(origin, number, _line_malformed(exc))
            yield from _ndjson(itertools.chain(read, stream), origin, number)
        else:
            text = first_line + "".join(read) + stream.read()
            yield from _decode_all(text, origin, number, array=False)
        return
    yield _event(document, first_line, origin, number)
    yield from _ndjson(stream, origin, number)


def _through_next_nonblank(stream: IO[str]) -> list[str]:
    """The lines read from `stream` up to and including the next non-blank one (none at the
    end of the file)."""
    read: list[str] = []
    for raw in stream:
        read.append(raw)
        if raw.strip(_BLANK):
            return read
    return []


def _ndjson(lines: Iterable[str], origin: str, number: int) -> Iterator[Item]:
    """One event per line, from the line after `number` on."""
    for raw in lines:
        number += 1
        if not raw.strip(_BLANK):
            continue
        try:
            document = json.loads(raw.rstrip(_NEWLINE))
        except ValueError as exc:
            yield Malformed(origin, number, _line_malformed(exc))
            continue
        yield _event(document, raw, origin, number)


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
            yield Malformed(origin, line_at(position), _malformed(exc, first_line))
            resume = -1 if array else text.find("\n{", position)
            if resume < 0:
                return
            position = resume + 1
            continue
        yield _event(document, text[position:end], origin, line_at(position))
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


def _event(document: Any, text: str, origin: str, line: int) -> Item:
    """The event `document`, parsed from `text`, or why it is none."""
    if isinstance(document, dict):
        try:
            check_document(document, text.encode("utf-8", "surrogatepass"))
        except MalformedDocument as exc:
            return Malformed(origin, line, str(exc))
        return Located(origin, line, document)
    kind = "an array" if isinstance(document, list) else f"a JSON {type(document).__name__}"
    return Malformed(origin, line, f"expected an event (a JSON object), found {kind}")


def _skip_blank(text: str, position: int) -> int:
    while position < len(text) and text[position] in _BLANK:
        position += 1
    return position


def _line_malformed(exc: ValueError) -> str:
    """Why one NDJSON line is not JSON, with the column (the line is the entry's)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"malformed JSON at column {exc.colno}: {json_syntax_reason(exc)}"
    return f"malformed JSON: {_too_long(exc)}"


def _malformed(exc: ValueError, first_line: int) -> str:
    """Why text whose first line is the file's line `first_line` is not JSON, and where."""
    if isinstance(exc, json.JSONDecodeError):
        line = first_line + exc.lineno - 1
        return f"malformed JSON at line {line} column {exc.colno}: {json_syntax_reason(exc)}"
    return f"malformed JSON: {_too_long(exc)}"


def _too_long(exc: ValueError) -> str:
    """A number too long to convert (the only other ValueError of the decoder), on one line."""
    return str(exc).split(";")[0]
