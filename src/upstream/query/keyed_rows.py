"""Rows grouped by one id, read for many ids in one statement and kept for one query: how a
walk reads every level's rows up front and still reads, when asked, what it did not foresee."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class KeyedRows(Generic[T]):
    """Rows grouped by one id, loaded for many ids at a time and kept for the query."""

    def __init__(
        self, load: Callable[[set[uuid.UUID]], Iterable[T]], key: Callable[[T], uuid.UUID]
    ) -> None:
        self._load = load
        self._key = key
        self._rows: dict[uuid.UUID, list[T]] = defaultdict(list)
        self._loaded: set[uuid.UUID] = set()

    def fetch(self, ids: Iterable[uuid.UUID]) -> None:
        missing = {i for i in ids if i is not None} - self._loaded
        if not missing:
            return
        for row in self._load(missing):
            self._rows[self._key(row)].append(row)
        self._loaded |= missing

    def get(self, ids: Iterable[uuid.UUID]) -> list[T]:
        wanted = set(ids)
        self.fetch(wanted)
        return [row for i in wanted for row in self._rows.get(i, ())]
