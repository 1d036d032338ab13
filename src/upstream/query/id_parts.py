"""The JSON text of ids, each written once for the life of the process (design §6).

A collapsed answer lists the runs of each of its groups: the downstream walk at levels=10
collapsed by run lists 18,570 of them, and writing their text was a tenth of the answer. An
id keeps its number and its text for the life of the process (`graph_index.numbering`), so
the piece an answer writes for it, `,"<id>"`, is made the first time an answer shows it and
kept beside its numbering; later answers take their pieces by number. Nothing here can go
stale: no change log is read.
"""

from __future__ import annotations

import threading
from weakref import WeakKeyDictionary

import numpy as np
import numpy.typing as npt

from upstream.query.graph_index.dataset_walk import distinct
from upstream.query.graph_index.numbering import Numbering
from upstream.query.listed_entries import json_parts

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]


class _Held:
    """The pieces made so far for one numbering, by number, and which are made."""

    def __init__(self) -> None:
        self.parts: Parts = np.empty(0, dtype=np.object_)
        self.made = np.zeros(0, dtype=np.bool_)


_HELD: WeakKeyDictionary[Numbering, _Held] = WeakKeyDictionary()
_LOCK = threading.Lock()


def id_parts(numbering: Numbering, numbers: Ints) -> Parts:
    """`,"<id>"` (the id's JSON string after a comma) for each of `numbers`, which
    `numbering` holds (no NONE)."""
    with _LOCK:
        held = _HELD.get(numbering)
        if held is None:
            held = _HELD[numbering] = _Held()
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
        missing = distinct(numbers[~held.made[numbers]])
        if len(missing):
            texts = numbering.texts
            written = json_parts([texts[n] for n in missing.tolist()], b',"', b'"')
            held.parts[missing] = written[:-1]
            held.made[missing] = True
        found: Parts = held.parts[numbers]
        return found
