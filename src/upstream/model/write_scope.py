"""What a token limited to some namespaces may post (design §5), checked on the documents
before anything of them is translated or stored.

- An event needs `write` on its job's namespace (a RunEvent or JobEvent), or on its
  dataset's namespace (a DatasetEvent, which says nothing but that dataset's facets and
  declared lineage); otherwise the whole post is Forbidden, naming the namespace.
- The datasets a run read and wrote are recorded whatever their namespace (lineage crosses
  domains), but the facets of one in a namespace the token may not write are dropped, but
  for those that state lineage (`LINEAGE_FACETS`): they never merge into the stored
  dataset. The event is kept as it was stored, so a rebuild derives the same.

A document that is not an event (not an object, no job) is left for validation to refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upstream.model.access import Access
from upstream.model.facets import COMPONENT_FACET, FIELD_OPERATIONS_FACET, TEMPORARY_FACET

#: Dataset facets that state what the run did rather than describe the dataset: kept from
#: any token that may write the job.
LINEAGE_FACETS = frozenset(
    {"columnLineage", "lineage", FIELD_OPERATIONS_FACET, COMPONENT_FACET, TEMPORARY_FACET}
)


def writable_events(documents: Sequence[Any], access: Access) -> tuple[list[Any], bool]:
    """The documents as `access` may store them, and whether any was changed; Forbidden
    (from `Access.require_write`) for the first event whose own namespace it may not write."""
    if access.write.everything:
        return list(documents), False
    kept: list[Any] = []
    changed = False
    for document in documents:
        scoped = _writable(document, access)
        changed |= scoped is not document
        kept.append(scoped)
    return kept, changed


def _namespace_of(entity: Any) -> str | None:
    namespace = entity.get("namespace") if isinstance(entity, dict) else None
    return namespace if isinstance(namespace, str) else None


def _writable(document: Any, access: Access) -> Any:
    if not isinstance(document, dict):
        return document
    own = _namespace_of(document.get("job"))
    if own is None and "job" not in document:
        own = _namespace_of(document.get("dataset"))
    if own is not None:
        access.require_write(own)
    changed: dict[str, Any] = {}
    for side in ("inputs", "outputs"):
        datasets = document.get(side)
        if isinstance(datasets, list):
            scoped = [_without_foreign_facets(d, access) for d in datasets]
            if any(a is not b for a, b in zip(scoped, datasets, strict=True)):
                changed[side] = scoped
    return {**document, **changed} if changed else document


def _without_foreign_facets(dataset: Any, access: Access) -> Any:
    """`dataset` without the facets `access` may not merge into it."""
    namespace = _namespace_of(dataset)
    facets = dataset.get("facets") if isinstance(dataset, dict) else None
    if namespace is None or not isinstance(facets, dict) or access.write.shows(namespace):
        return dataset
    kept = {name: facet for name, facet in facets.items() if name in LINEAGE_FACETS}
    return dataset if len(kept) == len(facets) else {**dataset, "facets": kept}
