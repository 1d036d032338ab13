"""Strict JSON for posted documents: UTF-8, no NaN or Infinity, numbers a database can hold,
bounded nesting, no string a database would refuse, and no key repeated in an object.

A repeated key is refused, not resolved: parsers disagree on which of the two values wins
(orjson and `json` keep the last, others the first), so two consumers of the same event could
record two different jobs or runs (RFC 8259 §4: names SHOULD be unique). Finding one costs a
count, not a second parse: with whitespace removed, every key written in the text ends in `":`
(its closing quote, then its colon), and `":` appears nowhere else but inside a string. So the
count of `":` is at least the number of keys written, and the parsed objects hold one key per
distinct name: when the two are equal, no object repeats a key. Only a document where they
differ (a repeated key, or a string holding `\\":`) is parsed again by `json` with a hook that
sees every key, to say where the repeated one is or that there is none.

The parsed objects' keys and depth are counted by orjson, not by a walk in Python (which cost
more than parsing): it writes the document back as compact JSON, where every key ends in `":`
and a `":` inside a string is written `\\":`, so without a `\\":` the count of `":` is the
number of keys; and it refuses to write more than `ORJSON_DEPTH` levels, so the document
wrapped in `ORJSON_DEPTH - MAX_JSON_DEPTH` arrays is written only when it nests no deeper than
`MAX_JSON_DEPTH`. A document it cannot count so is walked.

A batch a client sent as compact JSON is, byte for byte, the text orjson writes of what it
parsed (`parse_batch` writes that text anyway: it is what each event is kept as). Such a text
holds no key twice (orjson writes each key of a parsed object once) and no number orjson
rounded (it would be written otherwise), so neither is counted or looked for: only its
strings' suspect escapes are.

Every refusal is a `MalformedDocument` located by its path into the document (`job.name`,
`[2].run.facets.x`), or by `label` (`body`) when it concerns the text as a whole.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from upstream.model import json_text
from upstream.model.errors import MalformedDocument, join_path, json_syntax_reason

#: Deepest nesting of arrays and objects accepted. Real events nest under 20 levels (a deep
#: `schema` facet); the ceiling keeps every later step (validation, hashing, the database's
#: JSON parser) far from recursion limits. A 10,000-deep document is refused, not a crash.
MAX_JSON_DEPTH = 100
#: The most levels orjson writes (its recursion limit; `tests/ingest/test_strict_json.py`
#: checks it still is).
ORJSON_DEPTH = 254

#: Escapes that decode to text PostgreSQL cannot store: NUL, and UTF-16 surrogate halves
#: (a lone half is no character at all). Only documents that contain one are walked in full.
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")
_WHITESPACE = b" \t\r\n"
_KEY_END = b'":'
_ESCAPED_KEY_END = b'\\":'
#: The same, in the items' texts (`parse_batch`).
_KEY_END_TEXT = '":'
_ESCAPED_KEY_END_TEXT = '\\":'


def parse_json(raw: bytes, label: str = "") -> Any:
    """The document of `raw`, strict JSON (see the module); raises MalformedDocument, whose
    problems of the whole text are located at `label`.

    orjson parses what it can parse exactly (`json_text.loads`); the rest, and every document
    it refuses, goes to `json`, whose complaints are the ones answered."""
    document = _parse(raw, label)
    check_document(document, raw)
    return document


def parse_batch(raw: bytes, label: str = "") -> tuple[Any, list[str] | None]:
    """`parse_json`, and the compact JSON text (as `json_text.dumps` writes it) of each item
    when the document is an array, else of the document itself (one event): the texts the
    checks count keys on are the ones the caller keeps, so each event is written once (kept
    as its payload). None for a document that is no array and that orjson cannot write."""
    document = _orjson_or_none(raw)
    written = None if document is None else _written(document)
    if written is not None and _joined(written, document) == raw.strip(_WHITESPACE):
        # orjson's own text of what it parsed: no key written twice, no number rounded.
        _check_strings(document, raw)
        return document, [text.decode() for text in written]
    if document is not None and json_text.may_round(raw):
        document = None
    if document is None:
        document = _parse_slowly(raw, label)
        written = _written(document)
    is_array = isinstance(document, list)
    texts = None if written is None else [text.decode() for text in written]
    if texts is None:
        check_document(document, raw)
        return document, [json_text.dumps(item) for item in document] if is_array else None
    escaped = any(_ESCAPED_KEY_END_TEXT in text for text in texts)
    _check(document, raw, None if escaped else sum(text.count(_KEY_END_TEXT) for text in texts))
    return document, texts


def _parse(raw: bytes, label: str) -> Any:
    document = json_text.loads(raw)
    return _parse_slowly(raw, label) if document is None else document


def _orjson_or_none(raw: bytes) -> Any:
    """orjson's document of `raw`, None when it refuses it (its integers may be rounded:
    see `json_text.may_round`)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _written(document: Any) -> list[bytes] | None:
    """orjson's compact text of each item of `document` when it is an array, else of the
    document itself; None when it nests deeper than MAX_JSON_DEPTH or orjson cannot write
    it."""
    return _item_texts(document) if isinstance(document, list) else _document_text(document)


def _joined(written: list[bytes], document: Any) -> bytes:
    """The compact text of the whole document, from `_written`'s."""
    return b"[" + b",".join(written) + b"]" if isinstance(document, list) else written[0]


def _check_strings(document: Any, raw: bytes) -> None:
    """Refuse a key or value of `document` holding NUL or a lone surrogate, looked for only
    when `raw` holds an escape that may decode to one."""
    if _SUSPECT_ESCAPE.search(raw) is not None:
        _walk(document, strings=True)


def _parse_slowly(raw: bytes, label: str) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedDocument.at(label, f"not valid UTF-8 at byte {exc.start}") from None
    if not text.strip():
        raise MalformedDocument.at(label, "empty; expected a JSON event or array of events")
    try:
        return _standard_loads(text)
    except json.JSONDecodeError as exc:
        reason = json_syntax_reason(exc)
        where = f"line {exc.lineno} column {exc.colno}"
        raise MalformedDocument.at(label, f"malformed JSON at {where}: {reason}") from None
    except RecursionError:
        message = f"JSON is nested deeper than {MAX_JSON_DEPTH} levels"
        raise MalformedDocument.at(label, message) from None
    except ValueError as exc:  # a number too long to convert, or a constant refused below
        raise MalformedDocument.at(label, str(exc).split(";")[0]) from None


def _standard_loads(text: str | bytes, **hooks: Any) -> Any:
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite_float, **hooks)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(f"the number {literal[:40]} is too large")
    return value


def check_document(document: Any, raw: bytes) -> None:
    """Refuse, in `document` parsed from `raw`, nesting deeper than MAX_JSON_DEPTH, keys or
    values holding NUL or a lone surrogate, and a key repeated in an object; the message names
    the path. Most documents need only their containers counted, level by level, which is far
    cheaper than visiting each value; the rest are walked with a stack, not recursion, and a
    path is spelled out only for the value complained about."""
    _check(document, raw, _written_keys(document))


def _check(document: Any, raw: bytes, keys: int | None) -> None:
    """`check_document`, given the number of keys in `document`'s objects when it is known
    to nest no deeper than MAX_JSON_DEPTH (None: unknown)."""
    strings = _SUSPECT_ESCAPE.search(raw) is not None
    if keys is None:
        keys = _keys_within(document, MAX_JSON_DEPTH)
    if keys is None or strings:
        _walk(document, strings=strings)
    if keys is not None and keys != raw.translate(None, _WHITESPACE).count(_KEY_END):
        _check_repeated_keys(raw)


def _written_keys(document: Any) -> int | None:
    """The number of keys in the objects of `document`, counted on orjson's text of it (see
    the module); None when it is nested deeper than MAX_JSON_DEPTH, orjson cannot write it,
    or a string holds `\\":`."""
    text = _wrapped_text(document)
    if text is None or _ESCAPED_KEY_END in text:
        return None
    return text.count(_KEY_END)


def _document_text(document: Any) -> list[bytes] | None:
    """The document's own compact JSON text (as a list of one), written as `_written_keys`
    writes it (so only when it nests no deeper than MAX_JSON_DEPTH); None when it is not."""
    text = _wrapped_text(document)
    if text is None:
        return None
    around = ORJSON_DEPTH - MAX_JSON_DEPTH  # the brackets of the wrapping on each side
    return [text[around:-around]]


def _wrapped_text(document: Any) -> bytes | None:
    """orjson's text of `document` inside as many lists as leave it MAX_JSON_DEPTH levels of
    orjson's own limit (so orjson refuses what nests deeper); None when it cannot write it."""
    wrapped = document
    for _ in range(ORJSON_DEPTH - MAX_JSON_DEPTH):
        wrapped = [wrapped]
    try:
        return orjson.dumps(wrapped)
    except orjson.JSONEncodeError:
        return None


def _item_texts(document: list[Any]) -> list[bytes] | None:
    """Each item's compact JSON text, written by orjson one level deeper than
    `_written_keys` writes the document (the items are in it), so that each is written only
    when the document nests no deeper than MAX_JSON_DEPTH; None when one is not."""
    slot: list[Any] = [None]
    wrapped: list[Any] = slot
    for _ in range(ORJSON_DEPTH - MAX_JSON_DEPTH):
        wrapped = [wrapped]
    around = ORJSON_DEPTH - MAX_JSON_DEPTH + 1  # the brackets of `wrapped` on each side
    texts: list[bytes] = []
    for item in document:
        slot[0] = item
        try:
            text = orjson.dumps(wrapped)
        except orjson.JSONEncodeError:
            return None
        texts.append(text[around:-around])
    return texts


def _keys_within(document: Any, limit: int) -> int | None:
    """The number of keys in the objects of `document`, or None when an array or object is
    nested deeper than `limit` levels."""
    level = [document] if isinstance(document, _CONTAINERS) else []
    depth = keys = 0
    while level:
        depth += 1
        if depth > limit:
            return None
        keys += sum([len(container) for container in level if type(container) is dict])
        level = [
            item
            for container in level
            for item in (container.values() if type(container) is dict else container)
            if isinstance(item, _CONTAINERS)
        ]
    return keys


#: A tuple, not `dict | list`: isinstance takes a tuple a third faster, and this test runs
#: once per value of every document.
_CONTAINERS = (dict, list)

#: Where a value sits: (the parent's trail, key or index), None for the whole document.
_Trail = tuple[Any, str | int] | None


def _walk(document: Any, *, strings: bool) -> None:
    stack: list[tuple[Any, int, _Trail]] = [(document, 1, None)]
    while stack:
        value, depth, trail = stack.pop()
        if isinstance(value, _CONTAINERS) and depth > MAX_JSON_DEPTH:
            message = f"nested deeper than {MAX_JSON_DEPTH} levels"
            raise MalformedDocument.at(_path(trail) or "document", message)
        if isinstance(value, dict):
            for key, item in value.items():
                if strings:
                    _check_text(key, (trail, key))
                stack.append((item, depth + 1, (trail, key)))
        elif isinstance(value, list):
            stack.extend((item, depth + 1, (trail, i)) for i, item in enumerate(value))
        elif strings and isinstance(value, str):
            _check_text(value, trail)


def _check_text(text: str, trail: _Trail) -> None:
    if "\0" in text:
        message = "contains the NUL character (\\u0000)"
        raise MalformedDocument.at(_path(trail) or "document", message)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        message = "contains a lone UTF-16 surrogate escape"
        raise MalformedDocument.at(_path(trail) or "document", message) from None


class _Repeated(dict[str, Any]):
    """An object one of whose keys was written twice: `key`, the first repeated."""

    key: str


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`json`'s hook for each object, which sees every key as written."""
    found = dict(pairs)
    if len(found) == len(pairs):
        return found
    keys = [key for key, _ in pairs]
    marked = _Repeated(found)
    marked.key = next(key for i, key in enumerate(keys) if key in keys[:i])
    return marked


def _check_repeated_keys(raw: bytes) -> None:
    """Raise MalformedDocument at the first key written twice in one object of `raw`, a
    document already parsed once (so this parse succeeds)."""
    stack: list[tuple[Any, _Trail]] = [(_standard_loads(raw, object_pairs_hook=_object), None)]
    while stack:
        value, trail = stack.pop()
        if isinstance(value, _Repeated):
            raise MalformedDocument.at(_path((trail, value.key)), "repeated key")
        if isinstance(value, dict):
            stack.extend((item, (trail, key)) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, (trail, i)) for i, item in reversed(list(enumerate(value))))


def _path(trail: _Trail) -> str:
    steps: list[str | int] = []
    while trail is not None:
        trail, step = trail
        steps.append(step)
    path = ""
    for step in reversed(steps):
        text = f"[{step}]" if isinstance(step, int) else step.encode("utf-8", "replace").decode()
        path = join_path(path, text)
    return path if len(path) <= 120 else f"{path[:120]}…"
