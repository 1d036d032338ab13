"""One error shape for every failure: `{"code", "message", "errors"?}`, and the one place that
decides the HTTP status of each error a service raises (`STATUS`).

`message` is one readable line naming what is wrong; `errors` lists each problem with the path
into the posted document (`[2].job.facets.lineage.entries[1]`) or the query parameter, when
one has a path (a body over the size limit has none).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from upstream.api.upload_rate import SlowUpload
from upstream.model.errors import (
    BrokerUnavailable,
    Conflict,
    DocumentTooLarge,
    Forbidden,
    IndexLoading,
    InvalidInput,
    InvalidParameter,
    MalformedDocument,
    NotCaughtUp,
    NotFound,
    ReplicasBehind,
    ServiceError,
    StoreUnavailable,
    path_of,
)
from upstream.store.outage import RETRY_AFTER_SECONDS

#: The status logged and counted for a client that hung up before it was answered (nginx's
#: convention); the client never sees it.
CLIENT_CLOSED_REQUEST = 499

log = logging.getLogger("upstream.api")

#: The status each error class a service raises is answered with; every class has its own
#: entry, so a new one needs a decision here (`tests/api/test_error_mapping.py` checks).
STATUS: dict[type[ServiceError], int] = {
    ServiceError: 500,
    NotFound: 404,
    # A refused document is well-formed JSON that means something impossible: 422. A refused
    # query parameter is a mistyped request, as FastAPI answers a wrongly typed one: 400.
    InvalidInput: 422,
    InvalidParameter: 400,
    # A body that is no JSON the server reads is malformed, as a bad parameter is; one over a
    # limit is too large, whatever it holds.
    MalformedDocument: 400,
    DocumentTooLarge: 413,
    Conflict: 422,
    Forbidden: 403,
    StoreUnavailable: 503,
    # The write a read waits for is stored; this server's view has not caught up with it.
    NotCaughtUp: 503,
    IndexLoading: 503,
    ReplicasBehind: 503,
    BrokerUnavailable: 503,
}

#: Seconds a client asked for a position this server has not caught up with waits to ask again.
CATCH_UP_RETRY_AFTER_SECONDS = 1


#: What each error means to a client, as the API reference states it for every route that may
#: answer it (`documented`); one entry per class of `STATUS` but the catch-all.
MEANING: dict[type[ServiceError], str] = {
    NotFound: "A namespace, dataset, job, run, field or tag it names is not stored",
    InvalidInput: "The document is invalid; the message names the path; nothing was stored",
    InvalidParameter: "A parameter is invalid; the message names it",
    MalformedDocument: "The body is not JSON the server reads (malformed, not UTF-8, a key "
    "repeated, nested too deep); the message names the path; nothing was stored",
    DocumentTooLarge: "The body, a batch or an event is over a limit; nothing was stored",
    Conflict: "The document contradicts what is stored; nothing was stored",
    Forbidden: "The token's scopes do not allow this (the message names the namespace or "
    "the scope missing); nothing was stored",
    StoreUnavailable: "The database is unavailable; retry after Retry-After seconds "
    "(re-sending events is safe)",
    IndexLoading: "The server is still loading its lineage index; retry after Retry-After seconds",
    NotCaughtUp: "This server has not yet caught up with the position asked for (after); "
    "retry after Retry-After seconds",
    ReplicasBehind: "Every read replica lags more than max_replica_lag behind the primary; "
    "retry after Retry-After seconds",
    BrokerUnavailable: "Kafka did not acknowledge the events (a publishing front); retry after "
    "Retry-After seconds (re-sending events is safe)",
}
#: A body not declared JSON: answered by the HTTP adapter itself (`api.body`), before any
#: service runs.
UNSUPPORTED_MEDIA_TYPE = 415
_ERROR_BODY = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


def documented(*errors: type[ServiceError]) -> dict[int | str, dict[str, object]]:
    """The OpenAPI `responses` of a route that may raise `errors`: each under its status in
    `STATUS`, with what it means (errors sharing a status share its entry)."""
    meanings: dict[int, list[str]] = {}
    for error in errors:
        meanings.setdefault(STATUS[error], []).append(MEANING[error])
    return {
        status: {"description": "; or ".join(texts), "content": _ERROR_BODY}
        for status, texts in sorted(meanings.items())
    }


def unsupported_media_type() -> dict[int | str, dict[str, object]]:
    """The OpenAPI response of a route that reads a JSON body, for a body not declared so."""
    description = "The body is not declared JSON: send Content-Type: application/json"
    return {UNSUPPORTED_MEDIA_TYPE: {"description": description, "content": _ERROR_BODY}}


class ApiError(Exception):
    """An error answered with `status` and a message for the client."""

    def __init__(self, status: int, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


def error_response(status: int, message: str, **extra: object) -> JSONResponse:
    return JSONResponse({"code": status, "message": message, **extra}, status_code=status)


def status_of(exc: ServiceError) -> int:
    """The status of the most specific class of `exc` that `STATUS` names."""
    return next(STATUS[k] for k in type(exc).__mro__ if k in STATUS)


def service_error_response(exc: ServiceError) -> JSONResponse:
    """The answer to an error a service raised: its status, message and located problems."""
    status = status_of(exc)
    if isinstance(exc, InvalidInput) and any(p.path for p in exc.problems):
        problems = [{"path": p.path, "message": p.message} for p in exc.problems]
        return error_response(status, exc.message, errors=problems)
    if isinstance(exc, StoreUnavailable):
        # Unreachable, hung, restarting or overloaded database, or a lineage index still
        # loading: a client should retry.
        message = (
            exc.message
            if isinstance(exc, IndexLoading | ReplicasBehind | BrokerUnavailable)
            else "the database is unavailable; retry later (re-sending events is safe)"
        )
        response = error_response(status, message)
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, NotCaughtUp):
        response = error_response(status, exc.message)
        response.headers["Retry-After"] = str(CATCH_UP_RETRY_AFTER_SECONDS)
        return response
    return error_response(status, exc.message)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, **exc.extra)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, exc: ServiceError) -> JSONResponse:
        if isinstance(exc, StoreUnavailable):
            log.error("database unavailable on %s %s: %s", request.method, request.url.path, exc)
        return service_error_response(exc)

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

    @app.exception_handler(SlowUpload)
    async def _slow_upload(request: Request, exc: SlowUpload) -> JSONResponse:
        log.info("%s %s: %s", request.method, request.url.path, exc)
        response = error_response(408, str(exc))
        response.headers["Connection"] = "close"  # the rest of the body is not read
        return response

    @app.exception_handler(ClientDisconnect)
    async def _client_left(request: Request, _: ClientDisconnect) -> Response:
        # The client's doing, not a fault of the server: INFO, and nothing is sent.
        log.info("client disconnected during %s %s", request.method, request.url.path)
        return Response(status_code=CLIENT_CLOSED_REQUEST)


class UnexpectedErrorMiddleware:
    """Answers an exception no handler took with a 500 and logs its traceback, inside the
    request's context, so both carry the request id (Starlette's own last-resort handler
    runs outside every middleware, where the id is gone)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def note_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, note_start)
        except Exception:
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            if not started:
                await error_response(500, "internal server error")(scope, receive, send)
