"""Time expressions of lineage queries (design §4.1).

A time is epoch seconds (`1476321533`, fractions allowed), an ISO-8601 instant
(`2026-11-01T12:00:00Z`; without an offset it is UTC; a bare date is its midnight UTC), `now`,
or `now` followed by signed terms with a unit `ms`, `s`, `m`, `h` or `d` (`now-7d`,
`now-1d+4h`, `now-500ms`). A space between terms counts as `+`, because a literal `+` in a
query string arrives decoded as a space (`?end=now+4h`). Times before the epoch are rejected
as negative.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from upstream.model.errors import shown

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_UNITS: dict[str, timedelta] = {
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
}
_EPOCH_SECONDS = re.compile(r"-?\d+(\.\d+)?")
_TERM = re.compile(r"([+\- ])(\d+)(ms|s|m|h|d)")
_FORMS = "epoch seconds, ISO-8601, now, or now with terms like -7d, +4h, -30m, -15s, -500ms"
#: More digits than any term within the representable range (timedelta's 999,999,999 days)
#: can have; longer ones are out of range before Python is asked to convert them.
_MAX_TERM_DIGITS = 18


def parse_time_expression(text: str, now: datetime) -> datetime:
    """The instant `text` names, relative to `now` (timezone-aware); ValueError if none."""
    value = text.strip()
    if not value:
        raise ValueError(f"an empty value is not a time; use {_FORMS}")
    try:
        if value.lower().startswith("now"):
            moment = now + _offset(value[3:], text)
        elif _EPOCH_SECONDS.fullmatch(value):
            moment = EPOCH + timedelta(seconds=float(value))
        else:
            moment = _iso(value, text)
    except OverflowError:
        raise ValueError(f"{shown(text)} is out of range") from None
    if moment < EPOCH:
        raise ValueError(f"{shown(text)} is negative (before 1970-01-01T00:00:00Z)")
    return moment


def _offset(terms: str, text: str) -> timedelta:
    """The sum of `now`'s terms: `-1d+4h` is -20 hours."""
    total = timedelta()
    position = 0
    for match in _TERM.finditer(terms):
        if match.start() != position:
            break
        sign = -1 if match.group(1) == "-" else 1
        if len(match.group(2)) > _MAX_TERM_DIGITS:
            raise OverflowError(match.group(2))
        total += sign * int(match.group(2)) * _UNITS[match.group(3)]
        position = match.end()
    if position != len(terms):
        raise ValueError(f"{shown(text)} is not a time; use {_FORMS}")
    return total


def _iso(value: str, text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{shown(text)} is not a time; use {_FORMS}") from None
    return in_utc(moment)


def in_utc(moment: datetime) -> datetime:
    """`moment` in UTC; one without an offset is read as UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse_duration(text: str) -> timedelta:
    """A positive length of time in the terms' units: `90d`, `12h`, `1d12h` (each term may
    carry a sign, the first needs none); ValueError if it is not one."""
    value = text.strip()
    terms = value if value[:1] in ("+", "-") else f"+{value}"
    terms = re.sub(r"(?<=[a-z])(?=\d)", "+", terms)  # 1d12h: an unsigned later term adds
    try:
        length = _offset(terms, text) if value else timedelta()
    except OverflowError:
        raise ValueError(f"{shown(text)} is out of range") from None
    except ValueError:
        raise ValueError(f"{shown(text)} is not a length of time such as 90d or 12h") from None
    if length <= timedelta():
        raise ValueError(f"{shown(text)} is not a positive length of time such as 90d or 12h")
    return length
