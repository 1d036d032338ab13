"""The OpenAPI document as the app really answers.

FastAPI documents a 422 "Validation Error" (its HTTPValidationError body) on every route with
parameters; Upstream answers a bad parameter with 400 and its own error body
(`upstream.api.errors`). The document is corrected once, so clients, schemathesis and the
generated reference all see the real contract.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

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


def install_openapi(app: FastAPI) -> None:
    """Replace FastAPI's stock 422 answers by the 400 the error handlers give."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            _parameter_errors_are_400(document)
            _levels_capped(document, app.state.settings.max_levels)
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _parameter_errors_are_400(document: dict[str, Any]) -> None:
    bad_request = {
        "description": "A parameter is invalid; the message names it",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            stock = responses.get("422", {}).get("content", {}).get("application/json", {})
            if stock.get("schema", {}).get("$ref") == _STOCK:
                del responses["422"]
                responses.setdefault("400", bad_request)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["Error"] = ERROR_SCHEMA


def _levels_capped(document: dict[str, Any], max_levels: int) -> None:
    """State the configured cap as the `maximum` of every `levels` and `depth` parameter."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query" and parameter["name"] in CAPPED_BY_MAX_LEVELS:
                    schema = parameter["schema"]
                    typed = next((s for s in schema.get("anyOf", []) if s.get("type")), schema)
                    typed["maximum"] = max_levels
