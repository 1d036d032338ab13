"""The `data` and `programs` of a lineage answer written as JSON text at once (design §6).

The downstream walk at levels=10 names about 1,000 datasets and 760 programs; a dictionary of
dictionaries for each, sorted and then written by orjson, cost about as much as writing its
2,028 collapsed relations. An entity's key and entry text follow from its kind, namespace and
name alone, which never change for an id (`graph_index.names`), so each is written once and
kept (the most recent `_KEPT`), and an answer sorts its keys and joins their texts.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import orjson

from upstream.model.json_text import Written
from upstream.model.keys import EntityKind, entity_key

#: How many entities' texts a process keeps: a few times the nodes of the largest answers.
_KEPT = 65_536
_TEMPORARY = b',"temporary":true}'


@lru_cache(maxsize=_KEPT)
def node_text(kind: EntityKind, namespace: str, name: str) -> tuple[str, bytes]:
    """The key of an entity and its member in the answer's object, left open:
    `"<key>":{"entityId":{"type":...,"namespace":...,"name":...}` (the caller closes it,
    with `,"temporary":true` first for a temporary dataset)."""
    key = entity_key(kind, namespace, name)
    entity = {"type": kind, "namespace": namespace, "name": name}
    return key, orjson.dumps(key) + b':{"entityId":' + orjson.dumps(entity)


def node_entries(members: Iterable[tuple[str, bytes, bool]]) -> Written:
    """The object of `members` (key, open text as `node_text` gives it, temporary), sorted
    by key, as orjson writes `dict(sorted(...))` of their entries."""
    closed = {key: text + (_TEMPORARY if temporary else b"}") for key, text, temporary in members}
    ordered = [closed[key] for key in sorted(closed)]
    return Written(b"{" + b",".join(ordered) + b"}", len(ordered))
