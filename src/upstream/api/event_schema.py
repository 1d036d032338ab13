"""The OpenAPI description of an OpenLineage request body, derived from the event models.

The ingestion route reads its body itself (size limits, gzip, strict JSON: `api/body.py`), so
FastAPI cannot describe it; this gives the docs, client generators and schemathesis the real
shape — one event or a non-empty array of them — from the same models that validate it.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from upstream.model.events import OpenLineageEvent


def event_request_body(description: str) -> dict[str, Any]:
    """An OpenAPI `requestBody`: one OpenLineage event, or a non-empty JSON array of them."""
    schema = TypeAdapter(OpenLineageEvent).json_schema()
    definitions = schema.pop("$defs", {})
    kinds = _inline(schema, definitions)["anyOf"]  # RunEvent, JobEvent, DatasetEvent
    batch = {"type": "array", "items": {"anyOf": kinds}, "minItems": 1, "title": "Batch"}
    return {
        "required": True,
        "description": description,
        "content": {"application/json": {"schema": {"anyOf": [*kinds, batch]}}},
    }


def _inline(node: Any, definitions: dict[str, Any]) -> Any:
    """Replace each `{"$ref": "#/$defs/X"}` by X itself (the event models do not recurse)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return _inline(definitions[ref.removeprefix("#/$defs/")], definitions)
        return {key: _inline(value, definitions) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, definitions) for item in node]
    return node
