"""Dense integer numbers for the ids of one kind (datasets, jobs, runs, components), so the
index's columns are small integer arrays and a walk compares integers, not uuids.

A numbering only grows: an id keeps its number for the life of the process, and the versions
of the index that share a numbering never meet a number they do not hold, so it is shared
between them rather than copied. Ids are kept as their hyphenated text, the form answers show.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

#: The number standing for "no id" (a declared relation's run, a flow without a job).
NONE = -1


class Numbering:
    """Ids of one kind and their numbers."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}
        self.texts: list[str] = []
        self._order: npt.NDArray[np.int64] = np.zeros(1, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.texts)

    def number(self, text: str | None) -> int:
        """The number of `text` (given one if new); NONE for None."""
        if text is None:
            return NONE
        found = self._numbers.get(text)
        if found is None:
            found = self._numbers[text] = len(self.texts)
            self.texts.append(text)
        return found

    def numbers(self, texts: Iterable[str | None]) -> npt.NDArray[np.int32]:
        # Most ids are numbered already: a dictionary look-up each, without a call.
        known, number = self._numbers, self.number
        return np.fromiter(
            (known[text] if text in known else number(text) for text in texts), dtype=np.int32
        )

    def known(self, text: str) -> int | None:
        """The number of `text` if it has one."""
        return self._numbers.get(text)

    def text_order(self) -> npt.NDArray[np.int64]:
        """The place of each number's id in the sorted ids, with one place more (the last)
        for ids numbered later. Kept until an id is numbered: every version of the index
        shares it, where sorting half a million run ids took each version a fifth of a
        second."""
        order = self._order
        count = len(order) - 1
        if count == len(self.texts):
            return order
        texts = self.texts[:]
        order = np.zeros(len(texts) + 1, dtype=np.int64)
        order[np.argsort(np.array(texts, dtype="U36"), kind="stable")] = np.arange(len(texts))
        order[-1] = len(texts)
        self._order = order
        return order
