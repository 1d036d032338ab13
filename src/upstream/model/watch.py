"""Watching lineage: what a subscription asks for, and the rules that turn a change of its
watched radius into a notification (design §4.8). Pure: the dispatcher reads the graph and
the store, these functions decide.

A subscription watches a dataset, a field, a tag (every field carrying it) or a namespace
(every dataset in it). Its *radius* is, for a dataset or a namespace, the dataset-lineage
walk from the watched datasets, with its direction and levels, over the relations that had a
run in the last `activeDays` days (or are declared); for a field or a tag, the field-lineage
walk from the watched fields. A relation of the radius is (dataset, job, access) and a field
edge (source field, target field, origin): runs and components do not count, so a run
repeating the last one changes nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import random
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property
from itertools import chain
from operator import itemgetter
from typing import Any, Literal, NamedTuple
from urllib.parse import urlsplit

from upstream.model.direction import DIRECTIONS, Direction
from upstream.model.errors import InvalidInput, Problem, shown

#: The kinds of change a subscription may ask for, most significant first: a notification
#: that carries several is named by the first (`headline`).
CHANGE_KINDS = (
    "deleted",
    "schema_break",
    "run_failed",
    "relation_removed",
    "field_edges_changed",
    "relation_added",
    "revived",
)
WatchKind = Literal["dataset", "field", "tag", "namespace"]
#: The kinds of change each kind of watch can tell (and tells when `changes` is left out):
#: a field or a tag has no relations, deletions or runs of its own.
KINDS_OF: dict[str, tuple[str, ...]] = {
    "dataset": CHANGE_KINDS,
    "namespace": CHANGE_KINDS,
    "field": ("schema_break", "field_edges_changed"),
    "tag": ("schema_break", "field_edges_changed"),
}
#: The bounds of a digest's interval, in seconds: a minute to a week.
DIGEST_BOUNDS = (60, 7 * 24 * 3600)
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")
DEFAULT_LEVELS = 1
DEFAULT_ACTIVE_DAYS = 30
#: The header carrying `sha256=<hex HMAC-SHA256 of the exact body with the secret>`.
SIGNATURE_HEADER = "X-Upstream-Signature"
FAILED_STATES = ("FAIL", "ABORT")

Sink = Literal["webhook", "kafka"]


@dataclass(frozen=True)
class Watched:
    """What a subscription watches: a dataset (`namespace`, `name`), a field of one
    (`field` too), every field carrying `tag`, or every dataset of `namespace`."""

    kind: WatchKind
    namespace: str = ""
    name: str = ""
    field: str = ""
    tag: str = ""

    def as_json(self) -> dict[str, Any]:
        """The request's own shape: `{"dataset": {...}}`, `{"field": {...}}`, `{"tag": …}`
        or `{"namespace": …}`."""
        if self.kind == "dataset":
            return {"dataset": {"namespace": self.namespace, "name": self.name}}
        if self.kind == "field":
            return {"field": {"namespace": self.namespace, "name": self.name, "field": self.field}}
        if self.kind == "tag":
            return {"tag": self.tag}
        return {"namespace": self.namespace}

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> Watched:
        ((kind, value),) = stored.items()
        if kind == "tag":
            return cls("tag", tag=value)
        if kind == "namespace":
            return cls("namespace", namespace=value)
        shape: WatchKind = "field" if kind == "field" else "dataset"
        return cls(shape, value["namespace"], value["name"], value.get("field", ""))


@dataclass(frozen=True)
class SubscriptionSpec:
    """A subscription as asked for, checked (`parse_subscription`); the secret is apart."""

    watch: Watched
    direction: Direction
    levels: int
    changes: tuple[str, ...]
    active_days: int
    sink: Sink
    #: The webhook's URL, or the Kafka topic.
    target: str
    #: Seconds of a digest's interval: the changes of each are sent as one notification at
    #: its end. None: each batch's changes are sent as they are seen.
    digest: int | None = None

    def as_json(self) -> dict[str, Any]:
        """The subscription as the API shows it (and stores it): the request's own names."""
        deliver: dict[str, Any] = (
            {"webhook": {"url": self.target}}
            if self.sink == "webhook"
            else {"kafka": {"topic": self.target}}
        )
        return {
            "watch": self.watch.as_json(),
            "direction": self.direction,
            "levels": self.levels,
            "changes": list(self.changes),
            "activeDays": self.active_days,
            "digest": self.digest,
            "deliver": deliver,
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> SubscriptionSpec:
        """The spec `as_json` wrote."""
        deliver = stored["deliver"]
        sink: Sink = "webhook" if "webhook" in deliver else "kafka"
        target = deliver["webhook"]["url"] if sink == "webhook" else deliver["kafka"]["topic"]
        return cls(
            Watched.from_json(stored["watch"]),
            stored["direction"],
            stored["levels"],
            tuple(stored["changes"]),
            stored["activeDays"],
            sink,
            target,
            stored.get("digest"),
        )


_FIELDS = {"watch", "direction", "levels", "changes", "activeDays", "digest", "deliver"}


def parse_subscription(body: Any, *, max_levels: int) -> tuple[SubscriptionSpec, str | None]:
    """The subscription `body` asks for and its webhook secret (None: none given); every
    problem is raised together (InvalidInput), each located by its path in the body."""
    problems: list[Problem] = []
    if not isinstance(body, dict):
        raise InvalidInput.at("", "a subscription is a JSON object")
    watched = _watched(body.get("watch"), problems)
    direction = body.get("direction", "downstream")
    if direction not in DIRECTIONS:
        problems.append(Problem("direction", f"must be one of {', '.join(DIRECTIONS)}"))
    levels = _whole("levels", body.get("levels", DEFAULT_LEVELS), 1, max_levels, problems)
    active = _whole("activeDays", body.get("activeDays", DEFAULT_ACTIVE_DAYS), 1, 36_500, problems)
    allowed = KINDS_OF[watched.kind]
    changes = _changes(body.get("changes", list(allowed)), watched.kind, allowed, problems)
    digest = digest_seconds(body.get("digest"), problems)
    sink, target, secret = _deliver(body.get("deliver"), problems)
    problems += [
        Problem(key, "is not a field of a subscription") for key in sorted(set(body) - _FIELDS)
    ]
    if problems:
        raise InvalidInput(problems)
    spec = SubscriptionSpec(watched, direction, levels, changes, active, sink, target, digest)
    return spec, secret


_WATCH_SHAPES = (
    'must name one thing to watch: {"dataset": {"namespace", "name"}}, '
    '{"field": {"namespace", "name", "field"}}, {"tag": "…"} or {"namespace": "…"}'
)


def _watched(watch: Any, problems: list[Problem]) -> Watched:
    if not isinstance(watch, dict) or len(watch) != 1:
        problems.append(Problem("watch", _WATCH_SHAPES))
        return Watched("dataset")
    ((what, value),) = watch.items()
    if what in ("tag", "namespace"):
        if not isinstance(value, str) or not value.strip():
            problems.append(Problem(f"watch.{what}", "must be a name, not blank"))
            return Watched(what)
        return Watched("tag", tag=value) if what == "tag" else Watched("namespace", namespace=value)
    if what not in ("dataset", "field") or not isinstance(value, dict):
        problems.append(Problem("watch", _WATCH_SHAPES))
        return Watched("dataset")
    keys = ("namespace", "name", "field") if what == "field" else ("namespace", "name")
    found = []
    for key in keys:
        text = value.get(key)
        if not isinstance(text, str) or not text.strip():
            problems.append(Problem(f"watch.{what}.{key}", "is required and must not be blank"))
        found.append(text if isinstance(text, str) else "")
    return Watched(what, *found)


def digest_seconds(asked: Any, problems: list[Problem]) -> int | None:
    """A digest's interval in seconds, from a whole number of seconds or an ISO 8601
    duration of days, hours, minutes and seconds (`PT1H`, `P1D`); None when not asked."""
    if asked is None:
        return None
    seconds: int | None = None
    if isinstance(asked, int) and not isinstance(asked, bool):
        seconds = asked
    elif (
        isinstance(asked, str)
        and (match := _DURATION.match(asked))
        and any(match.groups())
        and not asked.endswith("T")
    ):
        days, hours, minutes, secs = (int(part or 0) for part in match.groups())
        seconds = ((days * 24 + hours) * 60 + minutes) * 60 + secs
    if seconds is None:
        problems.append(
            Problem(
                "digest",
                f"must be a number of seconds or an ISO 8601 duration such as PT1H, not "
                f"{shown(str(asked))}",
            )
        )
        return None
    low, high = DIGEST_BOUNDS
    if not low <= seconds <= high:
        problems.append(
            Problem("digest", f"must be between {low} seconds and {high} (7 days), not {seconds}")
        )
    return seconds


def _whole(path: str, value: Any, low: int, high: int, problems: list[Problem]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(Problem(path, f"must be a whole number, not {shown(str(value))}"))
        return low
    if not low <= value <= high:
        problems.append(Problem(path, f"must be between {low} and {high}, not {value}"))
    return value


def _changes(
    asked: Any, watched: str, allowed: tuple[str, ...], problems: list[Problem]
) -> tuple[str, ...]:
    if not isinstance(asked, list) or not asked:
        problems.append(Problem("changes", f"must list kinds of change: {', '.join(allowed)}"))
        return ()
    for index, kind in enumerate(asked):
        if kind in CHANGE_KINDS and kind not in allowed:
            problems.append(
                Problem(
                    f"changes[{index}]",
                    f"{kind} is not told for a {watched} watch; its kinds: {', '.join(allowed)}",
                )
            )
        elif kind not in CHANGE_KINDS:
            problems.append(
                Problem(
                    f"changes[{index}]",
                    f"{shown(str(kind))} is not a kind of change; kinds: {', '.join(allowed)}",
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


class FieldEdgeKey(NamedTuple):
    """A field edge of a watched radius (dataset ids as text) and the origin that stated
    it, as answers name it (`columnLineage`, `sql`, …): one edge stated by two origins is
    two keys, so an origin that starts or stops stating it is a change."""

    source_dataset: str
    source_field: str
    target_dataset: str
    target_field: str
    origin: str


#: A field of a dataset's schema: (dataset id as text, field name; a nested field's name is
#: its path, `schema_field_names`).
SchemaField = tuple[str, str]


def schema_field_names(fields: Any, parent: str = "") -> Iterator[str]:
    """The names of a `schema` facet's fields as stored (`datasets.fields`), nested ones
    included, each nested field named by its path from the top, parts joined by dots
    (`address.city`): a field dropped from inside a struct breaks lineage stated from it as
    surely as a top-level one."""
    for field_ in fields if isinstance(fields, list) else ():
        name = field_.get("name") if isinstance(field_, dict) else None
        if isinstance(name, str):
            path = f"{parent}.{name}" if parent else name
            yield path
            yield from schema_field_names(field_.get("fields"), path)


@dataclass(frozen=True)
class SchemaBreak:
    """A field gone from its dataset's schema while field edges from it lead downstream
    within the radius: each downstream field (dataset id, field) with its least hops."""

    dataset_id: str
    field: str
    downstream: tuple[tuple[str, str, int], ...]


_FIRST, _SECOND, _THIRD = itemgetter(0), itemgetter(1), itemgetter(2)


@dataclass(frozen=True)
class Radius:
    """What the dispatcher saw of a subscription's watched lineage: its relations, its
    field edges and the schema fields it watches, the entities of it that were deleted (so
    their return is a revival), and the failed runs already told (a failure is told once)."""

    relations: frozenset[RadiusRelation] = frozenset()
    deleted: frozenset[str] = frozenset()
    failed_runs: tuple[str, ...] = ()
    #: The change-log position the subscription was made at: what was written before it is
    #: the starting point, never news (a failure committed before it is not told).
    since: int = 0
    field_edges: frozenset[FieldEdgeKey] = frozenset()
    schema: frozenset[SchemaField] = frozenset()

    @cached_property
    def nodes(self) -> frozenset[str]:
        """The datasets and jobs of the radius's relations, by id (worked out once: a
        dispatcher asks each round about every radius it remembers)."""
        # Without a loop in Python: a round remembers every radius it stored anew.
        return frozenset(map(_FIRST, self.relations)).union(map(_SECOND, self.relations))

    @cached_property
    def entities(self) -> frozenset[str]:
        """Every dataset and job whose change may change this radius, by id."""
        return self.nodes.union(
            self.deleted,
            map(_FIRST, self.field_edges),
            map(_THIRD, self.field_edges),
            map(_FIRST, self.schema),
        )

    def as_json(self) -> dict[str, Any]:
        # In no order (it is read back into sets), the schema's fields as one flat list of
        # dataset, field, dataset, field…: a dispatcher round stores every radius that
        # changed, and the schema, the largest part, is then flattened without a loop.
        return {
            "relations": [tuple(r) for r in self.relations],
            "deleted": list(self.deleted),
            "failedRuns": list(self.failed_runs),
            "since": self.since,
            "fieldEdges": [tuple(e) for e in self.field_edges],
            "schemaFields": list(chain.from_iterable(self.schema)),
        }

    @classmethod
    def from_json(cls, stored: Mapping[str, Any]) -> Radius:
        flat = iter(stored.get("schemaFields", ()))
        # A radius stored before the flat list holds (dataset, field) pairs in "schema".
        fields = chain(zip(flat, flat, strict=True), (tuple(f) for f in stored.get("schema", ())))
        return cls(
            frozenset(RadiusRelation(*r) for r in stored["relations"]),
            frozenset(stored["deleted"]),
            tuple(stored["failedRuns"]),
            stored["since"],
            frozenset(FieldEdgeKey(*e) for e in stored.get("fieldEdges", [])),
            frozenset(fields),
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
    field_added: frozenset[FieldEdgeKey] = frozenset()
    field_removed: frozenset[FieldEdgeKey] = frozenset()
    breaks: tuple[SchemaBreak, ...] = ()

    def kinds(self, wanted: Sequence[str]) -> list[str]:
        """The kinds of this change the subscription asked for, most significant first."""
        present = {
            "deleted": bool(self.deleted),
            "schema_break": bool(self.breaks),
            "run_failed": bool(self.failed),
            "relation_removed": bool(self.removed),
            "field_edges_changed": bool(self.field_added or self.field_removed),
            "relation_added": bool(self.added),
            "revived": bool(self.revived),
        }
        return [kind for kind in CHANGE_KINDS if present[kind] and kind in wanted]


@dataclass(frozen=True)
class Seen:
    """A radius as the dispatcher finds it now, beside the entities it watches."""

    relations: frozenset[RadiusRelation]
    #: The watched datasets (the watched dataset, the namespace's, the watched fields').
    seeds: frozenset[str]
    deleted_now: frozenset[str]
    failed: Sequence[FailedRun] = ()
    field_edges: frozenset[FieldEdgeKey] = frozenset()
    schema: frozenset[SchemaField] = frozenset()
    #: The schema fields gone since `before` that have field edges downstream in the radius.
    breaks: tuple[SchemaBreak, ...] = ()


def vanished(
    before: frozenset[SchemaField],
    now: frozenset[SchemaField],
    still_watched: Callable[[SchemaField], bool],
) -> list[SchemaField]:
    """The schema fields seen before and not now, of those `still_watched(field)` says the
    radius still watches (a dataset that left the radius did not lose its fields)."""
    return sorted(f for f in before - now if still_watched(f))


def compare(before: Radius, seen: Seen) -> tuple[RadiusChange, Radius]:
    """What changed between the radius seen before and the one seen now, and the radius to
    remember. `seen.deleted_now` holds which of the radius's entities before, the ones seen
    deleted and the watched datasets are deleted now; `seen.failed` the failed runs of the
    change that wrote into the radius. An entity of the radius (or a watched dataset)
    deleted now is *deleted*; one seen deleted that is not any more is *revived*; a failed
    run already told is not told again."""
    watched = before.nodes | seen.seeds
    newly_deleted = (seen.deleted_now & watched) - before.deleted
    revived = before.deleted - seen.deleted_now
    told = set(before.failed_runs)
    new_failures = tuple(f for f in seen.failed if f.run_id not in told)
    change = RadiusChange(
        added=seen.relations - before.relations,
        removed=before.relations - seen.relations,
        deleted=newly_deleted,
        revived=revived,
        failed=new_failures,
        field_added=seen.field_edges - before.field_edges,
        field_removed=before.field_edges - seen.field_edges,
        breaks=seen.breaks,
    )
    remembered = (*before.failed_runs, *(f.run_id for f in new_failures))[-KEEP_FAILED_RUNS:]
    still_deleted = (before.deleted | newly_deleted) - revived
    kept = Radius(
        seen.relations,
        frozenset(still_deleted),
        remembered,
        before.since,
        seen.field_edges,
        seen.schema,
    )
    return change, kept


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
