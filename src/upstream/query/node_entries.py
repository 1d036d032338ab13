"""The `data` and `programs` of a lineage answer written as JSON text at once (design §6).

The downstream walk at levels=10 names about 1,000 datasets and 760 programs; a dictionary of
dictionaries for each, sorted and then written by orjson, cost about as much as writing its
2,028 collapsed relations, and so did naming them id by id. An entity's key and entry text
follow from its kind, namespace and name alone, which never change for an id
(`graph_index.names`), so each is written the first time an answer names it and kept by its
number for the life of the process (`query.id_parts.kept`); an answer takes them by number,
sorts their keys and joins their texts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

import numpy as np
import numpy.typing as npt
import orjson

from upstream.model.json_text import Written
from upstream.model.keys import EntityKind, entity_key
from upstream.query.graph_index.names import Name
from upstream.query.graph_index.numbering import Numbering
from upstream.query.id_parts import kept
from upstream.query.listed_entries import json_parts

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]
_TEMPORARY = b',"temporary":true}'


def node_text(kind: EntityKind, namespace: str, name: str) -> tuple[str, bytes]:
    """The key of an entity and its member in the answer's object:
    `"<key>":{"entityId":{"type":...,"namespace":...,"name":...}}`."""
    key = entity_key(kind, namespace, name)
    entity = {"type": kind, "namespace": namespace, "name": name}
    return key, orjson.dumps(key) + b':{"entityId":' + orjson.dumps(entity) + b"}"


def node_parts(
    numbering: Numbering,
    kind: EntityKind,
    numbers: Ints,
    names: Callable[[Collection[str]], Mapping[str, Name]],
) -> tuple[Parts, Parts]:
    """The key and member text (`node_text`) of the entity of `kind` numbered each of
    `numbers` (which `numbering` holds, no NONE); `names` names the ids (their text) no
    answer has named yet. Every one must have a row."""
    texts = numbering.texts

    def made(part: int) -> Callable[[list[int]], list[object]]:
        def of(missing: list[int]) -> list[object]:
            ids = [texts[n] for n in missing]
            named = names(ids)
            return [node_text(kind, *named[i])[part] for i in ids]

        return of

    return kept(numbering, f"{kind} key", numbers, made(0)), kept(
        numbering, f"{kind} entry", numbers, made(1)
    )


def temporary_text(member: bytes) -> bytes:
    """A dataset's member (`node_text`) marked temporary."""
    return member[:-1] + _TEMPORARY


def head_parts(
    numbering: Numbering,
    kind: EntityKind,
    numbers: Ints,
    names: Callable[[Collection[str]], Mapping[str, Name]],
    around: tuple[bytes, bytes],
) -> Parts:
    """The key of the entity of `kind` numbered each of `numbers` as a JSON string between
    `around` (its quotes left out: `query.listed_entries.json_parts`), kept by number."""

    def made(missing: list[int]) -> Parts:
        keys, _ = node_parts(numbering, kind, np.array(missing, dtype=np.int64), names)
        written: Parts = json_parts(keys.tolist(), *around)[:-1]
        return written

    return kept(numbering, f"{kind} key {around!r}", numbers, made)


def node_entries(
    keys: Sequence[str], members: Sequence[bytes], ranks: Ints | None = None
) -> Written:
    """The object of `members` (texts as `node_text` gives them) by their distinct `keys`,
    sorted by key, as orjson writes `dict(sorted(...))` of their entries; `ranks`, when
    given, is each key's place among them sorted (`relation_table.text_ranks`)."""
    if ranks is None:
        order = sorted(range(len(keys)), key=keys.__getitem__)
    else:
        order = np.argsort(ranks).tolist()
    ordered = [members[i] for i in order]
    return Written(b"{" + b",".join(ordered) + b"}", len(ordered))
