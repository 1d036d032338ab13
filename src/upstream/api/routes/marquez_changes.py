"""Marquez's endpoints that change what is stored: deleting entities, creating and placing
tags (design §4.4, §4.5). They need a `write` token, as every non-GET route does."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel, ConfigDict

from upstream.api.deps import StoreDep
from upstream.api.json_answer import JsonAnswer
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.routes.marquez_common import page
from upstream.api.services import change, read
from upstream.query.marquez import curation
from upstream.query.marquez.answers import NamespaceAnswer, TagsAnswer
from upstream.query.marquez.common import Page
from upstream.query.marquez.tags import list_tags

router = APIRouter(prefix="/api/v1", tags=["marquez"], route_class=EncodedSegmentsRoute)
PageDep = Annotated[Page, Depends(page)]
Doc = dict[str, Any]


class TagDescription(BaseModel):
    """The body of `PUT /tags/{tag}`: an optional description."""

    model_config = ConfigDict(extra="forbid")
    description: str | None = None


@router.delete(
    "/namespaces/{namespace}",
    response_model=None,
    responses={200: {"model": NamespaceAnswer}},
)
def delete_namespace(namespace: str, store: StoreDep) -> NamespaceAnswer:
    """Delete a namespace with its datasets and jobs; an event naming one brings it back."""
    return change(store, curation.delete_namespace, namespace)


@router.delete("/namespaces/{namespace}/datasets/{dataset}")
def delete_dataset(namespace: str, dataset: str, store: StoreDep) -> Doc:
    """Delete a dataset: it leaves lists, search and lineage until an event names it again."""
    return change(store, curation.delete_dataset, namespace, dataset)


@router.delete("/namespaces/{namespace}/jobs/{job}")
def delete_job(namespace: str, job: str, store: StoreDep) -> Doc:
    """Delete a job: it leaves lists, search and lineage until an event names it again."""
    return change(store, curation.delete_job, namespace, job)


@router.get("/tags", response_model=None, responses={200: {"model": TagsAnswer}})
def get_tags(store: StoreDep, paging: PageDep) -> JsonAnswer[TagsAnswer]:
    """Every tag, by name."""
    return read(store, list_tags, paging)


@router.put("/tags/{tag}")
def put_tag(
    tag: str, store: StoreDep, body: Annotated[TagDescription | None, Body()] = None
) -> Doc:
    """Create a tag, or change its description."""
    description = body.description if body else None
    return change(store, curation.put_tag, tag, description)


@router.post("/namespaces/{namespace}/datasets/{dataset}/tags/{tag}")
def tag_dataset(namespace: str, dataset: str, tag: str, store: StoreDep) -> Doc:
    """Tag a dataset (the tag is created if it does not exist)."""
    return change(store, curation.tag_dataset, namespace, dataset, tag)


@router.delete("/namespaces/{namespace}/datasets/{dataset}/tags/{tag}")
def untag_dataset(namespace: str, dataset: str, tag: str, store: StoreDep) -> Doc:
    """Take a tag off a dataset."""
    return change(store, curation.untag_dataset, namespace, dataset, tag)


@router.post("/namespaces/{namespace}/jobs/{job}/tags/{tag}")
def tag_job(namespace: str, job: str, tag: str, store: StoreDep) -> Doc:
    """Tag a job (the tag is created if it does not exist)."""
    return change(store, curation.tag_job, namespace, job, tag)


@router.delete("/namespaces/{namespace}/jobs/{job}/tags/{tag}")
def untag_job(namespace: str, job: str, tag: str, store: StoreDep) -> Doc:
    """Take a tag off a job."""
    return change(store, curation.untag_job, namespace, job, tag)


@router.post("/namespaces/{namespace}/datasets/{dataset}/fields/{field}/tags/{tag}")
def tag_field(namespace: str, dataset: str, field: str, tag: str, store: StoreDep) -> Doc:
    """Tag one field of a dataset (the tag is created if it does not exist)."""
    return change(store, curation.tag_field, namespace, dataset, field, tag)


@router.delete("/namespaces/{namespace}/datasets/{dataset}/fields/{field}/tags/{tag}")
def untag_field(namespace: str, dataset: str, field: str, tag: str, store: StoreDep) -> Doc:
    """Take a tag off one field of a dataset."""
    return change(store, curation.untag_field, namespace, dataset, field, tag)
