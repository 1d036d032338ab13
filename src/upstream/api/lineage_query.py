"""The query parameters of the lineage routes, declared from the questions themselves
(`upstream.query.lineage_query`): each field of a question is one parameter, named, described
and typed by its field, so a parameter added there is a parameter of every route that takes
the question, in the OpenAPI document too. A bad value is a 400 naming its parameter."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, Query
from pydantic import WithJsonSchema

from upstream.api.deps import SettingsDep
from upstream.api.params import LEVELS, TIME_SCHEMA
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery

Q = TypeVar("Q")
_WINDOW = WithJsonSchema({"type": "string", "format": "time-window"})


def _annotation(field: dataclasses.Field[Any]) -> Any:
    """The parameter a field stands for, as FastAPI declares it."""
    meta = field.metadata
    query = Query(alias=meta["param"], description=meta["description"])
    kind, choices = meta["kind"], meta["choices"]
    if kind == "choice":
        return Annotated[Literal[choices] | None, query]
    if kind == "choices":
        pattern = "^(?:{0})(?:,(?:{0}))*$".format("|".join(choices))
        schema = {"type": "array", "items": {"type": "string", "pattern": pattern}}
        return Annotated[list[str] | None, query, WithJsonSchema(schema)]
    extra = {"time": TIME_SCHEMA, "levels": LEVELS, "window": _WINDOW}[kind]
    return Annotated[str | None, query, extra]


def asked(question: type[Q]) -> Callable[..., Coroutine[Any, Any, Q]]:
    """A FastAPI dependency building `question` from the query string (a coroutine, as every
    dependency is: see `upstream.api.deps`)."""
    fields = dataclasses.fields(question)  # type: ignore[arg-type]

    async def build(**values: Any) -> Q:
        given = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        return question(**{k: v for k, v in given.items() if v is not None})

    build.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_annotation(f)
            )
            for f in fields
        ],
        return_annotation=question,
    )
    build.__name__ = f"asked_{question.__name__}"
    return build


async def lineage_params(
    settings: SettingsDep, query: Annotated[LineageQuery, Depends(asked(LineageQuery))]
) -> LineageParams:
    """The walk asked for; a bad value is a 400 naming its parameter."""
    return LineageParams.parse(query, max_levels=settings.max_levels)


LineageParamsDep = Annotated[LineageParams, Depends(lineage_params)]
