"""`GET /api/v1/stats/...`: the counts behind the charts of Marquez's dashboard.

A `DAY` answer has 24 hourly intervals, the last one the current hour; a `WEEK` answer has 7
daily intervals, the last one today. Hours and days are those of the asked time zone (a day
with a daylight-saving change is 23 or 25 hours long) and each interval is sent as the UTC
instants it starts and ends at, so a browser shows it in its own zone. Marquez requires the
time zone for `WEEK`, and so does Upstream; for `DAY` it defaults to UTC.

- `lineage-events`: the run events of each interval by `eventType` (`START`, `COMPLETE`,
  `FAIL`, `ABORT`; `RUNNING`, `OTHER`, dataset and job events are not charted), by the time
  the events give.
- `jobs`, `datasets`, `sources`: how many existed at the end of each interval, cumulative as
  in Marquez. An entity counts from the time of the first event that named it (a job from its
  earliest run, a dataset from the earliest run that read or wrote it, else their
  declaration), so a history imported from Marquez charts as it happened, not as the import
  ran. A source (a `dataSource` facet's name, else the namespace) counts from its first
  dataset. Deleted entities are not counted.

A reader limited to some namespaces is counted only what it may read: the events it may
read (`store.visibility.shown_events`), the jobs and datasets of its namespaces, the sources
those datasets name; a dataset counts from the earliest run of a job it may read that read
or wrote it, so a hidden job's run does not say when it was first used.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidParameter
from upstream.query.marquez.answers import IntervalCount, LineageEventCounts
from upstream.store import schema as t
from upstream.store.deletion import visible
from upstream.store.visibility import shown_events, shown_namespaces

Period = Literal["DAY", "WEEK"]
Asset = Literal["jobs", "datasets", "sources"]

#: The run event types the dashboard charts.
CHARTED = ("FAIL", "START", "COMPLETE", "ABORT")


@dataclass(frozen=True)
class Interval:
    start: datetime
    end: datetime


def intervals(period: Period, zone_name: str | None, now: datetime) -> list[Interval]:
    """The intervals of `period` up to the one holding `now`, oldest first, in the time zone
    named `zone_name` (an IANA name such as `Europe/Berlin`)."""
    zone = _zone(period, zone_name)
    local = now.astimezone(zone)
    if period == "DAY":
        # Truncated in the zone (a zone may be 30 minutes off UTC), counted in UTC so that a
        # daylight-saving change neither repeats nor skips an hour.
        hour = local.replace(minute=0, second=0, microsecond=0).astimezone(UTC)
        starts = [hour - timedelta(hours=back) for back in range(23, -1, -1)]
        return [Interval(start, start + timedelta(hours=1)) for start in starts]
    days = [local.date() - timedelta(days=back) for back in range(6, -1, -1)]

    def midnight(day: Any) -> datetime:
        return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)

    return [Interval(midnight(day), midnight(day + timedelta(days=1))) for day in days]


def _zone(period: Period, name: str | None) -> ZoneInfo:
    if name is None or not name.strip():
        if period == "WEEK":
            raise InvalidParameter.at("timezone", "is required for period WEEK")
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidParameter.at(
            "timezone", f"{name!r} is no known time zone (e.g. Europe/Berlin, UTC)"
        ) from None


def _interval_of(moment: sa.ColumnElement[Any], spans: list[Interval]) -> sa.Case[Any]:
    """The index of the interval `moment` falls in; -1 before the first, NULL after the last."""
    return sa.case(
        (moment < spans[0].start, -1),
        *((moment < span.end, index) for index, span in enumerate(spans)),
        else_=None,
    )


def lineage_event_counts(
    conn: Connection,
    period: Period,
    zone_name: str | None,
    now: datetime,
    visibility: Visibility = EVERYTHING,
) -> list[LineageEventCounts]:
    """`GET /stats/lineage-events`: per interval, the run events `visibility` shows of each
    charted type."""
    spans = intervals(period, zone_name, now)
    e = t.events
    placed = (
        sa.select(_interval_of(e.c.event_time, spans).label("interval"), e.c.event_kind)
        .where(
            e.c.event_time >= spans[0].start,
            e.c.event_time < spans[-1].end,
            e.c.event_kind.in_(CHARTED),
            shown_events(conn, visibility),
        )
        .subquery()
    )
    query = sa.select(placed.c.interval, placed.c.event_kind, sa.func.count()).group_by(
        placed.c.interval, placed.c.event_kind
    )
    counts: Counter[tuple[int, str]] = Counter(
        {(row[0], row[1]): int(row[2]) for row in conn.execute(query)}
    )
    return [
        {
            "startInterval": _instant(span.start),
            "endInterval": _instant(span.end),
            "fail": counts[index, "FAIL"],
            "start": counts[index, "START"],
            "complete": counts[index, "COMPLETE"],
            "abort": counts[index, "ABORT"],
        }
        for index, span in enumerate(spans)
    ]


def _instant(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def asset_counts(
    conn: Connection,
    asset: Asset,
    period: Period,
    zone_name: str | None,
    now: datetime,
    visibility: Visibility = EVERYTHING,
) -> list[IntervalCount]:
    """`GET /stats/{jobs|datasets|sources}`: how many of those `visibility` shows existed at
    the end of each interval."""
    spans = intervals(period, zone_name, now)
    first = _first_seen(asset, visibility)
    placed = sa.select(_interval_of(first.c.first_seen, spans).label("interval")).subquery()
    query = sa.select(placed.c.interval, sa.func.count()).group_by(placed.c.interval)
    counts: Counter[int] = Counter(
        {row[0]: int(row[1]) for row in conn.execute(query) if row[0] is not None}
    )
    existing = counts[-1]
    answer: list[IntervalCount] = []
    for index, span in enumerate(spans):
        existing += counts[index]
        answer.append(
            {
                "startInterval": _instant(span.start),
                "endInterval": _instant(span.end),
                "count": existing,
            }
        )
    return answer


def _seen(
    entities: sa.Table, visibility: Visibility, earliest: sa.Subquery, *columns: Any
) -> sa.Select[Any]:
    """The rows of `entities` (jobs or datasets) not deleted and in a namespace `visibility`
    shows, with `first_seen`: their `earliest` time (`owner`, `at`: of their runs or
    relations), else their declaration, else when they were stored; and `columns`."""
    e = entities.c
    seen = sa.func.coalesce(earliest.c.at, e.declared_at, e.created_at)
    return (
        sa.select(seen.label("first_seen"), *columns)
        .select_from(entities.outerjoin(earliest, earliest.c.owner == e.id))
        .where(visible(entities), shown_namespaces(e.namespace, visibility))
    )


def _earliest_relations(visibility: Visibility) -> sa.Subquery:
    """Each dataset's earliest relation (`owner`, `at`) with a job `visibility` shows: a
    relation of a hidden job says nothing, not even when the dataset was first used."""
    r = t.relations.c
    query = sa.select(r.dataset_id.label("owner"), sa.func.min(r.event_time).label("at"))
    if not visibility.everything:
        query = query.join(t.jobs, t.jobs.c.id == r.job_id).where(
            shown_namespaces(t.jobs.c.namespace, visibility)
        )
    return query.group_by(r.dataset_id).subquery()


def _first_seen(asset: Asset, visibility: Visibility) -> sa.Subquery:
    """One row per entity of `asset` counted, with the time it was first seen (`first_seen`)."""
    if asset == "jobs":
        runs = t.runs.c
        earliest = (
            sa.select(runs.job_id.label("owner"), sa.func.min(runs.started_at).label("at"))
            .group_by(runs.job_id)
            .subquery()
        )
        return _seen(t.jobs, visibility, earliest).subquery()
    d = t.datasets
    source = sa.func.coalesce(d.c.source_name, d.c.namespace).label("source")
    datasets = _seen(d, visibility, _earliest_relations(visibility), source)
    if asset == "datasets":
        return datasets.subquery()
    per_dataset = datasets.subquery()
    return (
        sa.select(sa.func.min(per_dataset.c.first_seen).label("first_seen"))
        .group_by(per_dataset.c.source)
        .subquery()
    )
