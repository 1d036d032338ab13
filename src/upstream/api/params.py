"""Query parameters as the routes declare them: typed, so that FastAPI refuses a bad value with
400 naming the parameter (`upstream.api.errors`) and the OpenAPI document says exactly what
each accepts. What the lineage services' own parsers refuse is `InvalidParameter`, the same 400.

Numbers, enums and booleans are FastAPI's to check. Time expressions (design §4.1) are strings
that the services parse (`LineageParams.parse`, the rule the CLI shares); their schemas are
declared here so the document still says what is accepted. The lineage questions' own
parameters are declared from their fields (`upstream.api.lineage_query`). Text that
is no text at all (NUL, bad UTF-8) never gets this far: `upstream.api.url_text` refuses it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Query
from pydantic import WithJsonSchema

from upstream.model.errors import InvalidParameter, Problem
from upstream.model.timeexpr import parse_time_expression
from upstream.model.window import Window
from upstream.query.lineage_params import as_of_time

#: The OpenAPI `format` of a time expression; docs/api.md explains it.
TIME_FORMAT = "time-expression"
TIME_SCHEMA = WithJsonSchema({"type": "string", "format": TIME_FORMAT})
_FORMS = "epoch seconds, ISO-8601, now, or now with terms such as -7d"

Start = Annotated[
    str | None,
    Query(description=f"Window start (inclusive): {_FORMS}; default now-7d"),
    TIME_SCHEMA,
]
End = Annotated[str | None, Query(description="Window end (exclusive); default now"), TIME_SCHEMA]
AsOf = Annotated[
    str | None,
    Query(
        alias="asOf",
        description=f"Lineage as it stood at this time ({_FORMS}): runs that had started by "
        "then, declarations as they were then; now in start and end means this time. "
        "Default: now",
    ),
    TIME_SCHEMA,
]
HistoryStart = Annotated[
    str | None,
    Query(description=f"Window start (inclusive): {_FORMS}; default 0, all history"),
    TIME_SCHEMA,
]
#: The schema of a `levels` parameter: a whole number from 1 to the server's max_levels (the
#: maximum is filled in from the settings, `upstream.api.openapi`). The value is a string that
#: the lineage services parse, refusing what Python's int() would take (`1_0`).
LEVELS = WithJsonSchema({"type": "integer", "minimum": 1})

Limit = Annotated[int, Query(ge=1, le=2**63 - 1, description="Rows to return.")]
Offset = Annotated[int, Query(ge=0, le=2**63 - 1, description="Rows to skip.")]
IncludeDeleted = Annotated[
    bool,
    Query(
        alias="includeDeleted",
        description="Also show deleted datasets, jobs and namespaces (flagged as deleted).",
    ),
]


def event_window(
    before: str | None, after: str | None, *, now: datetime | None = None
) -> tuple[datetime | None, datetime | None]:
    """`before` and `after` as instants (either may be absent: no bound), `after` not later
    than `before`; InvalidParameter names each bad one."""
    moment = now or datetime.now(UTC)
    problems: list[Problem] = []
    bounds: dict[str, datetime | None] = {"before": None, "after": None}
    for name, value in (("before", before), ("after", after)):
        try:
            bounds[name] = None if value is None else parse_time_expression(value, moment)
        except ValueError as exc:
            problems.append(Problem(name, str(exc)))
    upper, lower = bounds["before"], bounds["after"]
    if upper is not None and lower is not None and lower > upper:
        later = f"after ({lower.isoformat()}) is later than before ({upper.isoformat()})"
        problems.append(Problem("after", later))
    if problems:
        raise InvalidParameter(problems)
    return upper, lower


def history_window(as_of: str | None, *, now: datetime | None = None) -> Window | None:
    """For answers over all runs: every run that had started by `as_of` (None: every run, as
    now). InvalidParameter names `asOf` when it is no time."""
    problems: list[Problem] = []
    at, _ = as_of_time(as_of, now, problems)
    if problems:
        raise InvalidParameter(problems)
    return Window.until(at) if at is not None else None


Before = Annotated[
    str | None, Query(description=f"Only events before this time: {_FORMS}"), TIME_SCHEMA
]
After = Annotated[
    str | None,
    Query(description="Only events at or after this time (not later than before)"),
    TIME_SCHEMA,
]
