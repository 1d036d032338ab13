"""The size of a JSON document, measured before it is parsed.

Parsing builds a Python object per JSON value, and a small body can hold millions of them:
9.9 MB of `[{},{},…]` is 3.3 million dicts, about 700 MB. So the batch limit (events in the
top-level array) and the per-event limit (values in one event) are checked on the raw bytes
first, at C speed: strings are blanked out (so brackets and commas inside them do not count),
whitespace dropped, and what is left is only structure. In a complete value, the number of
values is `1 + commas + non-empty containers` (each comma adds a value beside one, each
non-empty container holds one more than its commas); `bytes.count` gets each term. Event
boundaries are found by one pass over the brackets, which stops as soon as a limit is passed,
so a bomb is refused after looking at its first few thousand bytes.

Most bodies need none of that: `1 + commas + brackets` of the raw bytes (three counts) is an
upper bound of their values. A body whose bound is within `max_values` has no event over it
and parses into few enough objects that its events are counted after parsing
(`check_batch_size`). A batch whose bound is within `PARSE_FIRST_VALUES` parses into little
enough memory that it is parsed first and each event measured on its own compact text
(`check_events`), which the server writes anyway as the event's payload: the walk over the
brackets, in Python, cost more than parsing the batch.

Malformed JSON is not judged here: the parser that follows reports it precisely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from upstream.model.errors import DocumentTooLarge

#: A JSON string, escapes included (unrolled for speed: runs of plain characters at once),
#: and any strings after it with nothing structural between (`"key": "value"`): fewer, longer
#: matches make the blanking faster, and a colon counts for nothing.
_ONE_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_STRING = re.compile(_ONE_STRING + rb'(?:[^"\\\[\]{},]*' + _ONE_STRING + rb")*")
_BRACKET = re.compile(rb"[\[\]{}]")
_WHITESPACE = b" \t\r\n"
_ARRAY = re.compile(rb"[ \t\r\n]*\[")
_SPACES = (b" ", b"\t", b"\r", b"\n")


#: Batches that can hold at most this many values are parsed before their events are measured.
#: Even were every value an empty object they parse into about 64 MB; a batch of 500 real
#: 14 kB events (about 250,000 values) takes 22 MB. A bomb holds millions and is refused on
#: its bytes.
PARSE_FIRST_VALUES = 300_000


@dataclass(frozen=True)
class ShapeLimits:
    """`max_items`: most events in a top-level array (None: the body is one document, array
    or not); `max_values`: most values in one event (or in the one document)."""

    max_items: int | None
    max_values: int


def check_shape(raw: bytes, limits: ShapeLimits) -> bool:
    """Raise DocumentTooLarge when `raw` (JSON text) holds more than the limits allow. True when
    `raw` is a batch small enough to parse first, whose events `check_events` then measures."""
    bound = 1 + raw.count(b",") + raw.count(b"{") + raw.count(b"[")
    if bound <= limits.max_values:
        return False
    if limits.max_items is not None and bound <= PARSE_FIRST_VALUES and _ARRAY.match(raw):
        return True  # (a match, not `lstrip`: no copy of the body)
    skeleton = _STRING.sub(b"0", raw)
    if any(space in skeleton for space in _SPACES):
        skeleton = skeleton.translate(None, _WHITESPACE)
    if limits.max_items is None or not skeleton.startswith(b"["):
        if values_in(skeleton) > limits.max_values:
            noun = "the document" if limits.max_items is None else "the event"
            raise DocumentTooLarge.at("", f"{noun} {_too_many_values(limits.max_values)}")
    else:
        _check_batch(skeleton, limits.max_items, limits.max_values)
    return False


def check_events(texts: list[str], max_values: int) -> None:
    """Raise DocumentTooLarge naming the first event whose compact JSON text (`texts`, one per
    event of a parsed batch) holds more than `max_values` values. Each value takes a
    character at least, so a text no longer than `max_values` is within it (real events, a
    few kilobytes, need no count); three counts bound the others, and only an event over that
    bound has its strings blanked and its values counted."""
    for index, text in enumerate(texts):
        if len(text) <= max_values:
            continue
        if 1 + text.count(",") + text.count("{") + text.count("[") <= max_values:
            continue
        if values_in(_STRING.sub(b"0", text.encode())) > max_values:
            raise DocumentTooLarge.at(f"[{index}]", _too_many_values(max_values))


def values_in(skeleton: bytes, start: int = 0, end: int | None = None) -> int:
    """Values in the complete JSON value `skeleton[start:end]` (object keys not counted)."""
    end = len(skeleton) if end is None else end
    opens = skeleton.count(b"{", start, end) + skeleton.count(b"[", start, end)
    empty = skeleton.count(b"{}", start, end) + skeleton.count(b"[]", start, end)
    return 1 + skeleton.count(b",", start, end) + opens - empty


def _check_batch(skeleton: bytes, max_items: int, max_values: int) -> None:
    """One pass over the brackets of a top-level array: each item's values and the number of
    items, stopping at the first limit passed."""
    depth = item_start = item_opens = items = commas_in_items = 0
    for match in _BRACKET.finditer(skeleton):
        if match.group() in (b"[", b"{"):
            depth += 1
            if depth == 2:
                item_start, item_opens = match.start(), 0
            item_opens += 1
            if item_opens > max_values:  # every container is a value
                raise DocumentTooLarge.at(f"[{items}]", _too_many_values(max_values))
            continue
        depth -= 1
        if depth < 0:
            return  # unbalanced: the parser says where
        if depth == 1:
            item_end = match.end()
            commas_in_items += skeleton.count(b",", item_start, item_end)
            if values_in(skeleton, item_start, item_end) > max_values:
                raise DocumentTooLarge.at(f"[{items}]", _too_many_values(max_values))
            items += 1
            _check_count(items, max_items)
    # Items that are no container (no event, but an item all the same) sit between the
    # top-level commas too.
    _check_count(skeleton.count(b",") - commas_in_items + 1, max_items)


def check_batch_size(document: Any, limits: ShapeLimits) -> None:
    """The batch limit on a parsed document (whose shape `check_shape` passed)."""
    if limits.max_items is not None and isinstance(document, list):
        _check_count(len(document), limits.max_items)


def _check_count(items: int, max_items: int) -> None:
    if items > max_items:
        raise DocumentTooLarge.at(
            "", f"a batch may hold at most {max_items} events; this one holds more"
        )


def _too_many_values(max_values: int) -> str:
    return (
        f"holds more than {max_values} JSON values (the server's max_event_values); "
        "split it into smaller events"
    )
