"""Render the HTTP API reference (`docs/api.md`) from the app's own OpenAPI document.

The reference is generated, never written by hand, so it cannot drift from the code: a test
regenerates it and fails when the committed file differs. Run `python -m upstream.apidoc` after
changing a route; `--check` only compares.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from upstream.docgen import generated_page_main
from upstream.settings import Settings

DEFAULT_OUTPUT = Path("docs/api.md")

INTRO = """\
Every endpoint of the server, generated from its OpenAPI document by
`python -m upstream.apidoc` — do not edit by hand. A running server also serves the
document itself at `/openapi.json` and an interactive explorer at `/docs`.

Conventions that hold for every endpoint:

- Errors are JSON `{"code": <status>, "message": "<one line naming the offending field or
  parameter>", "errors": [{"path", "message"}]}` (`errors` when there is more than one thing to
  point at). A bad query or path parameter is answered `400`, an invalid event `422`, an
  unknown entity `404`, a body over the size limit `413`. Nothing of a refused request is stored.
- With tokens configured, send `Authorization: Bearer <token>`: writes (`POST`) need a `write`
  token, reads (`/metrics` included) a `read` token; `401` means no, an unknown, an expired or
  a revoked token, `403` the wrong role or scope. `/health` and `/ready` are open, so probes
  need no token.
- A token issued through `/v3/tokens` carries scopes per namespace pattern (`read:finance/*`,
  `write:postgres://wh:5432`, `admin`). Its answers show only what its namespaces hold: lists
  and searches leave the rest out, a lineage walk neither shows nor passes through a hidden
  dataset or job and says how much it hid (`hiddenNodes`, `hiddenRelations`), and a hidden
  namespace, dataset, job or run is a `404` in the very words of a missing one. Raw events
  are sent as received, so it is listed only those naming nothing outside its namespaces; the
  dashboard's counts count only what it may see. No read answers `403` for a token limited
  to some namespaces. A write needs a `write` scope on the namespace it changes (`403`
  naming it; nothing is stored).
- Names and namespaces travel in path segments percent-encoded (`s3%3A%2F%2Fbucket`); each
  segment is decoded once. A path segment or query parameter that decodes to NUL, to bytes
  that are not UTF-8 or to a lone UTF-16 surrogate is a `400` naming it, on every route.
- Every parameter is checked as its type below says (numbers within their bounds, one of the
  listed values, a time); an empty value is refused like any other bad one, except for free
  text such as `prefix`. Leave a parameter out to get its default.
- Times (type `string (time-expression)`: `start`, `end`, `asOf`, `against`, `before`,
  `after`) accept epoch seconds, ISO-8601, `now` and `now-7d`-style expressions (units `ms`,
  `s`, `m`, `h`, `d`, combinable: `now-1d+4h`); times before 1970 are refused. `start` is
  inclusive and `end` exclusive, and `start` must not be after `end` (nor `after` after
  `before`). A window (type `string (time-window)`: `from`, `to`) is two times, `START..END`.
- `asOf` answers with the lineage as it stood at that time: only runs that had started by
  then, and each job's and dataset's declared lineage as its latest JobEvent or DatasetEvent
  before then stated it; `now` in `start` and `end` (and their defaults) means that time.
- Every response carries an `X-Request-ID` header (the caller's, when it sent a sane one); the
  same id tags the server's log lines for that request.
"""


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of an app built with default settings (no database is opened)."""
    from upstream.api.app import create_app

    # Defaults only: the reference must not depend on the environment it was generated in.
    document: dict[str, Any] = create_app(Settings.model_construct(), migrate=False).openapi()
    return document


def schema_type(schema: dict[str, Any]) -> str:
    """A short, readable type for a JSON schema: `integer`, `array of string`, `A | B`."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            options = [s for s in schema[combinator] if s.get("type") != "null"]
            return " \\| ".join(dict.fromkeys(schema_type(option) for option in options))
    kind = schema.get("type")
    if kind == "object" and "title" in schema:
        return f"`{schema['title']}`"
    if kind == "array":
        items = schema_type(schema.get("items", {}))
        return f"array of ({items})" if "|" in items else f"array of {items}"
    if isinstance(kind, list):
        return " \\| ".join(str(k) for k in kind)
    if kind is None:
        return "any"
    fmt = schema.get("format")
    return f"{kind} ({fmt})" if fmt else str(kind)


def table_cell(text: object) -> str:
    """Table-safe Markdown: one line, pipes escaped, `<…>` shown rather than taken for HTML."""
    one_line = " ".join(str(text).split())
    return one_line.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return ""
    value = schema["default"]
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`" if value is not None else ""


def anchor(heading: str) -> str:
    """The fragment a Markdown host (GitHub, MkDocs) gives a heading: `get-apiv1lineage`."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def render_parameters(parameters: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| Parameter | In | Type | Required | Default | Description |",
        "|---|---|---|---|---|---|",
    ]
    for parameter in parameters:
        schema = parameter.get("schema", {})
        lines.append(
            f"| `{parameter['name']}` | {parameter['in']} | {schema_type(schema)} | "
            f"{'yes' if parameter.get('required') else 'no'} | {_default(schema)} | "
            f"{table_cell(parameter.get('description') or schema.get('description') or '')} |"
        )
    return lines


def render_responses(responses: dict[str, Any]) -> list[str]:
    lines = ["| Status | Meaning |", "|---|---|"]
    for status, response in sorted(responses.items()):
        content = response.get("content", {})
        media = ", ".join(f"`{m}`" for m in content)
        meaning = table_cell(response.get("description", ""))
        lines.append(f"| {status} | {meaning}{f' ({media})' if media else ''} |")
    return lines


def render_operation(method: str, path: str, operation: dict[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    summary = operation.get("summary")
    if summary:
        lines += [f"**{summary}**", ""]
    description = operation.get("description")
    if description:
        lines += [description.strip(), ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += [*render_parameters(parameters), ""]
    body = operation.get("requestBody")
    if body:
        kinds = ", ".join(
            f"`{media}` ({schema_type(content.get('schema', {}))})"
            for media, content in body.get("content", {}).items()
        )
        required = "required" if body.get("required") else "optional"
        lines += [f"Request body ({required}): {kinds}", ""]
        if body.get("description"):
            lines += [body["description"].strip(), ""]
    lines += [*render_responses(operation.get("responses", {})), ""]
    return lines


def render_schema(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [schema["description"].strip(), ""]
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", []))
        lines += ["| Field | Type | Required | Description |", "|---|---|---|---|"]
        for field, spec in properties.items():
            lines.append(
                f"| `{field}` | {schema_type(spec)} | {'yes' if field in required else 'no'} | "
                f"{table_cell(spec.get('description', ''))} |"
            )
        lines.append("")
    return lines


def render(document: dict[str, Any]) -> str:
    """The whole reference: endpoints grouped by tag in the order the app declares them."""
    groups: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            tag = (operation.get("tags") or ["other"])[0]
            groups.setdefault(tag, []).append((method, path, operation))
    info = document.get("info", {})
    lines = [f"# HTTP API ({info.get('title', 'Upstream')} {info.get('version', '')})", ""]
    lines += [INTRO, "## Contents", ""]
    for tag, operations in groups.items():
        lines.append(f"- **{tag}**")
        for method, path, _ in operations:
            title = f"{method.upper()} {path}"
            lines.append(f"  - [`{title}`](#{anchor(title)})")
    lines.append("")
    for tag, operations in groups.items():
        lines += [f"## {tag[:1].upper()}{tag[1:]}", ""]
        for method, path, operation in operations:
            lines += render_operation(method, path, operation)
    schemas = document.get("components", {}).get("schemas", {})
    if schemas:
        lines += ["## Schemas", ""]
        for name, schema in sorted(schemas.items()):
            lines += render_schema(name, schema)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    return generated_page_main(
        "upstream.apidoc",
        "Write the HTTP API reference.",
        DEFAULT_OUTPUT,
        lambda _current: render(openapi_document()),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
