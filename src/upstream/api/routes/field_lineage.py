"""Field lineage (design §4.3): paths of a field, fields with lineage, summaries, operations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import unquote

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from upstream.api.deps import SettingsDep, StoreDep
from upstream.api.errors import ApiError
from upstream.api.params import LEVELS, AsOf, End, Start, parsed
from upstream.query.field_lineage import (
    Direction,
    FieldQuery,
    UnknownField,
    field_operations,
    field_paths,
    fields_with_lineage,
)
from upstream.query.field_summary import field_summary

router = APIRouter(tags=["field lineage"])

_DATASET = "/v3/namespaces/{namespace:path}/datasets/{dataset:path}"
_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"description": "A bad parameter; the message names it"},
    404: {"description": "Unknown namespace, dataset or field"},
}

DirectionParam = Annotated[
    Direction | None, Query(description="incoming, outgoing or both (default)")
]
T = TypeVar("T")


def _names(request: Request, count: int, fallback: tuple[str, ...]) -> tuple[str, ...]:
    """The `count` names of the path (namespace, dataset, field), each segment decoded once,
    so `%2F` inside a name is part of it. Names sent with bare slashes fall back to the
    router's split."""
    raw = request.scope.get("raw_path")
    template = request.scope["route"].path_format.split("/")
    if isinstance(raw, bytes):
        segments = raw.decode("latin-1").split("?")[0].split("/")
        if len(segments) == len(template):
            picked = [unquote(s) for s, part in zip(segments, template, strict=True) if "{" in part]
            if len(picked) == count:
                return tuple(picked)
    return fallback


def _query(
    settings: SettingsDep,
    start: str | None,
    end: str | None,
    direction: str | None = None,
    levels: str | None = None,
    as_of: str | None = None,
) -> FieldQuery:
    return parsed(
        lambda: FieldQuery.parse(
            max_levels=settings.max_levels,
            start=start,
            end=end,
            direction=direction,
            levels=levels,
            as_of=as_of,
        )
    )


async def _answer(service: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return await run_in_threadpool(service, *args, **kwargs)
    except UnknownField as exc:
        raise ApiError(404, str(exc)) from None


@router.get(
    _DATASET + "/fields/{field:path}/lineage",
    summary="How a field was made: the paths of operations behind it",
    responses=_RESPONSES,
)
async def get_field_paths(
    request: Request,
    namespace: str,
    dataset: str,
    field: str,
    store: StoreDep,
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
    as_of: AsOf = None,
) -> dict[str, Any]:
    """Paths trimmed to the operations the field depends on, each with its runs, newest
    first."""
    ns, ds, name = _names(request, 3, (namespace, dataset, field))
    query = _query(settings, start=start, end=end, as_of=as_of)
    return await _answer(field_paths, store, ns, ds, name, query)


@router.get(
    _DATASET + "/lineage/fields",
    summary="Fields of a dataset that have lineage",
    responses=_RESPONSES,
)
async def get_fields_with_lineage(
    request: Request,
    namespace: str,
    dataset: str,
    store: StoreDep,
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
    as_of: AsOf = None,
    prefix: Annotated[str | None, Query(description="Field name prefix, any case")] = None,
    include_current: Annotated[
        bool,
        Query(
            alias="includeCurrent",
            description="Also current fields without lineage, as {name, lineage}",
        ),
    ] = False,
) -> list[Any]:
    """A sorted array of field names, or `[{"name", "lineage"}]` with includeCurrent."""
    ns, ds = _names(request, 2, (namespace, dataset))
    query = _query(settings, start=start, end=end, as_of=as_of)
    return await _answer(
        fields_with_lineage, store, ns, ds, query, prefix=prefix, include_current=include_current
    )


@router.get(
    _DATASET + "/lineage/fields/{field:path}/operations",
    summary="The operations a field was made by or went through",
    responses=_RESPONSES,
)
async def get_field_operations(
    request: Request,
    namespace: str,
    dataset: str,
    field: str,
    store: StoreDep,
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
    as_of: AsOf = None,
    direction: DirectionParam = None,
) -> dict[str, Any]:
    """Per distinct operation set: the dataset, the operations and the jobs that recorded
    them with their latest run."""
    ns, ds, name = _names(request, 3, (namespace, dataset, field))
    query = _query(settings, start=start, end=end, direction=direction, as_of=as_of)
    return await _answer(field_operations, store, ns, ds, name, query)


@router.get(
    _DATASET + "/lineage/fields/{field:path}",
    summary="Where a field comes from and goes to, across datasets",
    responses=_RESPONSES,
)
async def get_field_summary(
    request: Request,
    namespace: str,
    dataset: str,
    field: str,
    store: StoreDep,
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
    as_of: AsOf = None,
    direction: DirectionParam = None,
    levels: Annotated[
        str | None,
        Query(description="Hops to follow; default 1, at most the max_levels setting"),
        LEVELS,
    ] = None,
) -> dict[str, Any]:
    """`{"incoming": [{"dataset", "fields", "origins"}], "outgoing": [...]}` from every kind
    of field edge (operations, lineage facet, columnLineage, the job's SQL); `origins` names,
    per field, what stated the edges that reached it."""
    ns, ds, name = _names(request, 3, (namespace, dataset, field))
    query = _query(settings, start=start, end=end, direction=direction, levels=levels, as_of=as_of)
    return await _answer(field_summary, store, ns, ds, name, query)
