"""`collapse` (design §4.2): merge relations that differ only in the collapsed dimensions."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any, Literal, NamedTuple

from upstream.query.answers import RelationEntry

Dimension = Literal["access", "run", "component"]
DIMENSIONS: tuple[Dimension, ...] = ("access", "component", "run")


class KeyedRelation(NamedTuple):
    """A relation as the response names it: `dataset.<ns>.<name>`, `job.<ns>.<name>` or
    `workflow.<ns>.<name>`, a run id (None: declared) and a component ("" when unnamed).
    A named tuple: one is made per relation of an answer, thousands per query."""

    data: str
    program: str
    access: str
    run: str | None
    component: str


def collapse(
    relations: Iterable[KeyedRelation],
    dimensions: Collection[Dimension],
    run_order: Callable[[str], Any],
) -> list[RelationEntry]:
    """Group `relations` by dataset, program and every dimension not collapsed, unioning the
    accesses, runs and components of each group. A group never spans two datasets or two
    programs. Lists are sorted (runs by `run_order`) and so is the result, so the same
    relations always render the same bytes."""
    groups: dict[tuple[str, ...], tuple[set[str], set[str], set[str]]] = {}
    for rel in relations:
        key = (
            rel.data,
            rel.program,
            "" if "access" in dimensions else rel.access,
            "" if "run" in dimensions else rel.run or "",
            "" if "component" in dimensions else rel.component,
        )
        accesses, runs, components = groups.setdefault(key, (set(), set(), set()))
        accesses.add(rel.access)
        if rel.run is not None:
            runs.add(rel.run)
        if rel.component:
            components.add(rel.component)
    rendered: list[RelationEntry] = [
        {
            "data": key[0],
            "program": key[1],
            "accesses": _sorted(accesses),
            "runs": _sorted(runs, run_order),
            "components": _sorted(components),
        }
        for key, (accesses, runs, components) in groups.items()
    ]
    rendered.sort(
        key=lambda r: (r["data"], r["program"], r["accesses"], r["runs"], r["components"])
    )
    return rendered


def _sorted(values: set[str], key: Callable[[str], Any] | None = None) -> list[str]:
    """`sorted`, without its cost for the single value an uncollapsed relation holds in
    each list: an answer has tens of thousands of them."""
    return list(values) if len(values) < 2 else sorted(values, key=key)
