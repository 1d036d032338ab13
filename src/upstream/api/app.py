"""The application object: settings, the store, the routers (design §1, §5)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from upstream import __version__
from upstream.api import metrics
from upstream.api.auth import AuthMiddleware, TokenTable
from upstream.api.deps import ReadAfter, ReadAfterInMarquez
from upstream.api.errors import UnexpectedErrorMiddleware, install_error_handlers
from upstream.api.openapi import install_openapi
from upstream.api.routes import (
    dataset_lineage,
    estate,
    field_lineage,
    field_operations,
    health,
    impact,
    job_lineage,
    lineage_graph,
    marquez,
    marquez_changes,
    marquez_lineage,
    marquez_web,
    openlineage,
    run_lineage,
    subscriptions,
    tag_reach,
    tokens,
)
from upstream.api.scoped import NamespaceInPath
from upstream.api.upload_rate import UploadRateMiddleware
from upstream.api.url_text import UrlTextMiddleware
from upstream.collector import tune_collector_for_app
from upstream.ingest.group_commit import EventWriter, GroupCommit
from upstream.ingest.rebuild import prepare_store
from upstream.logs import RequestContextMiddleware, configure_logging
from upstream.query.graph_index.index import load_in_background, position_view, share_index
from upstream.query.positions import Views
from upstream.retention import make_partitions_daily, prune_batches_often, prune_daily
from upstream.settings import Settings, load_settings
from upstream.store.engine import Store, Timeouts
from upstream.watch.background import Watcher
from upstream.web import routes as web_routes

if TYPE_CHECKING:
    from upstream.kafka.background import BackgroundConsumers
    from upstream.kafka.watermarks import OffsetCheck

log = logging.getLogger("upstream")

#: The routers that only read lineage, with how each reads a position to wait for;
#: `marquez_changes` marks its one read itself.
READ_ROUTERS = [
    (field_lineage.router, ReadAfter),
    (dataset_lineage.router, ReadAfter),
    (job_lineage.router, ReadAfter),
    (marquez.router, ReadAfterInMarquez),
    (marquez_lineage.router, ReadAfterInMarquez),
    (marquez_web.router, ReadAfterInMarquez),
    (lineage_graph.router, ReadAfter),
    (run_lineage.router, ReadAfter),
    (tag_reach.router, ReadAfter),
]

ROUTERS = [
    health.router,
    openlineage.router,
    metrics.router,
    web_routes.router,
    field_lineage.router,
    field_operations.router,
    dataset_lineage.router,
    impact.router,
    job_lineage.router,
    marquez.router,
    marquez_changes.router,
    marquez_lineage.router,
    marquez_web.router,
    lineage_graph.router,
    run_lineage.router,
    tag_reach.router,
    estate.router,
    tokens.router,
    subscriptions.router,
]


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    """Build the API; with no settings given they come from the environment."""
    settings = settings or load_settings()
    configure_logging(settings)
    app_metrics = metrics.Metrics()
    tokens = TokenTable.from_settings(settings.tokens)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(
            settings.db_url,
            pool_size=settings.db_pool_size,
            timeouts=Timeouts(
                connect=settings.db_connect_timeout,
                pool=settings.db_pool_timeout,
                statement=settings.db_statement_timeout,
                lock=settings.db_lock_timeout,
            ),
        )
        if migrate:
            prepare_store(store)
        if settings.read_database_url:  # after the migration: it runs on the primary
            replicas = store.read_from_replicas(
                settings.read_database_url,
                settings.max_replica_lag,
                settings.replica_lag_fallback,
                settings.replica_probe_timeout,
            )
            for replica in replicas.engines:
                share_index(replica, store.engine)
        app.state.store = store
        load_in_background(store)
        app.state.group_commit = GroupCommit(store, max_events=settings.max_batch_events)
        app.state.event_writer = _event_writer(settings, store, app.state.group_commit)
        app.state.views = Views(store)
        app.state.views.plug(position_view(store))
        offset_check = _offset_check(settings)
        if offset_check is not None:
            app.state.views.check_offsets_with(offset_check)
        app_metrics.watch_pool(store)
        consumers = _kafka_consumers(settings, store, app_metrics)
        log.info("upstream %s serving %s", __version__, store.display_url)
        if not tokens.enabled:
            log.warning(
                "open: no tokens configured, so anyone who reaches this server may read and "
                "write lineage (set UPSTREAM_TOKENS)"
            )
        tune_collector_for_app()
        pruning = (
            asyncio.create_task(prune_daily(store, settings.retention))
            if settings.retention
            else None
        )
        # Start-up (the migration) made this month's partitions and the next ones; nothing
        # to make on SQLite.
        partitioning = asyncio.create_task(make_partitions_daily(store))
        # A front makes a row per post of several events; they may go once decided and used.
        batches = (
            asyncio.create_task(prune_batches_often(store)) if settings.publish_to_kafka else None
        )
        watcher = Watcher(store, settings).start() if settings.watch else None
        try:
            yield
        finally:
            for task in (pruning, partitioning, batches):
                if task is not None:
                    task.cancel()
            if consumers is not None:
                await run_in_threadpool(consumers.stop)
            if app.state.event_writer is not app.state.group_commit:
                await app.state.event_writer.close()
            if watcher is not None:
                await run_in_threadpool(watcher.stop)
            await app.state.group_commit.close()
            if offset_check is not None:
                await run_in_threadpool(offset_check.close)
            store.dispose()

    app = FastAPI(
        title="Upstream",
        version=__version__,
        description="Data lineage: OpenLineage ingestion with exact edges, dataset and "
        "field-level lineage, a Marquez-compatible read API.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    install_error_handlers(app)
    install_openapi(app, [route for router in ROUTERS for route in router.routes])
    # Inside the token check: a caller without a token learns nothing, not even that its URL
    # was malformed.
    app.add_middleware(UrlTextMiddleware)
    app.add_middleware(
        UploadRateMiddleware, grace=settings.client_timeout, min_rate=settings.min_upload_rate
    )
    app.add_middleware(AuthMiddleware, tokens=tokens)
    app.webhooks.include_router(subscriptions.webhooks)
    for router in ROUTERS:
        # A read may name the position of a write it must see (`?after=`).
        reads = next((depends for read, depends in READ_ROUTERS if read is router), None)
        # A namespace named in the path is checked against the token's scopes first.
        depends = [NamespaceInPath] + ([reads] if reads is not None else [])
        app.include_router(router, dependencies=depends)
    app.state.metrics = app_metrics
    # Added last, so outermost: they see every answer, a refused token's included.
    app.add_middleware(metrics.MetricsMiddleware, metrics=app_metrics)
    app.add_middleware(UnexpectedErrorMiddleware)
    app.add_middleware(RequestContextMiddleware)
    return app


def _event_writer(settings: Settings, store: Store, group_commit: GroupCommit) -> EventWriter:
    """Where posted OpenLineage events go: Kafka on a publishing front, else the store."""
    if not settings.publish_to_kafka:
        return group_commit
    from upstream.kafka.publisher import KafkaPublisher

    log.info("publishing posted events to Kafka topic %s", settings.kafka_topic)
    return KafkaPublisher(
        settings.kafka_bootstrap_servers,
        settings.kafka_topic,
        timeout=settings.kafka_publish_timeout,
        store=store,
        client_options=settings.kafka_options,
    )


def _offset_check(settings: Settings) -> OffsetCheck | None:
    """What asks the brokers whether a read's Kafka offsets were ever given, when this
    process knows them; without, such a read only waits."""
    if not settings.kafka_bootstrap_servers.strip():
        return None
    from upstream.kafka.watermarks import OffsetCheck

    return OffsetCheck(settings.kafka_bootstrap_servers, settings.kafka_options)


def _kafka_consumers(
    settings: Settings, store: Store, app_metrics: metrics.Metrics
) -> BackgroundConsumers | None:
    """The Kafka consumers this process runs beside the API, started; None when asked for none."""
    if not settings.kafka_consumers:
        return None
    from upstream.kafka.background import BackgroundConsumers
    from upstream.kafka.consumer import ConsumerConfig
    from upstream.kafka.metrics import ConsumerMetrics

    consumers = BackgroundConsumers(
        store,
        ConsumerConfig.from_settings(settings),
        ConsumerMetrics(app_metrics.registry),
        settings.kafka_consumers,
    )
    consumers.start()
    return consumers
