"""The OpenAPI document as the app really answers.

FastAPI documents a 422 "Validation Error" (its HTTPValidationError body) on every route with
parameters; Upstream answers a bad parameter with 400 and its own error body
(`upstream.api.errors`). The document is corrected once, so clients, schemathesis and the
generated reference all see the real contract.

Each route's errors are documented from `api.errors.STATUS`, never written by hand: those every
route of a kind may answer are added here (a parameter refused, for a route with parameters;
the database unavailable, for a route that uses it; a body malformed, too large, invalid or
not declared JSON, for a route that reads one), and a route adds only what its own service
raises beyond them (`responses=documented(NotFound)`).

The parameters a dependency reads from the request itself rather than declaring them (a
lineage question, `upstream.api.lineage_query.Asked`; the position a read waits for,
`upstream.api.deps.Documented`), are documented here as FastAPI documents them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import BaseRoute

from upstream.api.deps import get_group_commit, get_reader, get_store
from upstream.api.errors import documented, unsupported_media_type
from upstream.model.errors import (
    DocumentTooLarge,
    InvalidInput,
    InvalidParameter,
    MalformedDocument,
    ServiceError,
    StoreUnavailable,
)

ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "integer", "description": "The HTTP status again."},
        "message": {"type": "string", "description": "What is wrong, naming the field."},
        "errors": {
            "type": "array",
            "description": "Each problem with its path into the request.",
            "items": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
}
_STOCK = "#/components/schemas/HTTPValidationError"
#: Query parameters capped by the `max_levels` setting, which the routes cannot state when
#: they are declared (the settings come later, with the app).
CAPPED_BY_MAX_LEVELS = ("levels", "depth")


def install_openapi(app: FastAPI, routes: Sequence[BaseRoute]) -> None:
    """Replace FastAPI's stock 422 answers by the 400 the error handlers give, and document
    each of `routes` (the app's own) with the errors of its kind."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
                webhooks=app.webhooks.routes,
            )
            questions_documented(app.routes, document)
            _stock_errors_removed(document)
            _route_errors_documented(routes, document)
            _levels_capped(document, app.state.settings.max_levels)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _stock_errors_removed(document: dict[str, Any]) -> None:
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            stock = responses.get("422", {}).get("content", {}).get("application/json", {})
            if stock.get("schema", {}).get("$ref") == _STOCK:
                del responses["422"]
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Error"] = ERROR_SCHEMA


def _route_errors_documented(routes: Sequence[BaseRoute], document: dict[str, Any]) -> None:
    """Add to each operation the errors every route of its kind may answer (the module)."""
    for route in routes:
        if not (isinstance(route, APIRoute) and route.include_in_schema):
            continue
        for method in route.methods or ():
            operation = document["paths"][route.path_format][method.lower()]
            dependants = list(_with_dependencies(route.dependant))
            errors: list[type[ServiceError]] = []
            if any(d.path_params or d.query_params or _declared(d) for d in dependants):
                errors.append(InvalidParameter)
            json_body = "requestBody" in operation
            if json_body:
                errors += [MalformedDocument, DocumentTooLarge, InvalidInput]
            if any(d.call in (get_store, get_reader, get_group_commit) for d in dependants):
                errors.append(StoreUnavailable)
            added = documented(*errors) | (unsupported_media_type() if json_body else {})
            responses = operation.setdefault("responses", {})
            for status, response in added.items():
                responses.setdefault(str(status), response)
            operation["responses"] = dict(sorted(responses.items()))


def questions_documented(routes: Sequence[BaseRoute], document: dict[str, Any]) -> None:
    """Document the parameters each dependency of a route (its router's too) reads itself
    (`_declared`) where FastAPI put a dependency's parameters: its query parameters after
    the route's own and those of the dependencies before it, its headers after every query
    parameter."""
    for route in iter_route_contexts(routes):  # with the dependencies of their routers
        if not (isinstance(route.original_route, APIRoute) and route.include_in_schema):
            continue
        declared = [d for d in map(_declared, _with_dependencies(route.dependant)) if d]
        for method in (route.methods or ()) if declared else ():
            operation = document["paths"][route.path_format][method.lower()]
            parameters = operation.setdefault("parameters", [])
            for declaration in declared:
                for parameter in _parameters_of(declaration):
                    before = ("path", "query") + (
                        ("header",) if parameter["in"] == "header" else ()
                    )
                    at = max(
                        (i + 1 for i, p in enumerate(parameters) if p["in"] in before),
                        default=0,
                    )
                    parameters.insert(at, parameter)


def _declared(dependant: Dependant) -> Callable[..., Any] | None:
    """The function declaring the parameters a dependency reads from the request itself
    (only documented), if it is such a dependency."""
    declared: Callable[..., Any] | None = getattr(dependant.call, "declared", None)
    return declared


@cache
def _parameters_of(declared: Callable[..., Any]) -> list[dict[str, Any]]:
    """The parameters `declared` declares, as FastAPI documents a dependency declaring
    them."""
    probe = FastAPI()
    probe.add_api_route("/", _probe, dependencies=[Depends(declared)])
    parameters: list[dict[str, Any]] = probe.openapi()["paths"]["/"]["get"].get("parameters", [])
    return parameters


def _probe() -> None:
    """The route of the document `_parameters_of` reads; never called."""


def _with_dependencies(dependant: Dependant) -> Iterator[Dependant]:
    """A route's handler and every dependency it has, however deep (the parameters of a
    shared dependency, such as paging, are the route's too)."""
    yield dependant
    for sub in dependant.dependencies:
        yield from _with_dependencies(sub)


def _levels_capped(document: dict[str, Any], max_levels: int) -> None:
    """State the configured cap as the `maximum` of every `levels` and `depth` parameter."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query" and parameter["name"] in CAPPED_BY_MAX_LEVELS:
                    schema = parameter["schema"]
                    typed = next((s for s in schema.get("anyOf", []) if s.get("type")), schema)
                    typed["maximum"] = max_levels
