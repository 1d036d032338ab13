"""What a process keeps for each database it reads: one object per SQLAlchemy engine, made on
first use and dropped with the engine (a closed server's, a finished test's), shared by every
thread of the process. The graph index, the Marquez graph's node documents and the dataset
versions' stored contents are each kept so."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from sqlalchemy.engine import Engine

T = TypeVar("T")


class PerEngine(Generic[T]):
    """One `T` per engine, made by `make(engine)` the first time the engine asks for it."""

    def __init__(self, make: Callable[[Engine], T]) -> None:
        self._make = make
        self._kept: weakref.WeakKeyDictionary[Engine, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def __call__(self, engine: Engine) -> T:
        with self._lock:
            found = self._kept.get(engine)
            if found is None:
                found = self._kept[engine] = self._make(engine)
            return found

    def share(self, engine: Engine, kept: T) -> None:
        """From now on `engine` uses `kept` (a replica's engine, the primary's object)."""
        with self._lock:
            self._kept[engine] = kept
