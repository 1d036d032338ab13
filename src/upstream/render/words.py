"""Counts in the user's words: `1 event`, `2 events`, `1 entry`, `3 entries`."""

from __future__ import annotations


def counted(number: int, noun: str, plural: str | None = None) -> str:
    """`number` followed by `noun`, or by its plural (`noun` + "s" unless given) when the
    number is not one.

    >>> counted(1, "event"), counted(0, "event"), counted(2, "entry", "entries")
    ('1 event', '0 events', '2 entries')
    """
    return f"{number:,} {noun if number == 1 else plural or noun + 's'}"
