"""One error shape for every failure: `{"code", "message", "errors"?}`.

`message` is one readable line naming what is wrong; `errors` lists each problem with the path
into the posted document (`[2].job.facets.lineage.entries[1]`) or the query parameter.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from upstream.model.errors import InvalidInput, path_of

log = logging.getLogger("upstream.api")


class ApiError(Exception):
    """An error answered with `status` and a message for the client."""

    def __init__(self, status: int, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


def error_response(status: int, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"code": status, "message": message, **extra}, status_code=status)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, **exc.extra)

    @app.exception_handler(InvalidInput)
    async def _invalid(_: Request, exc: InvalidInput) -> JSONResponse:
        return error_response(
            422,
            str(exc),
            errors=[{"path": p.path, "message": p.message} for p in exc.problems],
        )

    @app.exception_handler(RequestValidationError)
    async def _bad_params(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            loc = [p for p in err["loc"] if p not in ("query", "path", "body", "header")]
            problems.append({"path": path_of(loc), "message": str(err["msg"])})
        message = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
        return error_response(400, message or "bad request", errors=problems)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse(
            {"code": exc.status_code, "message": str(exc.detail)},
            status_code=exc.status_code,
            headers=exc.headers,
        )

    @app.exception_handler(OperationalError)
    async def _database_unavailable(request: Request, exc: OperationalError) -> JSONResponse:
        # Unreachable, restarting or overloaded database: a client should retry, not give up.
        reason = str(exc.orig or exc).strip().splitlines()[0][:200]
        log.error("database unavailable on %s %s: %s", request.method, request.url.path, reason)
        response = error_response(
            503, "the database is unavailable; retry later (re-sending events is safe)"
        )
        response.headers["Retry-After"] = "5"
        return response

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, "internal server error")
