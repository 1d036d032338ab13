"""The query parameters of a lineage walk (design §4.1, §4.2), declared once for every route
that walks: dataset-centred and job-centred lineage take exactly the same ones."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from upstream.api.deps import SettingsDep
from upstream.api.params import LEVELS, AsOf, Collapse, End, Include, Start
from upstream.model.direction import Direction
from upstream.query.lineage_params import LineageParams, Rollup


def lineage_params(
    settings: SettingsDep,
    start: Start = None,
    end: End = None,
    levels: Annotated[
        str | None,
        Query(description="Levels to walk; default 10, at most the max_levels setting"),
        LEVELS,
    ] = None,
    collapse: Collapse = None,
    rollup: Annotated[
        Rollup | None,
        Query(
            description="workflow: jobs inside workflows become the workflow; jobs: "
            "temporary datasets are left out and the jobs around them linked job → job"
        ),
    ] = None,
    direction: Annotated[
        Direction | None, Query(description="both (default), upstream or downstream")
    ] = None,
    as_of: AsOf = None,
    include: Include = None,
) -> LineageParams:
    """The walk asked for; a bad value is a 400 naming its parameter."""
    return LineageParams.parse(
        max_levels=settings.max_levels,
        start=start,
        end=end,
        levels=levels,
        collapse=collapse or (),
        rollup=rollup,
        direction=direction,
        as_of=as_of,
        include=include or (),
    )


LineageParamsDep = Annotated[LineageParams, Depends(lineage_params)]
