"""Deterministic identities for lineage entities.

Every id is a UUIDv5 of the entity's natural key, so any process computes the same id for the
same dataset, job or relation without asking the database (stateless API servers, batch writes
without lookups). The NUL separator cannot occur in OpenLineage names, so keys never collide.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from functools import cached_property, lru_cache

_ROOT = uuid.UUID("6f1f5a52-3c1e-4a5e-9c39-2b7d8d6e7a10")


@lru_cache(maxsize=1 << 16)
def stable_id(kind: str, *parts: object) -> uuid.UUID:
    """The UUIDv5 of `kind` and `parts`; None parts hash as empty strings. Memoised: a batch
    names the same datasets, jobs and runs many times over, and hashing dominated writing."""
    key = "\x00".join([kind, *("" if p is None else str(p) for p in parts)])
    return uuid.uuid5(_ROOT, key)


@dataclass(frozen=True, order=True)
class DatasetRef:
    """A dataset by its OpenLineage identity."""

    namespace: str
    name: str

    @cached_property
    def id(self) -> uuid.UUID:
        """Kept on the reference: a batch asks a dataset's id hundreds of thousands of times."""
        return stable_id("dataset", self.namespace, self.name)


@dataclass(frozen=True, order=True)
class JobRef:
    """A job (CDAP's program) by its OpenLineage identity."""

    namespace: str
    name: str

    @cached_property
    def id(self) -> uuid.UUID:
        return stable_id("job", self.namespace, self.name)


def namespace_id(name: str) -> uuid.UUID:
    """The id of a namespace."""
    return stable_id("namespace", name)
