"""Lineage questions as they are asked (design §4.1 to §4.5): one frozen object per kind of
question, holding its parameters' values unparsed, as a URL or the command line gives them.

The object goes whole from where it is asked to the service that answers it. The command line
builds one from its options and hands it to a `client.reader.LineageReader`; the HTTP client
writes it as URL parameters, each field under its `param` name; a route builds the same object
from its query string (`api.lineage_query` declares each field as a parameter); and the
database reader and the route parse it into the parameters the services walk with
(`LineageParams`, `DiffParams`, `RunLineageParams`, `FieldQuery`), each bad value named by its
parameter. A new parameter is a field here with its parsing, and the option that sets it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from upstream.model.direction import DIRECTIONS
from upstream.query.collapse import DIMENSIONS

#: How a parameter's value is written, for the API's schema: a time expression, a whole
#: number of levels, one of `choices`, several of them, or a window `START..END`.
Kind = Literal["time", "levels", "choice", "choices", "window"]
_FORMS = "epoch seconds, ISO-8601, now, or now with terms such as -7d"
_SIDES = ("incoming", "outgoing", "both")


def parameter(
    name: str, description: str, kind: Kind, choices: tuple[str, ...] = (), default: Any = None
) -> Any:
    """A field that is the query parameter `name`: what it means and how it is written."""
    metadata = {"param": name, "description": description, "kind": kind, "choices": choices}
    return field(default=default, metadata=metadata)


def _start(default: str) -> Any:
    return parameter("start", f"Window start (inclusive): {_FORMS}; default {default}", "time")


def _end() -> Any:
    return parameter("end", "Window end (exclusive); default now", "time")


def _as_of() -> Any:
    return parameter(
        "asOf",
        f"Lineage as it stood at this time ({_FORMS}): runs that had started by then, "
        "declarations as they were then; now in start and end means this time. Default: now",
        "time",
    )


def _levels(what: str, default: int) -> Any:
    return parameter(
        "levels", f"{what}; default {default}, at most the max_levels setting", "levels"
    )


def _direction(choices: tuple[str, ...], default: str) -> Any:
    others = [c for c in choices if c != default]
    listed = f"{', '.join(others[:-1])} or {others[-1]}"
    return parameter("direction", f"{default} (default), {listed}", "choice", choices)


@dataclass(frozen=True)
class LineageQuery:
    """A dataset's (or a job's) lineage, as asked (design §4.2)."""

    start: str | None = _start("now-7d")
    end: str | None = _end()
    levels: str | None = _levels("Levels to walk", 10)
    direction: str | None = _direction(tuple(DIRECTIONS), "both")
    collapse: tuple[str, ...] = parameter(
        "collapse",
        f"{', '.join(sorted(DIMENSIONS))} (repeatable, or comma-separated)",
        "choices",
        tuple(sorted(DIMENSIONS)),
        default=(),
    )
    rollup: str | None = parameter(
        "rollup", "workflow: jobs inside workflows become the workflow", "choice", ("workflow",)
    )
    as_of: str | None = _as_of()


@dataclass(frozen=True)
class DiffQuery(LineageQuery):
    """What changed in a dataset's lineage, as asked (design §4.5): two windows, or two
    times each with the window `start`..`end`; the walk's own parameters as in lineage."""

    start: str | None = parameter(
        "start", "With asOf and against: each side's window start; default now-7d", "time"
    )
    end: str | None = parameter(
        "end", "With asOf and against: each side's window end; default now", "time"
    )
    as_of: str | None = parameter(
        "asOf",
        "Instead of windows, two times: the lineage as it stood at this time (default now) "
        "against its state at `against`",
        "time",
    )
    from_window: str | None = parameter(
        "from",
        "The earlier window, START..END; default the window of the same length just before `to`",
        "window",
    )
    to_window: str | None = parameter(
        "to", "The later window, START..END; default now-7d..now", "window"
    )
    against: str | None = parameter(
        "against", "The earlier time to compare with; default seven days before asOf", "time"
    )


@dataclass(frozen=True)
class RunQuery:
    """A run's lineage, as asked (design §4.5); the run itself is in the path."""

    direction: str | None = _direction(tuple(DIRECTIONS), "both")
    levels: str | None = _levels("Runs to step through", 5)
    as_of: str | None = _as_of()


@dataclass(frozen=True)
class FieldWindowQuery:
    """The window of a question about a field's lineage (design §4.3)."""

    start: str | None = _start("now-7d")
    end: str | None = _end()
    as_of: str | None = _as_of()


@dataclass(frozen=True)
class FieldLineageQuery(FieldWindowQuery):
    """A field's lineage, as asked (design §4.3): its window, and for a summary which way
    and how far."""

    direction: str | None = _direction(_SIDES, "both")
    levels: str | None = _levels("Hops to follow", 1)
