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
    run_order: Callable[[str], Any] | None,
) -> list[RelationEntry]:
    """Group `relations` by dataset, program and every dimension not collapsed, unioning the
    accesses, runs and components of each group. A group never spans two datasets or two
    programs. Lists are sorted (runs by `run_order`, by id when it is None) and so is the
    result, so the same relations always render the same bytes."""
    if not dimensions:
        return _listed(relations)
    by_access, by_run, by_component = (d in dimensions for d in ("access", "run", "component"))
    groups: dict[tuple[str, ...], list[KeyedRelation]] = {}
    for rel in relations:
        key = (
            rel.data,
            rel.program,
            "" if by_access else rel.access,
            "" if by_run else rel.run or "",
            "" if by_component else rel.component,
        )
        group = groups.get(key)
        if group is None:
            groups[key] = [rel]
        else:
            group.append(rel)
    rendered = [_rendered(key[0], key[1], group, run_order) for key, group in groups.items()]
    rendered.sort(
        key=lambda r: (r["data"], r["program"], r["accesses"], r["runs"], r["components"])
    )
    return rendered


#: A relation as `listed` takes it: (data, program, access, run, component), "" for no run
#: and for no component.
RelationRow = tuple[str, str, str, str, str]


def _listed(relations: Iterable[KeyedRelation]) -> list[RelationEntry]:
    """`collapse` with no dimension collapsed."""
    return listed((r.data, r.program, r.access, r.run or "", r.component) for r in relations)


def listed(rows: Iterable[RelationRow]) -> list[RelationEntry]:
    """Each distinct relation of `rows` as its own group, in the order `collapse` sorts
    groups by, which for one relation each is the order of its fields (a missing run or
    component sorts first, as an empty list does). Plain tuples, which sort without a key
    function: an answer lists tens of thousands."""
    return [
        {
            "data": data,
            "program": program,
            "accesses": [access],
            "runs": [run] if run else [],
            "components": [component] if component else [],
        }
        for data, program, access, run, component in sorted(set(rows))
    ]


def _rendered(
    data: str, program: str, group: list[KeyedRelation], run_order: Callable[[str], Any] | None
) -> RelationEntry:
    """One group as the answer shows it. Most groups of an answer with every run listed
    hold one relation, which needs no set and no sort."""
    if len(group) == 1:
        rel = group[0]
        accesses, runs = [rel.access], [rel.run] if rel.run is not None else []
        components = [rel.component] if rel.component else []
    else:
        accesses = _sorted({r.access for r in group})
        runs = _sorted({r.run for r in group if r.run is not None}, run_order)
        components = _sorted({r.component for r in group if r.component})
    return {
        "data": data,
        "program": program,
        "accesses": accesses,
        "runs": runs,
        "components": components,
    }


def _sorted(values: set[str], key: Callable[[str], Any] | None = None) -> list[str]:
    """`sorted`, without its cost for the single value an uncollapsed relation holds in
    each list: an answer has tens of thousands of them."""
    return list(values) if len(values) < 2 else sorted(values, key=key)
