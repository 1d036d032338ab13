"""The body of a notification (design §4.8; its schema is `WatchNotification` in the
OpenAPI document): what changed in a watched radius, in the dataset-lineage answer's shapes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from upstream.model.watch import FieldEdgeKey, RadiusChange, SubscriptionSpec, Watched
from upstream.query.answers import EntityId, RelationEntry


@dataclass(frozen=True)
class Links:
    """Where the web UI is, for links in notifications: the server's public address, or ""
    for links relative to it."""

    base: str = ""

    def watched(self, watch: Watched) -> str | None:
        """The UI page of what a subscription watches; None for a namespace (no page)."""
        if watch.kind == "dataset":
            return self._view("dataset", {"ns": watch.namespace, "name": watch.name})
        if watch.kind == "field":
            return self._view(
                "fields", {"ns": watch.namespace, "name": watch.name, "field": watch.field}
            )
        if watch.kind == "tag":
            return self._view("tag", {"tag": watch.tag})
        return None

    def _view(self, view: str, params: dict[str, str]) -> str:
        return f"{self.base.rstrip('/')}/#/{view}?{urlencode(params)}"


def notification_body(
    *,
    notification_id: uuid.UUID,
    subscription: uuid.UUID,
    spec: SubscriptionSpec,
    kinds: list[str],
    at: datetime,
    position: int,
    added: list[RelationEntry],
    removed: list[RelationEntry],
    data: dict[str, Any],
    programs: dict[str, Any],
    change: RadiusChange,
    named: dict[str, tuple[str, EntityId]],
    links: Links,
    edge_runs: Mapping[FieldEdgeKey, list[str]],
) -> dict[str, Any]:
    """`{"id", "subscription", "change", "changes", "at", "position", "watch", "added",
    "removed", "deleted", "revived", "failedRuns", "fieldEdges", "schemaBreaks", "data",
    "programs", "links"}`: `change` is the most significant of `changes`, the kinds this
    notification carries. `edge_runs` holds the runs that state each added field edge, as
    `added` relations hold theirs; a removed edge, like a removed relation, names none."""

    def entities(ids: frozenset[str]) -> list[EntityId]:
        return [named[i][1] for i in sorted(ids, key=lambda i: named[i][0]) if i in named]

    def field(dataset: str, name: str) -> dict[str, str]:
        entity = named[dataset][1]
        return {"namespace": entity["namespace"], "name": entity["name"], "field": name}

    def edges(keys: frozenset[FieldEdgeKey]) -> list[dict[str, Any]]:
        shown = [
            (
                {
                    "source": field(e.source_dataset, e.source_field),
                    "target": field(e.target_dataset, e.target_field),
                    "origin": e.origin,
                },
                e,
            )
            for e in keys
        ]
        shown.sort(key=lambda pair: json.dumps(pair[0], sort_keys=True))
        return [{**entry, "runs": list(edge_runs.get(e, []))} for entry, e in shown]

    edges_told = "field_edges_changed" in kinds

    return {
        "id": str(notification_id),
        "subscription": str(subscription),
        "change": kinds[0],
        "changes": kinds,
        "at": at.isoformat(),
        "position": position,
        "watch": spec.as_json()["watch"],
        "direction": spec.direction,
        "levels": spec.levels,
        "added": added,
        "removed": removed,
        "deleted": entities(change.deleted) if "deleted" in kinds else [],
        "revived": entities(change.revived) if "revived" in kinds else [],
        "failedRuns": [
            {
                "runId": failure.run_id,
                "state": failure.state,
                "program": named[failure.job_id][0],
                "wrote": sorted(named[d][0] for d in failure.wrote),
            }
            for failure in change.failed
        ]
        if "run_failed" in kinds
        else [],
        "fieldEdges": {
            "added": edges(change.field_added) if edges_told else [],
            "removed": edges(change.field_removed) if edges_told else [],
        },
        "schemaBreaks": [
            {
                "field": field(broken.dataset_id, broken.field),
                "downstream": sorted(
                    ({**field(d, name), "hops": hops} for d, name, hops in broken.downstream),
                    key=lambda f: (f["hops"], f["namespace"], f["name"], f["field"]),
                ),
            }
            for broken in change.breaks
        ]
        if "schema_break" in kinds
        else [],
        "data": dict(sorted(data.items())),
        "programs": dict(sorted(programs.items())),
        "links": {"watched": links.watched(spec.watch)},
    }
