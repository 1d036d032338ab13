"""The parameters of a dataset-lineage query (design §4.2): parsed from query-string values,
each bad one named in the error."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from upstream.model.direction import DIRECTIONS, Direction
from upstream.model.errors import InvalidParameter, Problem, shown
from upstream.model.timeexpr import parse_time_expression
from upstream.model.window import Window
from upstream.query.collapse import DIMENSIONS, Dimension
from upstream.query.lineage_query import LineageQuery

Rollup = Literal["workflow"]
DEFAULT_START = "now-7d"
DEFAULT_END = "now"
DEFAULT_LEVELS = 10
_WHOLE_NUMBER = re.compile(r"[+-]?\d+")
#: Digits of the longest `levels` compared as a number; a longer one is above any cap and is
#: refused before Python is asked to convert it (it refuses past 4,300 digits).
_MAX_DIGITS = 18
_DIMENSIONS: dict[str, Dimension] = {d: d for d in DIMENSIONS}


@dataclass(frozen=True)
class LineageParams:
    """What a dataset-lineage query asks for; `parse` reads it from the question as asked."""

    start: datetime
    end: datetime
    levels: int = DEFAULT_LEVELS
    collapse: frozenset[Dimension] = frozenset()
    rollup: Rollup | None = None
    direction: Direction = "both"
    #: The lineage as it stood then (design §4.5); None: now.
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise InvalidParameter.at("levels", f"must be at least 1, not {self.levels}")
        if self.start > self.end:
            raise InvalidParameter.at("start", "start must not be after end")

    @property
    def window(self) -> Window:
        return Window(self.start, self.end, self.as_of)

    @classmethod
    def parse(
        cls, query: LineageQuery, *, max_levels: int, now: datetime | None = None
    ) -> LineageParams:
        """Validate every parameter; InvalidParameter lists each bad one by its name. With
        `as_of`, `now` in `start` and `end` (and their defaults) means that time: the
        lineage a query made then would have shown."""
        problems: list[Problem] = []
        as_of_at, moment = as_of_time(query.as_of, now, problems)
        start, end, rollup, direction = query.start, query.end, query.rollup, query.direction
        start_at = _time("start", DEFAULT_START if start is None else start, moment, problems)
        end_at = _time("end", DEFAULT_END if end is None else end, moment, problems)
        if start_at and end_at and start_at > end_at:
            problems.append(
                Problem(
                    "start", f"start ({start_at.isoformat()}) is after end ({end_at.isoformat()})"
                )
            )
        depth = parse_levels(query.levels, max_levels, problems)
        dimensions = _dimensions(query.collapse, problems)
        if rollup not in (None, "workflow"):
            problems.append(Problem("rollup", f"{shown(rollup)} is not supported; use 'workflow'"))
        if direction is not None and direction not in DIRECTIONS:
            problems.append(
                Problem("direction", f"{shown(direction)} is not one of both, upstream, downstream")
            )
        if problems or start_at is None or end_at is None:
            raise InvalidParameter(problems)
        return cls(
            start=start_at,
            end=end_at,
            levels=depth,
            collapse=dimensions,
            rollup="workflow" if rollup == "workflow" else None,
            direction=DIRECTIONS.get(direction or "both", "both"),
            as_of=as_of_at,
        )


def as_of_time(
    text: str | None, now: datetime | None, problems: list[Problem], name: str = "asOf"
) -> tuple[datetime | None, datetime]:
    """The `asOf` instant (None when not asked for) and the moment `now` stands for in the
    query's other time expressions: that instant, or the present."""
    present = now or datetime.now(UTC)
    if text is None:
        return None, present
    at = _time(name, text, present, problems)
    return at, at or present


def _time(name: str, text: str, now: datetime, problems: list[Problem]) -> datetime | None:
    try:
        return parse_time_expression(text, now)
    except ValueError as exc:
        problems.append(Problem(name, str(exc)))
        return None


def parse_levels(
    value: str | int | None, max_levels: int, problems: list[Problem], default: int = DEFAULT_LEVELS
) -> int:
    """`levels`: a whole number from 1 to `max_levels`, `default` when absent."""
    if value is None:
        return min(default, max_levels)
    if isinstance(value, str) and not _WHOLE_NUMBER.fullmatch(value.strip()):
        problems.append(Problem("levels", f"{shown(value)} is not a whole number"))
        return default
    if isinstance(value, str) and len(value.strip().lstrip("+-").lstrip("0")) > _MAX_DIGITS:
        bound = (
            "at least 1"
            if value.strip().startswith("-")
            else f"at most {max_levels} (the server's max_levels)"
        )
        problems.append(Problem("levels", f"must be {bound}, not {shown(value)}"))
        return default
    depth = int(value)
    if depth < 1:
        problems.append(Problem("levels", f"must be at least 1, not {depth}"))
    elif depth > max_levels:
        problems.append(
            Problem(
                "levels", f"must be at most {max_levels} (the server's max_levels), not {depth}"
            )
        )
    return depth


def _dimensions(values: Iterable[str], problems: list[Problem]) -> frozenset[Dimension]:
    """Repeated `collapse` parameters, each possibly a comma-separated list."""
    found: set[Dimension] = set()
    for value in values:
        for part in value.split(","):
            name = part.strip()
            if name in _DIMENSIONS:
                found.add(_DIMENSIONS[name])
            else:
                problems.append(
                    Problem("collapse", f"{shown(name)} is not one of access, run, component")
                )
    return frozenset(found)
