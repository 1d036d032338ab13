"""`GET /v3/namespaces/{ns}/jobs/{job}/lineage`, the lineage around a job with the parameters
of dataset lineage (`upstream.query.job_lineage`), and `…/contents`, the runs and jobs inside
a workflow (`upstream.query.workflow_contents`)."""

from __future__ import annotations

from fastapi import APIRouter

from upstream.api.deps import ReaderDep
from upstream.api.errors import documented
from upstream.api.json_answer import JsonAnswer
from upstream.api.lineage_query import LineageParamsDep
from upstream.api.params import End, Start
from upstream.api.path_segments import EncodedSegmentsRoute
from upstream.api.services import read
from upstream.model.errors import NotFound
from upstream.query.answers import LineageAnswer, WorkflowContentsAnswer
from upstream.query.job_lineage import job_lineage
from upstream.query.lineage_params import LineageParams
from upstream.query.lineage_query import LineageQuery
from upstream.query.workflow_contents import workflow_contents

router = APIRouter(tags=["dataset lineage"], route_class=EncodedSegmentsRoute)

_JOB = "/v3/namespaces/{namespace}/jobs/{job}"
_RESPONSES = documented(NotFound)


@router.get(
    _JOB + "/lineage",
    summary="Lineage around a job",
    response_model=None,
    responses={200: {"model": LineageAnswer}, **_RESPONSES},
)
def get_job_lineage(
    namespace: str,
    job: str,
    reader: ReaderDep,
    params: LineageParamsDep,
) -> JsonAnswer[LineageAnswer]:
    """Relations around one job: `levels` levels of dataset lineage from the datasets it read
    (upstream), wrote (downstream) or both in the window, and its own reads or writes."""
    return read(
        reader.store,
        job_lineage,
        namespace,
        job,
        params,
        max_nodes=reader.settings.max_lineage_nodes,
        max_relations=reader.settings.max_lineage_relations,
        visibility=reader.visibility,
    )


@router.get(
    _JOB + "/contents",
    summary="Runs and jobs inside a workflow",
    response_model=None,
    responses={200: {"model": WorkflowContentsAnswer}, **_RESPONSES},
)
def get_workflow_contents(
    namespace: str,
    job: str,
    reader: ReaderDep,
    start: Start = None,
    end: End = None,
) -> JsonAnswer[WorkflowContentsAnswer]:
    """The workflow's runs that overlap the window, newest first, each with the job runs
    inside it, and the jobs of those runs with their run counts and newest run; for a token
    limited to some namespaces, the runs of its jobs only, with the others counted."""
    asked = LineageQuery(start=start, end=end)
    window = LineageParams.parse(asked, max_levels=reader.settings.max_levels).window
    return read(reader.store, workflow_contents, namespace, job, window, reader.visibility)
