"""A collapsed answer's relations written as JSON text at once (design §6).

A collapsed entry lists what its group unites: of the downstream walk at levels=10 collapsed
by run, 2,028 entries list 18,570 runs between them. As for a listed answer
(`listed_entries`), each distinct dataset, program, run and component is written once, as
bytes, and the text is those parts put in place by numpy in the order `collapse.grouped`
gives: no list of run ids per entry and no dictionary per entry is made.
"""

from __future__ import annotations

from collections.abc import Collection
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from upstream.model.json_text import Written
from upstream.query.collapse import (
    Dimension,
    KeyedRelations,
    Listed,
    grouped,
    list_texts,
    named_components,
)
from upstream.query.graph_index.dataset_walk import distinct
from upstream.query.graph_index.numbering import NONE
from upstream.query.listed_entries import json_parts
from upstream.query.relation_table import text_ranks

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]
#: What follows each list of an entry: the next list's key, or the entry's end.
_AFTER = (b',"runs":', b',"components":', b"}")


def collapsed_entries(
    relations: KeyedRelations, dimensions: Collection[Dimension], run_order: Ints | None
) -> Written:
    """The entries `collapse(relations, dimensions, run_order)` gives, as the JSON text
    orjson writes for them."""
    if set(dimensions) == {"run"}:
        by_run = _collapsed_by_run(relations, run_order)
        if by_run is not None:
            return by_run
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


#: What an entry's data is written between, and its program for each access.
DATA_HEAD = (b',{"data":"', b'","program":"')


def program_head(access: bytes) -> tuple[bytes, bytes]:
    """What an entry's program is written between, for `access` (b"read", b"write")."""
    return b"", b'","accesses":["%s"],"runs":' % access


#: What a group collapsed by run shows after its list of runs when no component is named:
#: its end, with `[` first when it lists no run.
_NO_COMPONENT = np.array([b'],"components":[]}', b'[],"components":[]}'], dtype=np.object_)


def _collapsed_by_run(relations: KeyedRelations, run_order: Ints | None) -> Written | None:
    """`collapsed_entries` of an answer collapsed by run alone whose relations name no
    component (most answers), by one sort: each relation's group (data, program, access,
    as their texts sort) and its run's place (`run_order`, or by id) packed into one integer
    put the groups in the answer's order and each group's runs in its list's. None when a
    relation names a component (groups then tie on everything but it, and `grouped` orders
    them by their runs) or when the packed keys would not fit 62 bits."""
    if not len(relations.data):
        return Written(b"[]", 0)
    if np.any(named_components(relations) != NONE):
        return None
    places = text_ranks(relations.run_ids) if run_order is None else run_order
    data_ranks, program_ranks = relations.ranks()
    # The last place stands for no run (a declared relation): it lists nothing.
    runs, programs = len(places) + 1, len(program_ranks)
    if len(data_ranks) * programs * 2 * runs >= 2**62:
        return None
    run = relations.run
    place = np.full(len(run), runs - 1, dtype=np.int64)
    has_run = run != NONE
    place[has_run] = places[run[has_run]]
    group_key = (data_ranks[relations.data] * programs + program_ranks[relations.program]) * 2
    group_key += relations.write
    packed = distinct(group_key * runs + place)
    group_of = packed // runs  # not `np.divmod`, which numpy does not divide fast
    place = packed - group_of * runs
    starts = np.ones(len(group_of), dtype=np.bool_)
    np.not_equal(group_of[1:], group_of[:-1], out=starts[1:])
    group, keys = np.cumsum(starts) - 1, group_of[starts]
    listed = place != runs - 1
    group, place = group[listed], place[listed]
    count = len(keys)
    sizes = np.bincount(group, minlength=count)
    code_of = np.empty(len(places), dtype=np.int64)
    code_of[places] = np.arange(len(places))
    data_code, program_code = np.argsort(data_ranks), np.argsort(program_ranks)
    data_heads, reading, writing = relations.heads or (
        json_parts(relations.data_keys, *DATA_HEAD),
        json_parts(relations.program_keys, *program_head(b"read")),
        json_parts(relations.program_keys, *program_head(b"write")),
    )
    program = program_code[(keys // 2) % programs]
    # Each group's pieces: its data, its program with its access, its runs, its end.
    placed = np.empty(4 * count + 1, dtype=np.object_)
    placed[0:-1:4] = data_heads[data_code[keys // 2 // programs]]
    placed[1:-1:4] = np.where(keys % 2 == 1, writing[program], reading[program])
    placed[2:-1:4] = _run_lists(relations, code_of[place], sizes)
    placed[3:-1:4] = _NO_COMPONENT[(sizes == 0).astype(np.int64)]
    # The array opens where the first entry's comma stands: the text is joined once.
    placed[0], placed[-1] = b"[" + placed[0][1:], b"]"
    return Written(b"".join(placed.tolist()), count)


def _run_lists(relations: KeyedRelations, codes: Ints, sizes: Ints) -> list[bytes]:
    """The text of each group's runs: `["a","b"` for the run `codes` of its list, group
    after group (`sizes` runs each; `` for none). The runs' text is put in order as one
    array of bytes (each run's row when every run's text is as wide, `run_rows`), its
    lists' first commas made brackets at once, then cut once per group."""
    if relations.run_rows is not None:
        # `take` along the rows copies them whole, where indexing copies byte by byte.
        text = np.take(relations.run_rows, codes, axis=0).reshape(-1)
        ends = relations.run_rows.shape[1] * np.arange(len(codes) + 1)
    else:
        run_parts = relations.run_parts
        if run_parts is None:
            run_parts = json_parts(relations.run_ids, b',"', b'"')
        pieces = run_parts[codes].tolist()
        text = np.frombuffer(b"".join(pieces), dtype=np.uint8).copy()
        ends = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces)), out=ends[1:])
    bounds = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    cuts = ends[bounds]
    # A list's first run opens it.
    text[cuts[:-1][sizes > 0]] = ord("[")
    written = text.tobytes()
    return [written[start:end] for start, end in pairwise(cuts.tolist())]
