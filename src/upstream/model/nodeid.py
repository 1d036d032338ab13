"""Marquez node ids: `dataset:<ns>:<name>`, `datasetField:<ns>:<name>:<field>`, `job:<ns>:<name>`.

The format joins its parts with `:`, which OpenLineage namespaces themselves contain
(`postgres://db.example.com:5432`), so an id cannot be split by syntax alone (design §4.4).
`parse_node_id` therefore splits against the namespaces the store knows and returns every
reading that fits, best first; the caller keeps the first that names a stored entity. An id may
end in `#<uuid>`, the version the marquez-python client appends.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from upstream.model.errors import InvalidParameter, shown

NodeKind = Literal["dataset", "datasetField", "job"]
KINDS: tuple[NodeKind, ...] = ("datasetField", "dataset", "job")
_VERSION = re.compile(
    r"#([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$"
)


@dataclass(frozen=True, order=True)
class NodeId:
    """One reading of a node id."""

    kind: NodeKind
    namespace: str
    name: str
    field: str | None = None
    version: uuid.UUID | None = None

    def render(self) -> str:
        """The id as Marquez writes it (without the version)."""
        if self.kind == "datasetField":
            return field_node_id(self.namespace, self.name, self.field or "")
        return f"{self.kind}:{self.namespace}:{self.name}"


def dataset_node_id(namespace: str, name: str) -> str:
    return f"dataset:{namespace}:{name}"


def job_node_id(namespace: str, name: str) -> str:
    return f"job:{namespace}:{name}"


def field_node_id(namespace: str, name: str, field: str) -> str:
    return f"datasetField:{namespace}:{name}:{field}"


def parse_node_id(value: str, namespaces: Iterable[str]) -> list[NodeId]:
    """Every reading of `value` whose namespace is one of `namespaces`, best first.

    Longer namespaces come first (`a:b` before `a` for `dataset:a:b:c`); for a field id the
    longer dataset name comes first, since field names rarely hold `:`. A trailing `#<uuid>` is
    read as a version first and as part of the name after. An empty list means the id is well
    formed but names no known namespace. Raises InvalidParameter (at `nodeId`) when the id is
    malformed: no known kind, or too few parts.
    """
    kind, bodies = _split_kind(value)
    known = sorted(set(namespaces), key=lambda ns: (-len(ns), ns))
    readings: list[NodeId] = []
    for body, version in bodies:
        for namespace in known:
            if not namespace or not body.startswith(namespace + ":"):
                continue
            remainder = body[len(namespace) + 1 :]
            if kind != "datasetField":
                if remainder:
                    readings.append(NodeId(kind, namespace, remainder, None, version))
                continue
            for cut in _colons_right_to_left(remainder):
                name, field = remainder[:cut], remainder[cut + 1 :]
                if name and field:
                    readings.append(NodeId(kind, namespace, name, field, version))
    return readings


def possible_namespaces(value: str) -> list[str]:
    """Every prefix of the id's body that ends before a `:`: the namespaces worth looking up,
    so resolving an id never needs the list of all namespaces."""
    _, bodies = _split_kind(value)
    prefixes = {body[:cut] for body, _ in bodies for cut in _colons_right_to_left(body) if cut}
    return sorted(prefixes, key=lambda ns: (-len(ns), ns))


def _split_kind(value: str) -> tuple[NodeKind, list[tuple[str, uuid.UUID | None]]]:
    """The kind, and the body read with and without a version suffix (well-formed ones)."""
    if not value:
        raise InvalidParameter.at("nodeId", "must not be empty")
    kind = next((k for k in KINDS if value.startswith(k + ":")), None)
    if kind is None:
        raise InvalidParameter.at(
            "nodeId", f"{shown(value)} must start with 'dataset:', 'datasetField:' or 'job:'"
        )
    rest = value[len(kind) + 1 :]
    bodies: list[tuple[str, uuid.UUID | None]] = []
    found = _VERSION.search(rest)
    if found:
        bodies.append((rest[: found.start()], uuid.UUID(found.group(1))))
    bodies.append((rest, None))
    needed = 2 if kind == "datasetField" else 1
    # A namespace may itself begin with `:`, so only a body whose every `:` is its first
    # character (an empty namespace) is malformed.
    bodies = [(b, v) for b, v in bodies if b.count(":") >= needed and ":" in b[1:]]
    if not bodies:
        shape = "<namespace>:<name>:<field>" if kind == "datasetField" else "<namespace>:<name>"
        raise InvalidParameter.at("nodeId", f"{shown(value)} must have the form {kind}:{shape}")
    return kind, bodies


def _colons_right_to_left(text: str) -> list[int]:
    return [i for i in range(len(text) - 1, -1, -1) if text[i] == ":"]
