"""Field lineage (design §4.3): paths of a field, fields with lineage, summaries, operations.

Each is filtered by the token's namespaces: a dataset it may not see is missing, and what
the answer would reach through one is left out (design §5)."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import APIRouter, Depends, Query

from upstream.api.deps import ReaderDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.lineage_query import asked
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.services import read
from upstream.model.errors import NotFound
from upstream.query.answers import (
    FieldOperationsAnswer,
    FieldPathsAnswer,
    FieldsAnswer,
    FieldSummaryAnswer,
)
from upstream.query.field_lineage import (
    FieldQuery,
    Sides,
    field_operations,
    field_paths,
    fields_with_lineage,
)
from upstream.query.field_summary import field_summary
from upstream.query.lineage_query import FieldLineageQuery, FieldWindowQuery
from upstream.settings import Settings

router = APIRouter(tags=["field lineage"], route_class=EncodedSegmentsRoute)

_DATASET = "/v3/namespaces/{namespace:path}/datasets/{dataset:path}"
_RESPONSES = documented(NotFound)

DirectionParam = Annotated[Sides | None, Query(description="incoming, outgoing or both (default)")]
Window = Annotated[FieldWindowQuery, Depends(asked(FieldWindowQuery))]


def _parsed(
    settings: Settings, window: FieldWindowQuery, direction: str | None = None
) -> FieldQuery:
    """The field question of a route that asks no `levels`: its window, and a direction."""
    query = FieldLineageQuery(**dataclasses.asdict(window), direction=direction)
    return FieldQuery.parse(query, max_levels=settings.max_levels)


@router.get(
    _DATASET + "/fields/{field:path}/lineage",
    summary="How a field was made: the paths of operations behind it",
    response_model=None,
    responses={200: {"model": FieldPathsAnswer}, **_RESPONSES},
)
def get_field_paths(
    namespace: str,
    dataset: str,
    field: str,
    reader: ReaderDep,
    window: Window,
) -> JsonAnswer[FieldPathsAnswer]:
    """Paths trimmed to the operations the field depends on, each with its runs, newest
    first. A token limited to some namespaces sees only the paths of jobs and datasets it
    may see, with `hiddenNodes` and `hiddenRelations` counting those the others met."""
    query = _parsed(reader.settings, window)
    return read(reader.store, field_paths, namespace, dataset, field, query, reader.visibility)


@router.get(
    _DATASET + "/lineage/fields",
    summary="Fields of a dataset that have lineage",
    response_model=None,
    responses={200: {"model": FieldsAnswer}, **_RESPONSES},
)
def get_fields_with_lineage(
    namespace: str,
    dataset: str,
    reader: ReaderDep,
    window: Window,
    prefix: Annotated[str | None, Query(description="Field name prefix, any case")] = None,
    include_current: Annotated[
        bool,
        Query(
            alias="includeCurrent",
            description="Also current fields without lineage, as {name, lineage}",
        ),
    ] = False,
) -> JsonAnswer[FieldsAnswer]:
    """A sorted array of field names, or `[{"name", "lineage"}]` with includeCurrent. For a
    token limited to some namespaces, a field has lineage by an edge to a field it may see."""
    query = _parsed(reader.settings, window)
    return read(
        reader.store,
        fields_with_lineage,
        namespace,
        dataset,
        query,
        prefix=prefix,
        include_current=include_current,
        visibility=reader.visibility,
    )


@router.get(
    _DATASET + "/lineage/fields/{field:path}/operations",
    summary="The operations a field was made by or went through",
    response_model=None,
    responses={200: {"model": FieldOperationsAnswer}, **_RESPONSES},
)
def get_field_operations(
    namespace: str,
    dataset: str,
    field: str,
    reader: ReaderDep,
    window: Window,
    direction: DirectionParam = None,
) -> JsonAnswer[FieldOperationsAnswer]:
    """Per distinct operation set: the dataset, the operations and the jobs that recorded
    them with their latest run. A token limited to some namespaces sees those of jobs and
    datasets it may see, with `hiddenNodes` and `hiddenRelations` as for the paths."""
    query = _parsed(reader.settings, window, direction)
    return read(reader.store, field_operations, namespace, dataset, field, query, reader.visibility)


@router.get(
    _DATASET + "/lineage/fields/{field:path}",
    summary="Where a field comes from and goes to, across datasets",
    response_model=None,
    responses={200: {"model": FieldSummaryAnswer}, **_RESPONSES},
)
def get_field_summary(
    namespace: str,
    dataset: str,
    field: str,
    reader: ReaderDep,
    asked_for: Annotated[FieldLineageQuery, Depends(asked(FieldLineageQuery))],
) -> JsonAnswer[FieldSummaryAnswer]:
    """`{"incoming": [{"dataset", "fields", "origins"}], "outgoing": [...]}` from every kind
    of field edge (operations, lineage facet, columnLineage, the job's SQL); `origins` names,
    per field, what stated the edges that reached it. A token limited to some namespaces
    sees only their fields, with `hiddenNodes` and `hiddenRelations` counting the fields
    and edges left out."""
    query = FieldQuery.parse(asked_for, max_levels=reader.settings.max_levels)
    return read(reader.store, field_summary, namespace, dataset, field, query, reader.visibility)
