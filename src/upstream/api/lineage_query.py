"""The query parameters of the lineage routes, declared from the questions themselves
(`upstream.query.lineage_query`): each field of a question is one parameter, named, described
and typed by its field, so a parameter added there is a parameter of every route that takes
the question, in the OpenAPI document too. A bad value is a 400 naming its parameter.

A question is read from the query string in one pass (`Asked`), not parameter by parameter
by FastAPI: resolving ten declared parameters cost a small read more CPU than its walk. The
parameters are still declared, once, on a function FastAPI only documents (`Asked.declared`):
`upstream.api.openapi` puts them into the document where FastAPI put them before, after the
route's other query parameters.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from functools import cache, cached_property
from typing import Annotated, Any, Generic, Literal, TypeVar

from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError, WithJsonSchema
from starlette.datastructures import QueryParams

from upstream.api.params import LEVELS, TIME_SCHEMA
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery
from upstream.settings import Settings

Q = TypeVar("Q")
A = TypeVar("A")
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


def _declared(question: type[Q]) -> Callable[..., Q]:
    """A function whose signature declares each field of `question` as FastAPI would have
    it as a dependency: what the OpenAPI document says of them."""

    def declared(**values: Any) -> Q:
        raise NotImplementedError("only documented: `Asked` reads the query string")

    declared.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=_annotation(f)
            )
            for f in dataclasses.fields(question)  # type: ignore[arg-type]
        ],
        return_annotation=question,
    )
    return declared


@cache
def _choice(choices: tuple[str, ...]) -> TypeAdapter[Any]:
    """The validator of a one-of parameter, asked only for the message of a refused value:
    the same pydantic message FastAPI answered with when it validated the parameter."""
    annotation: Any = Literal[choices]
    return TypeAdapter(annotation)


class Asked(Generic[Q, A]):
    """A FastAPI dependency reading question `question` from the query string, as FastAPI
    read its declared parameters (the last of a repeated one; every value of a list one; a
    choice out of its choices refused with FastAPI's own 400 naming it), and answering what
    `then` makes of it for the request (with the app's settings). A coroutine, as every
    dependency is (see `upstream.api.deps`)."""

    def __init__(self, question: type[Q], then: Callable[[Q, Request], A]) -> None:
        self.question = question
        self.then = then
        self._fields: list[tuple[str, str, str, tuple[str, ...]]] = [
            (f.name, f.metadata["param"], f.metadata["kind"], f.metadata["choices"])
            for f in dataclasses.fields(question)  # type: ignore[arg-type]
        ]

    @cached_property
    def declared(self) -> Callable[..., Q]:
        """What the OpenAPI document says of the question's parameters (one function, which
        `upstream.api.openapi` reads once)."""
        return _declared(self.question)

    async def __call__(self, request: Request) -> A:
        return self.then(self.read(request.query_params), request)

    def read(self, given: QueryParams) -> Q:
        """The question the query string `given` asks; RequestValidationError names each
        parameter out of its choices."""
        values: dict[str, Any] = {}
        errors: list[dict[str, Any]] = []
        for name, param, kind, choices in self._fields:
            if kind == "choices":
                several = given.getlist(param)
                if several:
                    values[name] = tuple(several)
                continue
            value = given.get(param)
            if value is None:
                continue
            if kind == "choice" and value not in choices:
                errors += _refused(param, value, choices)
            values[name] = value
        if errors:
            raise RequestValidationError(errors)
        return self.question(**values)


def _refused(param: str, value: str, choices: tuple[str, ...]) -> list[dict[str, Any]]:
    """FastAPI's error for `value` out of `choices`, located at query parameter `param`."""
    try:
        _choice(choices).validate_python(value)
    except ValidationError as exc:
        return [{**error, "loc": ("query", param)} for error in exc.errors()]
    raise AssertionError(f"{value!r} is one of {choices}")  # pragma: no cover


def _as_asked(query: Q, _: Request) -> Q:
    return query


def asked(question: type[Q]) -> Asked[Q, Q]:
    """A FastAPI dependency building `question` from the query string."""
    return Asked(question, _as_asked)


def _lineage_params(query: LineageQuery, request: Request) -> LineageParams:
    """The walk asked for; a bad value is a 400 naming its parameter."""
    settings: Settings = request.app.state.settings
    return LineageParams.parse(query, max_levels=settings.max_levels)


LineageParamsDep = Annotated[LineageParams, Depends(Asked(LineageQuery, _lineage_params))]
