"""The body of a notification (design §4.8; its schema is `WatchNotification` in the
OpenAPI document): what changed in a watched radius, in the dataset-lineage answer's shapes."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from upstream.model.watch import RadiusChange, SubscriptionSpec
from upstream.query.answers import EntityId, RelationEntry


@dataclass(frozen=True)
class Links:
    """Where the web UI is, for links in notifications: the server's public address, or ""
    for links relative to it."""

    base: str = ""

    def dataset(self, namespace: str, name: str) -> str:
        return f"{self.base.rstrip('/')}/#/dataset?{urlencode({'ns': namespace, 'name': name})}"


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
) -> dict[str, Any]:
    """`{"id", "subscription", "change", "changes", "at", "position", "watch", "added",
    "removed", "deleted", "revived", "failedRuns", "data", "programs", "links"}`: `change` is
    the most significant of `changes`, the kinds this notification carries."""

    def entities(ids: frozenset[str]) -> list[EntityId]:
        return [named[i][1] for i in sorted(ids, key=lambda i: named[i][0]) if i in named]

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
        "data": dict(sorted(data.items())),
        "programs": dict(sorted(programs.items())),
        "links": {"watched": links.dataset(spec.namespace, spec.name)},
    }
