"""Watching lineage: what a subscription asks for, and the rules that turn a change of its
watched radius into a notification (design §4.8). Pure: the dispatcher reads the graph and
the store, these functions decide.

A subscription's *radius* is the dataset-lineage walk from the watched dataset, with its
direction and levels, over the relations that had a run in the last `activeDays` days (or are
declared). A relation of the radius is (dataset, job, access): its runs and components do not
count, so a run repeating the last one changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from upstream.model.direction import DIRECTIONS, Direction
from upstream.model.errors import InvalidInput, Problem, shown

#: The kinds of change a subscription may ask for, most significant first: a notification
#: that carries several is named by the first (`headline`).
CHANGE_KINDS = ("deleted", "run_failed", "relation_removed", "relation_added", "revived")
#: Kinds the issue names that Upstream does not compute yet; asking for one is refused.
NOT_YET = ("field_edges_changed", "schema_break")
DEFAULT_LEVELS = 1
DEFAULT_ACTIVE_DAYS = 30
#: The header carrying `sha256=<hex HMAC-SHA256 of the exact body with the secret>`.
SIGNATURE_HEADER = "X-Upstream-Signature"
FAILED_STATES = ("FAIL", "ABORT")

Sink = Literal["webhook", "kafka"]


@dataclass(frozen=True)
class SubscriptionSpec:
    """A subscription as asked for, checked (`parse_subscription`); the secret is apart."""

    namespace: str
    name: str
    direction: Direction
    levels: int
    changes: tuple[str, ...]
    active_days: int
    sink: Sink
    #: The webhook's URL, or the Kafka topic.
    target: str

    def as_json(self) -> dict[str, Any]:
        """The subscription as the API shows it (and stores it): the request's own names."""
        deliver: dict[str, Any] = (
            {"webhook": {"url": self.target}}
            if self.sink == "webhook"
            else {"kafka": {"topic": self.target}}
        )
        return {
            "watch": {"dataset": {"namespace": self.namespace, "name": self.name}},
            "direction": self.direction,
            "levels": self.levels,
            "changes": list(self.changes),
            "activeDays": self.active_days,
            "deliver": deliver,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> SubscriptionSpec:
        """The spec `as_json` wrote."""
        dataset = stored["watch"]["dataset"]
        deliver = stored["deliver"]
        sink: Sink = "webhook" if "webhook" in deliver else "kafka"
        target = deliver["webhook"]["url"] if sink == "webhook" else deliver["kafka"]["topic"]
        return cls(
            dataset["namespace"],
            dataset["name"],
            stored["direction"],
            stored["levels"],
            tuple(stored["changes"]),
            stored["activeDays"],
            sink,
            target,
        )


def parse_subscription(body: Any, *, max_levels: int) -> tuple[SubscriptionSpec, str | None]:
    """The subscription `body` asks for and its webhook secret (None: none given); every
    problem is raised together (InvalidInput), each located by its path in the body."""
    problems: list[Problem] = []
    if not isinstance(body, dict):
        raise InvalidInput.at("", "a subscription is a JSON object")
    namespace, name = _watched(body.get("watch"), problems)
    direction = body.get("direction", "downstream")
    if direction not in DIRECTIONS:
        problems.append(Problem("direction", f"must be one of {', '.join(DIRECTIONS)}"))
    levels = _whole("levels", body.get("levels", DEFAULT_LEVELS), 1, max_levels, problems)
    active = _whole("activeDays", body.get("activeDays", DEFAULT_ACTIVE_DAYS), 1, 36_500, problems)
    changes = _changes(body.get("changes", list(CHANGE_KINDS)), problems)
    sink, target, secret = _deliver(body.get("deliver"), problems)
    unknown = sorted(
        set(body) - {"watch", "direction", "levels", "changes", "activeDays", "deliver"}
    )
    problems += [Problem(key, "is not a field of a subscription") for key in unknown]
    if problems:
        raise InvalidInput(problems)
    spec = SubscriptionSpec(namespace, name, direction, levels, changes, active, sink, target)
    return spec, secret


def _watched(watch: Any, problems: list[Problem]) -> tuple[str, str]:
    if not isinstance(watch, dict) or len(watch) != 1:
        problems.append(
            Problem("watch", 'must name one dataset: {"dataset": {"namespace", "name"}}')
        )
        return "", ""
    ((what, value),) = watch.items()
    if what in ("field", "tag", "namespace"):
        problems.append(
            Problem(f"watch.{what}", f"watching a {what} is not supported yet: watch a dataset")
        )
        return "", ""
    if what != "dataset" or not isinstance(value, dict):
        problems.append(
            Problem("watch", 'must name one dataset: {"dataset": {"namespace", "name"}}')
        )
        return "", ""
    found = []
    for key in ("namespace", "name"):
        text = value.get(key)
        if not isinstance(text, str) or not text.strip():
            problems.append(Problem(f"watch.dataset.{key}", "is required and must not be blank"))
        found.append(text if isinstance(text, str) else "")
    return found[0], found[1]


def _whole(path: str, value: Any, low: int, high: int, problems: list[Problem]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(Problem(path, f"must be a whole number, not {shown(str(value))}"))
        return low
    if not low <= value <= high:
        problems.append(Problem(path, f"must be between {low} and {high}, not {value}"))
    return value


def _changes(asked: Any, problems: list[Problem]) -> tuple[str, ...]:
    if not isinstance(asked, list) or not asked:
        problems.append(Problem("changes", f"must list kinds of change: {', '.join(CHANGE_KINDS)}"))
        return ()
    for index, kind in enumerate(asked):
        if kind in NOT_YET:
            problems.append(Problem(f"changes[{index}]", f"{kind} is not reported yet"))
        elif kind not in CHANGE_KINDS:
            problems.append(
                Problem(
                    f"changes[{index}]",
                    f"{shown(str(kind))} is not a kind of change; kinds: {', '.join(CHANGE_KINDS)}",
                )
            )
    return tuple(kind for kind in CHANGE_KINDS if kind in asked)


def _deliver(deliver: Any, problems: list[Problem]) -> tuple[Sink, str, str | None]:
    if (
        isinstance(deliver, dict)
        and set(deliver) == {"webhook"}
        and isinstance(deliver["webhook"], dict)
    ):
        hook = deliver["webhook"]
        url, secret = hook.get("url"), hook.get("secret")
        problem = webhook_url_problem(url)
        if problem:
            problems.append(Problem("deliver.webhook.url", problem))
        if secret is not None and (not isinstance(secret, str) or len(secret) < 16):
            problems.append(
                Problem("deliver.webhook.secret", "must be text of 16 characters or more")
            )
        return "webhook", url if isinstance(url, str) else "", secret
    if (
        isinstance(deliver, dict)
        and set(deliver) == {"kafka"}
        and isinstance(deliver["kafka"], dict)
    ):
        topic = deliver["kafka"].get("topic")
        if not isinstance(topic, str) or not topic.strip():
            problems.append(Problem("deliver.kafka.topic", "is required and must not be blank"))
        return "kafka", topic if isinstance(topic, str) else "", None
    problems.append(
        Problem("deliver", 'must be {"webhook": {"url", "secret"}} or {"kafka": {"topic"}}')
    )
    return "webhook", "", None


def webhook_url_problem(url: Any) -> str | None:
    """Why `url` cannot receive webhooks, or None: only absolute http(s) URLs with a host."""
    if not isinstance(url, str) or not url:
        return "is required"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"must be an http or https URL, not {shown(url)}"
    if not parts.hostname:
        return f"names no host: {shown(url)}"
    return None


def private_address(addresses: Iterable[str]) -> str | None:
    """The first of `addresses` (what a webhook's host resolves to) that is not on the
    public internet — loopback, private, link-local (cloud metadata), reserved — or None.
    A server must not be made to post to its own network by whoever may subscribe."""
    for text in addresses:
        address = ipaddress.ip_address(text.split("%")[0])
        if not address.is_global:
            return text
    return None


class RadiusRelation(NamedTuple):
    """A relation of a watched radius: job `job_id` reads or writes dataset `dataset_id`."""

    dataset_id: str
    job_id: str
    access: str


@dataclass(frozen=True)
class Radius:
    """What the dispatcher saw of a subscription's watched lineage: its relations, the
    entities of it that were deleted (so their return is a revival), and the failed runs
    already told (a failure is told once)."""

    relations: frozenset[RadiusRelation] = frozenset()
    deleted: frozenset[str] = frozenset()
    failed_runs: tuple[str, ...] = ()
    #: The change-log position the subscription was made at: what was written before it is
    #: the starting point, never news (a failure committed before it is not told).
    since: int = 0

    @property
    def nodes(self) -> frozenset[str]:
        """The datasets and jobs of the radius, by id."""
        return frozenset(r.dataset_id for r in self.relations) | {r.job_id for r in self.relations}

    def as_json(self) -> dict[str, Any]:
        return {
            "relations": sorted(list(r) for r in self.relations),
            "deleted": sorted(self.deleted),
            "failedRuns": list(self.failed_runs),
            "since": self.since,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> Radius:
        return cls(
            frozenset(RadiusRelation(*r) for r in stored["relations"]),
            frozenset(stored["deleted"]),
            tuple(stored["failedRuns"]),
            stored["since"],
        )


#: Failed runs a radius remembers as told; older ones are forgotten.
KEEP_FAILED_RUNS = 1_000


@dataclass(frozen=True)
class FailedRun:
    """A run of a job in the radius that failed (`FAIL`/`ABORT`) and wrote into it."""

    run_id: str
    job_id: str
    state: str
    wrote: tuple[str, ...]


@dataclass(frozen=True)
class RadiusChange:
    """How a radius changed, by kind; empty when nothing a subscriber sees changed."""

    added: frozenset[RadiusRelation] = frozenset()
    removed: frozenset[RadiusRelation] = frozenset()
    deleted: frozenset[str] = frozenset()
    revived: frozenset[str] = frozenset()
    failed: tuple[FailedRun, ...] = ()

    def kinds(self, wanted: Sequence[str]) -> list[str]:
        """The kinds of this change the subscription asked for, most significant first."""
        present = {
            "deleted": bool(self.deleted),
            "run_failed": bool(self.failed),
            "relation_removed": bool(self.removed),
            "relation_added": bool(self.added),
            "revived": bool(self.revived),
        }
        return [kind for kind in CHANGE_KINDS if present[kind] and kind in wanted]


def compare(
    before: Radius,
    after_relations: frozenset[RadiusRelation],
    seed: str,
    deleted_now: frozenset[str],
    failed: Sequence[FailedRun],
) -> tuple[RadiusChange, Radius]:
    """What changed between the radius seen before and the relations found now, and the
    radius to remember. `deleted_now` holds which of the radius's entities before, the ones
    seen deleted and the watched dataset `seed` are deleted now; `failed` the failed runs of
    the change that wrote into the radius. An entity of the radius (or the watched dataset)
    deleted now is *deleted*; one seen deleted that is not any more is *revived*; a failed
    run already told is not told again."""
    watched = before.nodes | {seed}
    newly_deleted = (deleted_now & watched) - before.deleted
    revived = before.deleted - deleted_now
    told = set(before.failed_runs)
    new_failures = tuple(f for f in failed if f.run_id not in told)
    change = RadiusChange(
        added=after_relations - before.relations,
        removed=before.relations - after_relations,
        deleted=newly_deleted,
        revived=revived,
        failed=new_failures,
    )
    remembered = (*before.failed_runs, *(f.run_id for f in new_failures))[-KEEP_FAILED_RUNS:]
    still_deleted = (before.deleted | newly_deleted) - revived
    return change, Radius(after_relations, frozenset(still_deleted), remembered, before.since)


def sign(secret: str, body: bytes) -> str:
    """The signature header's value for `body`: `sha256=<hex HMAC-SHA256>`."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: str, body: bytes, header: str) -> bool:
    """Whether `header` is the signature of `body` with `secret` (constant time)."""
    return hmac.compare_digest(sign(secret, body), header)


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed delivery is tried again: exponential backoff from `base` up to `cap`,
    with jitter (each delay drawn between half and all of its step, so many receivers that
    failed together are not retried together), and given up (dead) after `attempts` tries."""

    base: timedelta
    cap: timedelta
    attempts: int
    draw: random.Random = field(default_factory=random.Random, compare=False)

    def delay(self, tries: int) -> timedelta:
        """The wait after the `tries`-th failed try (1 for the first)."""
        step: timedelta = min(self.cap, self.base * (2 ** min(tries - 1, 40)))
        jitter: float = self.draw.uniform(0.5, 1.0)
        return step * jitter

    def exhausted(self, tries: int) -> bool:
        return tries >= self.attempts


def retryable(status: int | None) -> bool:
    """Whether a delivery that ended so is tried again: no answer (a time-out, a refused
    connection), a server error, 408 or 429. Any other refusal (a 4xx) is the receiver's
    final word: the notification goes dead at once, and can be redelivered by hand."""
    return status is None or status >= 500 or status in (408, 429)
