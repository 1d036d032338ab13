"""A collapsed answer's relations written as JSON text at once (design §6).

A collapsed entry lists what its group unites: of the downstream walk at levels=10 collapsed
by run, 2,028 entries list 18,570 runs between them. As for a listed answer
(`listed_entries`), each distinct dataset, program, run and component is written once, as
bytes, and the text is those parts put in place by numpy in the order `collapse.grouped`
gives: no list of run ids per entry and no dictionary per entry is made.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import numpy.typing as npt

from upstream.model.json_text import Written
from upstream.query.collapse import Dimension, KeyedRelations, Listed, grouped, list_texts
from upstream.query.listed_entries import json_parts

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]
#: What follows each list of an entry: the next list's key, or the entry's end.
_AFTER = (b',"runs":', b',"components":', b"}")


def collapsed_entries(
    relations: KeyedRelations, dimensions: Collection[Dimension], run_order: Ints | None
) -> Written:
    """The entries `collapse(relations, dimensions, run_order)` gives, as the JSON text
    orjson writes for them."""
    groups = grouped(relations, dimensions, run_order)
    if not len(groups):
        return Written(b"[]", 0)
    first = groups.first[groups.order]
    ones = np.ones(len(first), dtype=np.int64)
    datasets = json_parts(relations.data_keys, b',{"data":"', b'","program":"')
    programs = json_parts(relations.program_keys, b"", b'","accesses":')
    columns = [
        (datasets[relations.data[first]], ones),
        (programs[relations.program[first]], ones),
    ]
    accesses, run_ids, components = list_texts(relations)
    runs = relations.run_parts
    if runs is None:
        runs = json_parts(run_ids, b',"', b'"')
    pieces = (json_parts(accesses, b',"', b'"'), runs, json_parts(components, b',"', b'"'))
    for members, listed, after in zip(pieces, groups.lists, _AFTER, strict=True):
        columns += _list_columns(members, _in_order(listed, groups.order), after)
    text = b"".join(_interleaved(columns))
    return Written(b"[" + text[1:] + b"]", len(first))


def _in_order(listed: Listed, order: Ints) -> Listed:
    """`listed` with its groups put in `order` (group numbers)."""
    starts, sizes = listed.bounds[order], np.diff(listed.bounds)[order]
    bounds = np.zeros(len(order) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    at = np.repeat(starts - bounds[:-1], sizes) + np.arange(int(bounds[-1]))
    return Listed(listed.codes[at], bounds)


def _list_columns(pieces: Parts, listed: Listed, after: bytes) -> list[tuple[Parts, Ints]]:
    """The pieces of each group's JSON list and what follows it: `["a"`, `,"b"` for its
    members (`pieces`: `,"a"` by code), then `]` (`[]` for an empty list) and `after`."""
    sizes = np.diff(listed.bounds)
    members = pieces[listed.codes]
    # Only a list's first member opens it: one piece per group made again.
    opening = listed.bounds[:-1][sizes > 0]
    members[opening] = [b"[" + piece[1:] for piece in members[opening].tolist()]
    closing = np.array([b"[]" + after, b"]" + after], dtype=np.object_)[(sizes > 0).astype(int)]
    return [(members, sizes), (closing, np.ones(len(sizes), dtype=np.int64))]


def _interleaved(columns: list[tuple[Parts, Ints]]) -> list[bytes]:
    """The pieces of every group, group after group, each group's column after column:
    column k gives `sizes[g]` pieces to group g, its `pieces` group after group."""
    sizes = np.stack([size for _, size in columns], axis=1)
    ends = np.cumsum(sizes.ravel()).reshape(sizes.shape)
    starts = ends - sizes
    placed = np.empty(int(ends[-1, -1]), dtype=np.object_)
    for column, (pieces, size) in enumerate(columns):
        before = np.cumsum(size) - size
        placed[np.repeat(starts[:, column] - before, size) + np.arange(len(pieces))] = pieces
    found: list[bytes] = placed.tolist()
    return found
