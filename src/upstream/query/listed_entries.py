"""A listed answer's relations (nothing collapsed) written as JSON text at once (design §6).

Each entry of a listed answer is one distinct relation, and its text is made of four parts
that repeat across entries: the dataset, the program with the access, the run and the
component. Each distinct part is written once, as bytes, and the entries are those parts put
side by side by numpy, in the order `collapse` gives them: an answer of 18,000 relations
makes no dictionary or list per entry, which cost more than the walk that found them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import orjson

from upstream.model.json_text import Written
from upstream.query.collapse import KeyedRelations, named_components
from upstream.query.graph_index.dataset_walk import distinct_rows
from upstream.query.relation_table import ranked, text_ranks

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]
_CUT = b"\x00"


def listed_entries(relations: KeyedRelations) -> Written:
    """The entries `collapse(relations, (), None)` gives, as the JSON text orjson writes for
    them: each distinct relation, sorted by dataset, program, access, run and component (as
    their texts sort; none first)."""
    component = named_components(relations)
    data_ranks, program_ranks = relations.ranks()
    keys = np.stack(
        [
            data_ranks[relations.data],
            program_ranks[relations.program],
            relations.write,
            ranked(relations.run, text_ranks(relations.run_ids)),
            ranked(component, text_ranks(relations.components)),
        ],
        axis=1,
    )
    groups, group_of = distinct_rows(keys)
    if not len(groups):
        return Written(b"[]", 0)
    first = np.empty(len(groups), dtype=np.int64)
    first[group_of[::-1]] = np.arange(len(group_of))[::-1]
    datasets = json_parts(relations.data_keys, b',{"data":"', b'","program":"')
    programs = json_parts(relations.program_keys, b"", b'","accesses":["read"],"runs":')
    writing = json_parts(relations.program_keys, b"", b'","accesses":["write"],"runs":')
    runs = _run_parts(relations)
    components = json_parts(relations.components, b'["', b'"]}', b"[]}")
    program = relations.program[first]
    columns = [
        datasets[relations.data[first]],
        np.where(relations.write[first] == 1, writing[program], programs[program]),
        runs[relations.run[first]],
        components[component[first]],
    ]
    entries = np.empty(len(columns) * len(first) + 2, dtype=np.object_)
    for place, column in enumerate(columns, start=1):
        entries[place : -1 : len(columns)] = column
    # The brackets joined with the entries, the first one's comma left out: one copy of
    # the text (megabytes), where cutting and wrapping it after made three more.
    entries[0], entries[1], entries[-1] = b"[", entries[1][1:], b"]"
    return Written(b"".join(entries.tolist()), len(first))


def json_parts(texts: Sequence[str], before: bytes, after: bytes, none: bytes = b"") -> Parts:
    """Each of `texts` as a JSON string between `before` and `after`, by code; the last place
    (code -1, NONE) holds `none`. One orjson call writes the strings: in its text of a list
    of strings, `","` appears only between two of them (a quote within one is escaped), so
    one replacement puts `after` and `before` around each, with a NUL byte (which orjson
    writes escaped, and neither holds) where the text is then cut: no bytes made one by
    one."""
    found = np.empty(len(texts) + 1, dtype=np.object_)
    if texts:
        written = orjson.dumps(list(texts))[2:-2].replace(b'","', after + _CUT + before)
        found[:-1] = (before + written + after).split(_CUT)
    found[-1] = none
    return found


#: A declared relation's list of runs and the key after it.
_NO_RUN = b'[],"components":'


def _run_parts(relations: KeyedRelations) -> Parts:
    """Each run code's `["<id>"],"components":`, by code, the last place (NONE) a declared
    relation's: kept by run number when the caller has them (`listed_runs`)."""
    if relations.listed_runs is None:
        return json_parts(relations.run_ids, b'["', b'"],"components":', _NO_RUN)
    found = np.empty(len(relations.listed_runs) + 1, dtype=np.object_)
    found[:-1] = relations.listed_runs
    found[-1] = _NO_RUN
    return found
