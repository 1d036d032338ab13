"""Parts of events recognised by their bytes before they are read again (design §3.1).

Real producers repeat themselves: a COMPLETE resends its START's inputs and outputs with their
facets, and the tenth run of a job reads and writes the same datasets, with the same schema
and column lineage, as the first. Reading those facets (validating them, building the fields
of a schema, turning column lineage into edges) was most of the work of translating an event.

The parts read here are a dataset's identity with its `facets` (everything an input or
output says of the dataset itself: schema, symlinks, type, owners, containers), a job's
`facets` (its type, owners and tags), and, within them, the facets whose reading costs most:
a dataset's `schema`, an output's `columnLineage` and a job's `lineage`. A part's key is its
exact content (its compact JSON text, with the dataset it describes for a dataset's facets
and column lineage), so a part changed in one byte is another part; what changes with every
run (an input's or output's statistics, the run's facets) sits beside the parts, outside
their keys. A dataset or job part seen before costs one text and one lookup: none of its
facets is validated again, and the keys of the parts within it are kept with it.

What the translation reads from a part that does not depend on the event it came in is kept
in a bounded least-recently-used cache of the process, and a part seen before is not read
again: nor is the row content a job's or dataset's part makes hashed again (the writer
leaves a stored row that holds the hash alone, `store.writer._merge`). Only a part read
without a problem is kept: a malformed part is read, and refused with
its own path, every time it is sent; the envelope, the run's facets and the inputs' and
outputs' own facets (`inputFacets`, `outputFacets`) are checked per event.

Edges read from a part (an output's `columnLineage`, a job's `lineage` facet's edges into one
dataset when it names no `JOB`, and likewise a `sql` facet's edges into one output,
`ingest.sql_lineage`) keep the part they came from (`EdgeFact.part`): the lineage set an
owner's edges make when they are exactly one part's is made (grouped, ordered, hashed) once
per part and taken from it by every other run that sends the part
(`upstream.model.lineage_sets.EdgePart`).

The cache is Python's dict keyed by the part's bytes (a fast hash, then an equality check of
the bytes, so two parts never share an entry by a collision); `parts_read` counts the parts
read, the cache's misses.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from upstream.ingest.context import Owner
from upstream.ingest.lineage_facet import LineageFacetReading
from upstream.model.facts import DatasetNode, EdgeFact
from upstream.model.identity import DatasetRef
from upstream.model.json_text import dumps
from upstream.model.lineage_sets import EdgePart

#: Parts kept per kind: a few thousand distinct facets of a few kB each.
CAPACITY = 4096

V = TypeVar("V")


@dataclass(frozen=True)
class EdgeShape:
    """An edge without its owner: what `Owner.edge` completes for each event."""

    source: DatasetNode
    target: DatasetNode
    transformations: list[dict[str, Any]]
    implied: bool = False


@dataclass(frozen=True)
class DatasetReading:
    """What a dataset's `facets` say whatever event sends them. `temporary`: what its
    `datasetType` facet (and our own temporary facet) say, when it has a `datasetType`;
    `column_lineage_key`: the key of its `columnLineage` part, read only for an output."""

    description: str | None
    fields: tuple[dict[str, Any], ...] | None
    symlinks: tuple[tuple[str, str, str | None], ...]
    source_name: str | None
    temporary: bool | None
    column_lineage_key: bytes | None
    #: The hash of the row content its facts make (`merge_rules.content_digest`).
    content_digest: str


@dataclass(frozen=True)
class JobReading:
    """What a job's `facets` say whatever event sends them (its `jobType`, checked owners and
    tags); `lineage_key`: the key of its `lineage` part, read where the event reads it."""

    description: str | None
    job_type: str | None
    integration: str | None
    processing_type: str | None
    content_mode: str | None
    lineage_key: bytes | None
    #: The hash of the row content its facts make (`merge_rules.content_digest`).
    content_digest: str


@dataclass(frozen=True)
class ColumnLineageReading:
    """An output's `columnLineage` facet as edges without an owner, and the datasets read;
    `part`: the same edges as a lineage set holds them, whose set is made once."""

    edges: tuple[EdgeShape, ...]
    sources: frozenset[DatasetRef]
    part: EdgePart


class PartCache(Generic[V]):
    """A bounded LRU of what was read from each part, keyed by the part's bytes."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[bytes, V] = OrderedDict()
        self._lock = threading.Lock()
        self.parts_read = 0

    def read(self, key: bytes, reader: Callable[..., V], *args: Any) -> V:
        """What `reader(*args)` reads from the part `key`, read only when the part is new."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        value = reader(*args)  # raises for a malformed part: nothing is kept
        with self._lock:
            self.parts_read += 1
            self._entries[key] = value
            if len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.parts_read = 0


#: Datasets' identities with their `facets`, as what the dataset's facts take from them.
DATASET_PARTS: PartCache[DatasetReading] = PartCache()
#: Jobs' `facets`, as what the job's facts take from them.
JOB_PARTS: PartCache[JobReading] = PartCache()
#: Jobs' `lineage` facets, as the facet and the edges it gives any owner.
LINEAGE_FACET_PARTS: PartCache[LineageFacetReading] = PartCache()
#: `schema` facets, as the fields they list.
SCHEMA_PARTS: PartCache[tuple[dict[str, Any], ...]] = PartCache()
#: Outputs' `columnLineage` facets, as edges without their owner.
COLUMN_LINEAGE_PARTS: PartCache[ColumnLineageReading] = PartCache()


def part_key(*content: Any) -> bytes:
    """The key of a part: its content (and what it describes), as compact JSON text."""
    return dumps(content).encode()


def owned_edges(reading: ColumnLineageReading, owner: Owner) -> list[EdgeFact]:
    """The edges of `reading`, owned by the event's `owner`."""
    return [
        owner.edge(
            "column_lineage",
            e.source,
            e.target,
            e.transformations,
            implied=e.implied,
            part=reading.part,
        )
        for e in reading.edges
    ]
