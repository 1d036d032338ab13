"""Typed dependencies so handlers stay short: the store, the write path and the settings
of the app. They are coroutines, so resolving them never waits for a thread of the pool
that database work may have filled."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Generic, TypeVar

from fastapi import Depends, Header, Query, Request, Response
from fastapi.dependencies.utils import get_flat_params
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from upstream.ingest.group_commit import EventWriter, GroupCommit
from upstream.model.access import Access, Visibility
from upstream.model.read_position import PATTERN, ReadPosition
from upstream.query.positions import Views, parse_after
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.store.replicas import reads_must_include

T = TypeVar("T")


async def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_group_commit(request: Request) -> GroupCommit:
    group_commit: GroupCommit = request.app.state.group_commit
    return group_commit


async def get_event_writer(request: Request) -> EventWriter:
    """Where posted OpenLineage events go: the store, or Kafka on a publishing front."""
    writer: EventWriter = request.app.state.event_writer
    return writer


async def current_time() -> datetime:
    """Now, for answers relative to it (the dashboard's last day or week); tests override it."""
    return datetime.now(UTC)


StoreDep = Annotated[Store, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
GroupCommitDep = Annotated[GroupCommit, Depends(get_group_commit)]
NowDep = Annotated[datetime, Depends(current_time)]


#: The header a write answers with the position it committed at, and a read may send it in.
POSITION_HEADER = "X-Upstream-Position"
#: The header as a write's answer documents it in OpenAPI.
POSITION_DOC = {
    "description": "The change-log position the write committed at, or on a publishing front "
    "the Kafka offsets of its events (kafka:<topic>:<partition>:<offset>, comma-separated): "
    "pass it as `after` to a read that must see this write",
    "schema": {"type": "string", "pattern": PATTERN},
}


def answer_position(response: Response, position: ReadPosition) -> None:
    """Tell the client the position its write committed at, for its next read's `after`."""
    response.headers[POSITION_HEADER] = str(position)


#: The position header a read may send, as every read route documents it.
PositionHeader = Annotated[
    str | None,
    Header(
        alias=POSITION_HEADER,
        description="The same as `after`, as a header (a read naming both waits for both)",
    ),
]


class Documented(Generic[T]):
    """A dependency that reads its parameters from the request itself: FastAPI resolving
    declared query and header parameters cost every read more than reading them (pydantic
    validating each, per request). They are still declared, once, on `declared`, a function
    FastAPI only documents: `upstream.api.openapi` puts them into the document where FastAPI
    put a dependency's parameters. A coroutine, as every dependency is; its value is what
    `read` returns."""

    def __init__(
        self, read: Callable[[Request], Awaitable[T]], declared: Callable[..., None]
    ) -> None:
        self.read = read
        self.declared = declared

    async def __call__(self, request: Request) -> T:
        return await self.read(request)


#: `after` as a read route documents it.
AfterQuery = Annotated[
    str | None,
    Query(
        description="Answer only once this server includes the write that answered with "
        "this position (its X-Upstream-Position header: a change-log position, or a "
        "publishing front's Kafka offsets): read your own writes",
        pattern=PATTERN,
    ),
]


def _after_declared(after: AfterQuery = None, position: PositionHeader = None) -> None:
    """What a read route says of `?after=` and the position header (never called)."""


def _position_declared(position: PositionHeader = None) -> None:
    """What a Marquez read route says of the position header (never called)."""


async def read_after(request: Request) -> None:
    """Wait until this server's view includes the write the read names (see
    `upstream.query.positions`): `?after=` (the last one given, as FastAPI read it) and the
    position header; a value that is no position is refused naming `after`."""
    given = request.query_params.get("after"), request.headers.get(POSITION_HEADER)
    await _wait_for(request, parse_after(*given))


async def read_after_in_marquez(request: Request) -> None:
    """`read_after` for Marquez's routes, where `after` may already mean something else (a
    time, for `/events/lineage`): such a route keeps its own `after` and takes the position
    from the header only; the others take `?after=` too."""
    route = request.scope.get("route")
    after = None if _owns_after(route) else request.query_params.get("after")
    await _wait_for(request, parse_after(after, request.headers.get(POSITION_HEADER)))


#: Whether a Marquez route declares an `after` of its own, by route (held with its answer,
#: so a number is never taken for another route's): worked out at the route's first read,
#: where walking its dependencies at every read cost a read of Marquez's 12 µs.
_OWNING_AFTER: dict[int, tuple[object, bool]] = {}


def _owns_after(route: object) -> bool:
    held = _OWNING_AFTER.get(id(route))
    if held is None or held[0] is not route:
        owns = isinstance(route, APIRoute) and any(
            p.alias == "after" for p in get_flat_params(route.dependant)
        )
        held = _OWNING_AFTER[id(route)] = (route, owns)
    return held[1]


async def _wait_for(request: Request, wanted: ReadPosition | None) -> None:
    if wanted is not None:
        views: Views = request.app.state.views
        settings: Settings = request.app.state.settings
        included = await run_in_threadpool(views.wait_for, wanted, settings.position_wait)
        reads_must_include(included)  # the request's reads are checked against it (a replica's)


#: Every read route depends on it: `?after=` and the position header.
ReadAfter = Depends(Documented(read_after, _after_declared))
#: The same for Marquez's read routes.
ReadAfterInMarquez = Depends(Documented(read_after_in_marquez, _position_declared))


async def get_access(request: Request) -> Access:
    """What the request's token may do (`api.auth.AuthMiddleware` put it there)."""
    access: Access = request.state.access
    return access


async def get_visibility(request: Request) -> Visibility:
    """The namespaces the request's token may read."""
    return (await get_access(request)).read


AccessDep = Annotated[Access, Depends(get_access)]
VisibilityDep = Annotated[Visibility, Depends(get_visibility)]


@dataclass(frozen=True)
class Reader:
    """What a lineage read takes of the app and of the request: the store, the settings and
    the namespaces the token may read. One dependency rather than three: FastAPI spends
    more CPU resolving a dependency than these take to read."""

    store: Store
    settings: Settings
    visibility: Visibility


async def get_reader(request: Request) -> Reader:
    state = request.app.state
    return Reader(state.store, state.settings, (await get_access(request)).read)


ReaderDep = Annotated[Reader, Depends(get_reader)]
