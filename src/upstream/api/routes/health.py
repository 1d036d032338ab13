"""Liveness and readiness.

Both are coroutines that never wait on the thread pool the database work runs in: when the
database hangs and every thread of that pool is stuck on it, `/health` still answers at once
and `/ready` answers 503 within `READY_WITHIN` seconds. The readiness check runs on a thread
of its own, so probes do not queue behind requests either.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from upstream import __version__
from upstream.model.errors import StoreUnavailable
from upstream.query.graph_index.index import index_of
from upstream.store.engine import Store
from upstream.store.outage import RETRY_AFTER_SECONDS
from upstream.store.replicas import ReplicaSet
from upstream.store.schema_revision import is_current

log = logging.getLogger("upstream.api")
router = APIRouter(tags=["health"])

#: Seconds `/ready` waits for the database before it answers 503 (load balancers' probes
#: commonly time out after 2 s or more).
READY_WITHIN = 1.5
#: One thread for readiness checks: a check stuck on a hung database blocks only the checks
#: after it, which then answer 503 on time.
_checks = ThreadPoolExecutor(max_workers=1, thread_name_prefix="upstream-ready")


@router.get("/health", summary="Liveness")
async def health(request: Request) -> dict[str, Any]:
    """Liveness: the process answers; says which version and which kind of store it runs.

    Open even when tokens are configured, so it names the kind of database, never its
    address. It does not touch the database."""
    store: Store = request.app.state.store
    return {"status": "ok", "version": __version__, "store": store.dialect}


@router.get(
    "/ready",
    response_model=None,
    summary="Readiness",
    responses={
        503: {
            "description": "The database does not answer, migrations are pending, the "
            "lineage index is still loading, or (with replica_lag_fallback = unavailable) "
            "every read replica lags more than max_replica_lag"
        }
    },
)
async def ready(request: Request) -> dict[str, Any] | JSONResponse:
    """Readiness: the database answers (within 1.5 s), its schema is at the newest
    migration, and the lineage index is loaded, so lineage reads answer at once. A server
    reading from replicas lists each one's lag, and is not ready when reads would be
    refused because every replica lags too far behind."""
    store: Store = request.app.state.store
    check = asyncio.get_running_loop().run_in_executor(_checks, _schema_is_current, store)
    try:
        current = await asyncio.wait_for(check, READY_WITHIN)
    except TimeoutError:
        log.warning("readiness check: the database did not answer within %s s", READY_WITHIN)
        return _unavailable("the database does not answer")
    except StoreUnavailable as exc:  # an outage is no bug: one line, no traceback
        log.warning("readiness check: the database is unavailable: %s", exc)
        return _unavailable("the database does not answer")
    except Exception:  # any database failure means not ready; details go to the log only
        log.exception("readiness check failed")
        return _unavailable("the database does not answer")
    if not current:
        return _unavailable("migrations pending")
    if not await _index_loaded(store, READY_WITHIN):
        return _unavailable("the lineage index is loading")
    if store.replicas is None:
        return {"status": "ready"}
    replicas = _replica_report(store.replicas)
    if store.replicas.fallback == "unavailable" and store.replicas.engine_for_reads_now() is None:
        return _unavailable(
            "every read replica lags more than max_replica_lag", {"replicas": replicas}
        )
    return {"status": "ready", "replicas": replicas}


def _replica_report(replicas: ReplicaSet) -> list[dict[str, Any]]:
    """Each replica's lag as last measured (null when it does not answer), and whether reads
    use it."""
    in_use = replicas.engine_for_reads_now()
    return [
        {
            "replica": replica.name,
            "lag_seconds": round(replica.lag.seconds, 3) if replica.lag.answers else None,
            "lag_positions": replica.lag.positions,
            "in_use": replica.engine is in_use,
        }
        for replica in replicas.replicas
    ]


async def _index_loaded(store: Store, within: float) -> bool:
    """Whether the lineage index is loaded, waiting for it at most `within` seconds (a
    server that has just started loads it on a thread of its own)."""
    index = index_of(store.engine)
    deadline = asyncio.get_running_loop().time() + within
    while not index.loaded and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return index.loaded


def _schema_is_current(store: Store) -> bool:
    store.ping()
    return is_current(store)


def _unavailable(reason: str, more: dict[str, Any] | None = None) -> JSONResponse:
    return JSONResponse(
        {"status": "unavailable", "reason": reason, **(more or {})},
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
