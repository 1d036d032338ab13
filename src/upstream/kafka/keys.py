"""The Kafka message key of an OpenLineage event, as OpenLineage's own Kafka transport gives
it, so events a publishing front sends land where the producers' own would: a run's events
keep their order, and so do a parent's and its children's.

A DatasetEvent is keyed `dataset:<namespace>/<name>`, a JobEvent `job:<namespace>/<name>`,
and a RunEvent `run:<namespace>/<name>` of its root job (the parent facet's `root.job`),
else of its parent job, else of its own job.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def message_key(event: Mapping[str, Any]) -> str:
    """The key of one validated event (a JSON object)."""
    dataset = event.get("dataset")
    if isinstance(dataset, Mapping) and "run" not in event:
        return f"dataset:{_named(dataset)}"
    job = event.get("job")
    if "run" not in event and isinstance(job, Mapping):
        return f"job:{_named(job)}"
    return f"run:{_named(_ordering_job(event))}"


def _ordering_job(event: Mapping[str, Any]) -> Mapping[str, Any]:
    """The root job, else the parent job, else the event's own job."""
    own: Mapping[str, Any] = event.get("job") or {}
    run = event.get("run")
    facets = run.get("facets") if isinstance(run, Mapping) else None
    parent = facets.get("parent") if isinstance(facets, Mapping) else None
    if not isinstance(parent, Mapping):
        return own
    root = parent.get("root")
    for candidate in (root.get("job") if isinstance(root, Mapping) else None, parent.get("job")):
        if isinstance(candidate, Mapping) and candidate.get("namespace") and candidate.get("name"):
            return candidate
    return own


def _named(entity: Mapping[str, Any]) -> str:
    return f"{entity.get('namespace')}/{entity.get('name')}"
