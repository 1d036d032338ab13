"""The application object: settings, the store, the routers (DESIGN §1, §5)."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from upstream import __version__
from upstream.api import metrics
from upstream.api.auth import AuthMiddleware, TokenTable
from upstream.api.errors import install_error_handlers
from upstream.api.openapi import install_openapi
from upstream.api.routes import (
    dataset_lineage,
    field_lineage,
    field_operations,
    health,
    lineage_graph,
    marquez,
    marquez_changes,
    marquez_lineage,
    openlineage,
    tag_reach,
)
from upstream.api.url_text import UrlTextMiddleware
from upstream.ingest.group_commit import GroupCommit
from upstream.ingest.rebuild import prepare_store
from upstream.logs import RequestContextMiddleware, configure_logging
from upstream.retention import prune_daily
from upstream.settings import Settings, load_settings
from upstream.store.engine import Store
from upstream.web import routes as web_routes

log = logging.getLogger("upstream")

ROUTERS = [
    health.router,
    openlineage.router,
    metrics.router,
    web_routes.router,
    field_lineage.router,
    field_operations.router,
    dataset_lineage.router,
    marquez.router,
    marquez_changes.router,
    marquez_lineage.router,
    lineage_graph.router,
    tag_reach.router,
]


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    """Build the API; with no settings given they come from the environment."""
    settings = settings or load_settings()
    configure_logging(settings)
    app_metrics = metrics.Metrics()
    tokens = TokenTable.from_settings(settings.tokens)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(settings.db_url, pool_size=settings.db_pool_size)
        if migrate:
            prepare_store(store)
        app.state.store = store
        app.state.group_commit = GroupCommit(store, max_events=settings.max_batch_events)
        app_metrics.watch_pool(store)
        log.info("upstream %s serving %s", __version__, store.display_url)
        if not tokens.enabled:
            log.warning(
                "open: no tokens configured, so anyone who reaches this server may read and "
                "write lineage (set UPSTREAM_TOKENS)"
            )
        # What start-up made (modules, the app, SQLAlchemy's caches) lives as long as the
        # process. Frozen, the collector stops scanning it on every full collection; a
        # lineage walk makes enough objects to trigger several, which doubled its time.
        gc.collect()
        gc.freeze()
        pruning = (
            asyncio.create_task(prune_daily(store, settings.retention))
            if settings.retention
            else None
        )
        try:
            yield
        finally:
            if pruning is not None:
                pruning.cancel()
            await app.state.group_commit.close()
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
    install_openapi(app)
    # Inside the token check: a caller without a token learns nothing, not even that its URL
    # was malformed.
    app.add_middleware(UrlTextMiddleware)
    app.add_middleware(AuthMiddleware, tokens=tokens)
    for router in ROUTERS:
        app.include_router(router)
    app.state.metrics = app_metrics
    # Added last, so outermost: they see every answer, a refused token's included.
    app.add_middleware(metrics.MetricsMiddleware, metrics=app_metrics)
    app.add_middleware(RequestContextMiddleware)
    return app
