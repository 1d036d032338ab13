"""Owners and tags that producers state in facets (design §3.3): OpenLineage's `ownership`
(job and dataset) and `tags` (dataset, job and run) facets, read from the facets an entity
keeps. Pure functions, so the API, the CLI and the Marquez answers read them one way.

A facet tag is a key and a value; it is shown as a tag name next to the tags people set
through the API: `key` when the value only says the tag applies (empty or `true`, as in
`pii: true`), else `key:value` (`env:production`). A dataset tag naming a `field` tags that
field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from upstream.model.facets import OwnershipFacet, TagsFacet

OWNERSHIP_FACET = "ownership"
TAGS_FACET = "tags"
#: Tag values that only say the tag applies; such a tag is shown by its key alone.
_PRESENCE_VALUES = frozenset({"", "true"})


@dataclass(frozen=True, order=True)
class EntityOwner:
    """One owner of a dataset or job: a name (often a URN such as `team:data-eng`) and the
    kind of ownership, when the producer says (`MAINTAINER`, `TECHNICAL_OWNER`…)."""

    name: str
    type: str | None = None


@dataclass(frozen=True, order=True)
class FacetTag:
    """A tag from a `tags` facet, as a tag name; `field` when it tags one field."""

    name: str
    field: str | None = None


def tag_name(key: str, value: str) -> str:
    """The name a key/value tag is shown under (see the module docstring)."""
    if value.strip().lower() in _PRESENCE_VALUES:
        return key
    return f"{key}:{value}"


def owners_in(facets: Mapping[str, Any]) -> list[EntityOwner]:
    """The owners an entity's `ownership` facet names, sorted, each once. A facet stored
    before it was checked and found malformed names none (it is kept as sent)."""
    stated = facets.get(OWNERSHIP_FACET)
    if not stated:  # most entities have none: no model to check
        return []
    try:
        facet = OwnershipFacet.model_validate(stated)
    except ValidationError:
        return []
    return sorted({EntityOwner(o.name, o.type) for o in facet.owners})


def tags_in(facets: Mapping[str, Any]) -> list[FacetTag]:
    """The tags an entity's `tags` facet names, sorted, each once (lenient as `owners_in`)."""
    stated = facets.get(TAGS_FACET)
    if not stated:
        return []
    try:
        facet = TagsFacet.model_validate(stated)
    except ValidationError:
        return []
    return sorted({FacetTag(tag_name(t.key, t.value), t.field) for t in facet.tags})


def own_and_facet_tags(api_tags: list[str], facets: Mapping[str, Any]) -> list[str]:
    """The entity's own tags: those set through the API and those of its `tags` facet that
    name no field, sorted, each once."""
    return sorted({*api_tags, *(t.name for t in tags_in(facets) if t.field is None)})


def field_facet_tags(facets: Mapping[str, Any]) -> dict[str, list[str]]:
    """The tags a dataset's `tags` facet puts on its fields, by field name."""
    by_field: dict[str, list[str]] = {}
    for tag in tags_in(facets):
        if tag.field is not None:
            by_field.setdefault(tag.field, []).append(tag.name)
    return by_field


def owners_of(facets: Mapping[str, Any]) -> list[dict[str, str | None]]:
    """`owners_in` as JSON: `[{"name", "type"}]`."""
    return [{"name": o.name, "type": o.type} for o in owners_in(facets)]
