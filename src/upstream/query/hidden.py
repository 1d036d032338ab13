"""Hiding what a reader may not see in an answer already made (design §5): a lineage answer
of a walk that does not consult `VisibleNodes` itself (the rolled-up walk), and the
references of Marquez's documents.

The rule is the walks' own: nothing hidden is shown, and nothing is reached through it. So
after the relations with a hidden end are dropped, only what is still connected to the node
asked about is kept; the answer counts the hidden nodes and relations it stopped at, never
naming them.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TypeVar, cast

from upstream.model.access import Visibility
from upstream.query.answers import LineageAnswer, RelationEntry

T = TypeVar("T")


def hidden_from(answer: LineageAnswer, visibility: Visibility, seed: str) -> LineageAnswer:
    """`answer` (a lineage answer around the node keyed `seed`) without the datasets and
    programs `visibility` does not show, nor what only they connected to `seed`, with
    `hiddenNodes` and `hiddenRelations` said."""
    shown = {
        key
        for entries in (answer["data"], answer["programs"])
        for key, entry in entries.items()
        if visibility.shows(entry["entityId"]["namespace"])
    }
    neighbours: dict[str, set[str]] = defaultdict(set)
    for relation in answer["relations"]:
        if relation["data"] in shown and relation["program"] in shown:
            neighbours[relation["data"]].add(relation["program"])
            neighbours[relation["program"]].add(relation["data"])
    reached = _reached(seed, neighbours)
    kept: list[RelationEntry] = []
    hidden_nodes: set[str] = set()
    hidden_relations = 0
    for relation in answer["relations"]:
        ends = (relation["data"], relation["program"])
        if all(end in reached for end in ends):
            kept.append(relation)
        elif any(end in reached for end in ends) and not all(end in shown for end in ends):
            hidden_relations += 1
            hidden_nodes.update(end for end in ends if end not in shown)
    filtered: LineageAnswer = {
        **answer,
        "relations": kept,
        "data": {k: v for k, v in answer["data"].items() if k in reached},
        "programs": {k: v for k, v in answer["programs"].items() if k in reached},
        "hiddenNodes": len(hidden_nodes),
        "hiddenRelations": hidden_relations,
    }
    if "jobLinks" in answer:
        filtered["jobLinks"] = [
            link
            for link in answer["jobLinks"]
            if link["source"] in reached and link["target"] in reached
        ]
    return filtered


def _reached(seed: str, neighbours: dict[str, set[str]]) -> set[str]:
    """Every node connected to `seed` (included) through `neighbours`."""
    reached = {seed}
    frontier = [seed]
    while frontier:
        node = frontier.pop()
        for other in neighbours[node] - reached:
            reached.add(other)
            frontier.append(other)
    return reached


def without_hidden(doc: T, visibility: Visibility) -> T:
    """`doc` (a Marquez-shaped answer) without the list items and the members that refer to
    an entity in a namespace `visibility` does not show: an item or member whose own
    `namespace`, or that of one of its objects (`id`, `datasetVersionId`, `job`), is hidden.
    Lists and searches already leave hidden entities out; this takes them out of what a
    shown one refers to (a job's inputs, a run's dataset versions and `parent` facet, a
    column's input fields, a dataset's symlinks)."""
    if visibility.everything:
        return doc
    return cast(T, _scrubbed(doc, visibility))


def _scrubbed(value: object, visibility: Visibility) -> object:
    if isinstance(value, list):
        return [_scrubbed(v, visibility) for v in value if not _refers_to_hidden(v, visibility)]
    if isinstance(value, dict):
        return {
            key: _scrubbed(v, visibility)
            for key, v in value.items()
            if not _refers_to_hidden(v, visibility)
        }
    return value


def _refers_to_hidden(item: object, visibility: Visibility) -> bool:
    if not isinstance(item, dict):
        return False
    found = [item, *(v for v in item.values() if isinstance(v, dict))]
    return any(
        isinstance(ns := entry.get("namespace"), str) and not visibility.shows(ns)
        for entry in found
    )
