"""`GET /metrics` in the Prometheus text format (design §5, operating it).

What a team watches: events ingested (new or duplicate) and ingestion requests rejected by
reason, request counts and latency per route template (`/api/v1/lineage`, never the raw path,
so the number of series stays bounded), and the database connection pool.

Each app owns its registry, so two apps in one process (tests) never share counts. Under
several worker processes, set `PROMETHEUS_MULTIPROC_DIR` to an empty directory before start
(`upstream serve --workers N` does it for you) and every scrape sums all workers' counters and
histograms; the pool gauges always describe the process that answered the scrape.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from upstream.api.audit import request_refused
from upstream.model.facts import EventFacts
from upstream.store.engine import Store
from upstream.store.replicas import ReplicaSet
from upstream.store.writer import WriteResult

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"

#: Why an ingestion request was refused, by the status it was answered with.
REJECTION_REASONS = {
    400: "malformed",
    401: "unauthenticated",
    403: "forbidden",
    408: "too_slow",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "throttled",
    499: "client_disconnected",
}
#: Latency buckets in seconds: from a cached read to a large batch on a busy database.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
UNMATCHED_ROUTE = "unmatched"


def rejection_reason(status: int) -> str:
    """The `reason` label of a refused ingestion request."""
    if status >= 500:
        return "server_error"
    return REJECTION_REASONS.get(status, "client_error")


class _PoolCollector(Collector):
    """Reads the pool, and the read replicas' lag, at scrape time, so the gauges are never
    stale."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def collect(self) -> Iterator[Metric]:
        if self.store.replicas is not None:
            yield from _replica_gauges(self.store.replicas)
        pool = self.store.engine.pool
        size = getattr(pool, "size", None)
        checked_out = getattr(pool, "checkedout", None)
        checked_in = getattr(pool, "checkedin", None)
        if size is None or checked_out is None or checked_in is None:
            return  # a pool kind without counters (SQLite in memory)
        yield GaugeMetricFamily(
            "upstream_db_pool_size",
            "Connections the pool keeps open; it may open as many again under load.",
            value=size(),
        )
        connections = GaugeMetricFamily(
            "upstream_db_pool_connections",
            "Open database connections of this process, in use by a request or idle.",
            labels=["state"],
        )
        connections.add_metric(["in_use"], checked_out())
        connections.add_metric(["idle"], checked_in())
        yield connections


def _replica_gauges(replicas: ReplicaSet) -> Iterator[Metric]:
    """Each read replica's lag as this process last measured it, and which one reads use."""
    lag = GaugeMetricFamily(
        "upstream_replica_lag_seconds",
        "How long ago the primary committed the oldest write a read replica has not replayed "
        "(0 when caught up; +Inf when it does not answer).",
        labels=["replica"],
    )
    behind = GaugeMetricFamily(
        "upstream_replica_lag_positions",
        "Change-log positions a read replica is behind the primary (absent when it does not "
        "answer).",
        labels=["replica"],
    )
    in_use = GaugeMetricFamily(
        "upstream_replica_in_use",
        "1 for the read replica this process reads from, 0 for the others (all 0: reads go "
        "to the primary, or are refused, as replica_lag_fallback says).",
        labels=["replica"],
    )
    engine = replicas.engine_for_reads_now()
    for replica in replicas.replicas:
        lag.add_metric([replica.name], replica.lag.seconds)
        if replica.lag.positions is not None:
            behind.add_metric([replica.name], replica.lag.positions)
        in_use.add_metric([replica.name], 1 if replica.engine is engine else 0)
    yield from (lag, behind, in_use)


class Metrics:
    """The metrics of one app, and the text a scrape gets."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.events_ingested = Counter(
            "upstream_events_ingested",
            "OpenLineage events accepted; result=duplicate when the same event was stored "
            "before (accepted, changes nothing).",
            ["result"],
            registry=self.registry,
        )
        self.ingest_rejected = Counter(
            "upstream_ingest_rejected",
            "Ingestion requests refused, by reason; nothing of a refused request (a whole "
            "batch) is stored.",
            ["reason"],
            registry=self.registry,
        )
        self.requests = Counter(
            "upstream_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "upstream_http_request_duration_seconds",
            "Time from request to the end of the response, by method and route template.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.sql_statements = Counter(
            "upstream_sql_statements",
            "Statements of jobs' `sql` facets read for column lineage; result=unparsed for "
            "those no parser could read (the event is stored all the same, without their "
            "lineage).",
            ["result"],
            registry=self.registry,
        )
        self.access_refused = Counter(
            "upstream_access_refused",
            "Requests refused for their token: status=401 (none, unknown, expired or "
            "revoked) or 403 (a role or scope that does not allow it).",
            ["status"],
            registry=self.registry,
        )
        self.tokens_changed = Counter(
            "upstream_tokens_changed",
            "Issued tokens created and revoked, by action.",
            ["action"],
            registry=self.registry,
        )
        self._pool: _PoolCollector | None = None
        #: Each series' child, by its labels, looked up once: `labels()` checks the labels
        #: and takes a lock at every call, several times a request.
        self._children: dict[tuple[object, ...], Any] = {}

    def watch_pool(self, store: Store) -> None:
        """Report `store`'s connection pool from now on (one store per app)."""
        if self._pool is not None:
            self.registry.unregister(self._pool)
        self._pool = _PoolCollector(store)
        self.registry.register(self._pool)

    def _series(self, metric: MetricWrapperBase, *labels: str) -> Any:
        """`metric.labels(*labels)`, made at its first use only."""
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def count_ingested(self, result: WriteResult) -> None:
        self._series(self.events_ingested, "stored").inc(result.stored)
        self._series(self.events_ingested, "duplicate").inc(result.duplicates)

    def count_sql(self, facts: Sequence[EventFacts]) -> None:
        self._series(self.sql_statements, "parsed").inc(sum(f.sql_parsed for f in facts))
        self._series(self.sql_statements, "unparsed").inc(sum(f.sql_unparsed for f in facts))

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """Account one answered request; a refused POST is a refused ingestion."""
        self._series(self.requests, method, route, str(status)).inc()
        self._series(self.latency, method, route).observe(seconds)
        if method == "POST" and route != UNMATCHED_ROUTE and status >= 400:
            self._series(self.ingest_rejected, rejection_reason(status)).inc()
        if status in (401, 403):
            self._series(self.access_refused, str(status)).inc()

    def exposition(self) -> bytes:
        """The Prometheus text of every metric, summed over workers in multiprocess mode."""
        if os.environ.get(MULTIPROCESS_ENV):
            registry = CollectorRegistry()
            MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            if self._pool is not None:
                registry.register(self._pool)
            return generate_latest(registry)
        return generate_latest(self.registry)


@contextmanager
def multiprocess_directory(workers: int) -> Iterator[None]:
    """With several workers, a fresh `PROMETHEUS_MULTIPROC_DIR` for the life of the server, so
    a scrape answered by any worker sums them all. An operator's own directory is kept."""
    if workers <= 1 or os.environ.get(MULTIPROCESS_ENV):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="upstream-metrics-") as path:
        os.environ[MULTIPROCESS_ENV] = path
        try:
            yield
        finally:
            os.environ.pop(MULTIPROCESS_ENV, None)


def route_template(scope: Scope) -> str:
    """The path template of the route that answered (`/api/v1/lineage`), not the raw path."""
    route = scope.get("route")
    if route is None:
        return UNMATCHED_ROUTE
    path = getattr(route, "path", None)
    return str(path) if path else "/"


class MetricsMiddleware:
    """Times every HTTP request and counts it under its route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note_status)
        finally:
            self.metrics.observe(
                scope["method"], route_template(scope), status, time.perf_counter() - started
            )
            if status in (401, 403):
                request_refused(scope, status)


def metrics_of(request: Request) -> Metrics:
    metrics: Metrics = request.app.state.metrics
    return metrics


router = APIRouter(tags=["operations"])


@router.get(
    "/metrics",
    response_class=Response,
    summary="Prometheus metrics",
    responses={200: {"content": {CONTENT_TYPE_LATEST: {}}, "description": "Metrics text"}},
)
def metrics(request: Request) -> Response:
    """Counters, latency histograms and pool gauges in the Prometheus text format."""
    return Response(metrics_of(request).exposition(), media_type=CONTENT_TYPE_LATEST)
