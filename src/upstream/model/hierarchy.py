"""Where a dataset sits in the estate (design §4.7): its containers, outermost first, read from
what the dataset keeps. Pure functions, so the map and the dataset pages agree.

The first container is always the namespace (the server, bucket or cluster). Below it come the
levels of the dataset's OpenLineage `hierarchy` facet but the last, which is the dataset
itself (DATABASE my_db → SCHEMA my_schema → TABLE orders gives `my_db`, `my_schema`); without
the facet, the parts of its dotted name but the last (`analytics.public.orders` gives
`analytics`, `public`). A name without dots has only its namespace as container.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from upstream.model.facets import HierarchyFacet

HIERARCHY_FACET = "hierarchy"


def containers(namespace: str, name: str, facets: Mapping[str, Any]) -> tuple[str, ...]:
    """The dataset's containers, outermost first (see the module docstring). A facet stored
    before it was checked and found malformed counts as absent."""
    raw = facets.get(HIERARCHY_FACET)
    if raw is not None:
        try:
            levels = HierarchyFacet.model_validate(raw).hierarchy
        except ValidationError:
            levels = None
        if levels:
            return (namespace, *(level.name for level in levels[:-1]))
    return (namespace, *name.split(".")[:-1])


def group_of(path: tuple[str, ...], level: int) -> tuple[str, ...]:
    """The container a dataset is grouped under at `level` (1: its namespace): the first
    `level` containers, or all of them for a dataset not that deep."""
    return path[:level]


def group_key(path: tuple[str, ...]) -> str:
    """A group's key: its containers joined by `/`, each with `%` and `/` escaped, so two
    different paths never share a key and a key can be sent back as `within`."""
    return "/".join(part.replace("%", "%25").replace("/", "%2F") for part in path)


def parse_group_key(key: str) -> tuple[str, ...]:
    """The containers of a key made by `group_key`."""
    return tuple(part.replace("%2F", "/").replace("%25", "%") for part in key.split("/"))
