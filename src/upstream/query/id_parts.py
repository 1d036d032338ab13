"""The JSON text of ids and entities, each written once for the life of the process (design §6).

A collapsed answer lists the runs of each of its groups: the downstream walk at levels=10
collapsed by run lists 18,570 of them, and writing their text was a tenth of the answer. An
id keeps its number and its text for the life of the process (`graph_index.numbering`), and
a dataset or job its name (`graph_index.names`), so what an answer writes for one — a run's
`,"<id>"`, a node's key and entry (`query.node_entries`) — is made the first time an answer
shows it and kept beside its numbering (`kept`); later answers take their pieces by number.
Nothing here can go stale: no change log is read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from weakref import WeakKeyDictionary

import numpy as np
import numpy.typing as npt

from upstream.query.graph_index.dataset_walk import distinct
from upstream.query.graph_index.numbering import Numbering
from upstream.query.listed_entries import json_parts

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]


#: The width of a uuid's `,"<id>"`.
ID_WIDTH = 39


class _Held:
    """The pieces made so far of one kind for one numbering, by number, and which are made."""

    def __init__(self) -> None:
        self.parts: Parts = np.empty(0, dtype=np.object_)
        self.made = np.zeros(0, dtype=np.bool_)


_HELD: WeakKeyDictionary[Numbering, dict[str, _Held]] = WeakKeyDictionary()
_LOCK = threading.Lock()


def kept(
    numbering: Numbering,
    kind: str,
    numbers: Ints,
    make: Callable[[list[int]], Sequence[object] | Parts],
) -> Parts:
    """The piece of `kind` of each of `numbers` (which `numbering` holds, no NONE): those
    not made yet made by `make` (of their numbers, one piece each, never a tuple) and kept.
    `make` runs outside the lock (it may read names from the store): two readers racing
    make the same pieces twice at worst."""
    with _LOCK:
        held = _HELD.setdefault(numbering, {}).setdefault(kind, _Held())
        size = len(numbering)
        if len(held.parts) < size:
            # Grown by at least half, so a numbering growing with every write is not
            # copied whole at every read.
            room = max(size, len(held.parts) * 3 // 2)
            parts = np.empty(room, dtype=np.object_)
            parts[: len(held.parts)] = held.parts
            made = np.zeros(room, dtype=np.bool_)
            made[: len(held.made)] = held.made
            held.parts, held.made = parts, made
        missing = numbers[~held.made[numbers]]
        if len(missing):  # most answers name only what answers before them named
            missing = distinct(missing)
        found: Parts = held.parts[numbers]
    if len(missing):
        pieces = np.empty(len(missing), dtype=np.object_)
        pieces[:] = make(missing.tolist())
        with _LOCK:
            held.parts[missing] = pieces
            held.made[missing] = True
            found = held.parts[numbers]
    return found


def id_parts(numbering: Numbering, numbers: Ints) -> Parts:
    """`,"<id>"` (the id's JSON string after a comma) for each of `numbers`, which
    `numbering` holds (no NONE)."""
    texts = numbering.texts

    def written(missing: list[int]) -> Parts:
        found: Parts = json_parts([texts[n] for n in missing], b',"', b'"')[:-1]
        return found

    return kept(numbering, "id", numbers, written)


def listed_run_parts(numbering: Numbering, numbers: Ints) -> Parts:
    """`["<id>"],"components":` (a listed entry's list of one run and the key after it) for
    each of `numbers`, which `numbering` holds (no NONE)."""
    texts = numbering.texts

    def written(missing: list[int]) -> Parts:
        found: Parts = json_parts([texts[n] for n in missing], b'["', b'"],"components":')[:-1]
        return found

    return kept(numbering, "listed run", numbers, written)


class _Rows:
    """The `,"<id>"` rows made so far for one numbering, by number, and which are made."""

    def __init__(self) -> None:
        self.rows = np.zeros((0, ID_WIDTH), dtype=np.uint8)
        self.made = np.zeros(0, dtype=np.bool_)


_ROWS: WeakKeyDictionary[Numbering, _Rows] = WeakKeyDictionary()


def id_rows(numbering: Numbering, numbers: Ints) -> npt.NDArray[np.uint8] | None:
    """`,"<id>"` for each of `numbers` (held, no NONE) as a row of `ID_WIDTH` bytes, kept by
    number as `id_parts` keeps its pieces: a collapsed answer's thousands of runs are then
    one copy of their rows, not a piece of text each. None when the numbering holds an id
    that is no uuid's text (its text has no fixed width)."""
    with _LOCK:
        held = _ROWS.setdefault(numbering, _Rows())
        size = len(numbering)
        if len(held.made) < size:
            room = max(size, len(held.made) * 3 // 2)
            rows = np.zeros((room, ID_WIDTH), dtype=np.uint8)
            rows[: len(held.made)] = held.rows
            made = np.zeros(room, dtype=np.bool_)
            made[: len(held.made)] = held.made
            held.rows, held.made = rows, made
        missing = distinct(numbers[~held.made[numbers]])
        if len(missing):
            texts = numbering.text_rows(missing)
            if texts is None:
                return None
            made_rows = np.empty((len(missing), ID_WIDTH), dtype=np.uint8)
            made_rows[:, :2] = np.frombuffer(b',"', dtype=np.uint8)
            made_rows[:, 2:-1] = texts
            made_rows[:, -1] = ord('"')
            held.rows[missing] = made_rows
            held.made[missing] = True
        found: npt.NDArray[np.uint8] = np.take(held.rows, numbers, axis=0)
    return found
