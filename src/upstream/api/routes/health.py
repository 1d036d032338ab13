"""Liveness and readiness."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text

from upstream import __version__
from upstream.api.deps import StoreDep
from upstream.store.migrate import is_current

log = logging.getLogger("upstream.api")
router = APIRouter(tags=["health"])


@router.get("/health", summary="Liveness")
def health(store: StoreDep) -> dict[str, Any]:
    """Liveness: the process answers; says which version and which kind of store it runs.

    Open even when tokens are configured, so it names the kind of database, never its
    address."""
    return {"status": "ok", "version": __version__, "store": store.dialect}


@router.get(
    "/ready",
    response_model=None,
    summary="Readiness",
    responses={503: {"description": "The database does not answer, or migrations are pending"}},
)
def ready(store: StoreDep) -> dict[str, Any] | JSONResponse:
    """Readiness: the database answers and its schema is at the newest migration."""
    try:
        with store.read() as conn:
            conn.execute(text("SELECT 1"))
        current = is_current(store)
    except Exception:  # any database failure means not ready; details go to the log only
        log.exception("readiness check failed")
        return JSONResponse(
            {"status": "unavailable", "reason": "the database does not answer"}, status_code=503
        )
    if not current:
        return JSONResponse(
            {"status": "unavailable", "reason": "migrations pending"}, status_code=503
        )
    return {"status": "ready"}
