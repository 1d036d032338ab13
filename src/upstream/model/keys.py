"""The keys that name datasets, jobs and workflows in a dataset-lineage answer (design §4.2).

A key is `<kind>.<ns>.<name>`. Names and namespaces both hold dots (`postgres://db:5432`,
`sales.orders`), so a plain join would give (`a.b`, `c`) and (`a`, `b.c`) the same key and
collapse would merge two datasets. The namespace is therefore escaped (`%` as `%25`, `.` as
`%2E`) and the name kept verbatim after the first unescaped dot: the first two dots of a key
always end the kind and the namespace.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

EntityKind = Literal["dataset", "job", "workflow"]


def entity_key(kind: EntityKind, namespace: str, name: str) -> str:
    """The key of an entity: kind, escaped namespace, verbatim name."""
    return f"{kind}.{escape_namespace(namespace)}.{name}"


@lru_cache(maxsize=4096)
def escape_namespace(namespace: str) -> str:
    """The namespace as a key holds it; kept for the few namespaces a store has, as an
    answer names thousands of datasets and jobs in them."""
    return namespace.replace("%", "%25").replace(".", "%2E")


def parse_entity_key(key: str) -> tuple[str, str, str]:
    """(kind, namespace, name) of a key made by `entity_key`."""
    kind, escaped, name = key.split(".", 2)
    return kind, escaped.replace("%2E", ".").replace("%25", "%"), name
