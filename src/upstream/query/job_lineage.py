"""Job-centred lineage: the graph around one job, with every parameter of dataset lineage
(window, levels, direction, collapse, rollup), behind `GET /v3/namespaces/{ns}/jobs/{job}/lineage`.

It is composed from the dataset-lineage service rather than walked again, so both answers
follow the same rules (design §4.2, §3.4): `levels` levels of dataset lineage from each
dataset the job touched in the window (`upstream`: the datasets it read, `downstream`: those
it wrote, `both`: all), plus the job's own reads (upstream) or writes (downstream), which a
directed walk from those datasets does not pass through. A workflow touches what the runs
inside its runs touched. docs/dataset-lineage.md says more.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import replace

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.workflow import is_workflow
from upstream.query.answers import (
    DataEntry,
    LineageAnswer,
    ProgramEntry,
    RelationEntry,
)
from upstream.query.collapse import KeyedRelation, KeyedRelations, collapse
from upstream.query.dataset_lineage import dataset_lineage
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.visibility import VisibleNodes
from upstream.query.graph_index.walk_reads import WalkReads
from upstream.query.job_dependencies import dependencies_around, job_dependency_entries
from upstream.query.job_links import through_temporaries
from upstream.query.lineage_params import LineageParams
from upstream.query.lookup import existing_job
from upstream.query.relations import Relation
from upstream.query.run_order import newest_first
from upstream.query.workflows import members as workflow_members
from upstream.query.workflows import workflow_runs
from upstream.store import schema as t
from upstream.store.dialect import id_filters


def job_lineage(
    conn: Connection,
    namespace: str,
    name: str,
    params: LineageParams,
    *,
    max_nodes: int,
    max_relations: int,
    visibility: Visibility = EVERYTHING,
) -> LineageAnswer:
    """The lineage around one job in the response shape of dataset lineage (design §4.2);
    raises NotFound for an unknown namespace or job. At most `max_nodes` datasets and
    programs: a larger answer keeps the job's own relations first and says `"truncated"`;
    each dataset's walk is capped at `max_relations` relations as dataset lineage is. With a
    `visibility` that hides some namespaces, a hidden job is NotFound, the walks start only
    from the datasets it shows, and `hiddenNodes` and `hiddenRelations` add up what the
    job's own relations and each walk stopped at."""
    job_id = existing_job(conn, namespace, name, visibility)
    own = _own_relations(conn, job_id, params)
    wanted = {"upstream": {"read"}, "downstream": {"write"}}.get(
        params.direction, {"read", "write"}
    )
    own_wanted = [r for r in own if r.access in wanted]
    touched = _dataset_names(conn, {r.dataset_id for r in own_wanted})
    seeds = sorted({seed for seed in touched.values() if visibility.shows(seed[0])})
    plain = replace(params, collapse=frozenset())
    answers: list[LineageAnswer] = []
    if params.direction != "both":
        # The job's own edges: its readers' (writers') relations with each seed, kept for
        # the job itself or, rolled up, for the workflow runs that stand for its runs.
        across = replace(plain, levels=1, direction="both")
        centre = _centre_runs(conn, own, params)
        for seed in seeds:
            answer = dataset_lineage(
                conn,
                *seed,
                across,
                max_nodes=max_nodes,
                max_relations=max_relations,
                visibility=visibility,
            )
            answers.append(_centred(answer, seed, (namespace, name), centre))
    graph = graph_of(conn)
    visible = VisibleNodes.of(conn, graph, visibility)
    for seed in seeds:
        answers.append(
            dataset_lineage(
                conn,
                *seed,
                plain,
                max_nodes=max_nodes,
                max_relations=max_relations,
                visibility=visibility,
                visible=visible,
            )
        )
    merged = _merged(conn, answers, params, max_nodes)
    answer = _with_dependencies(conn, merged, job_id, params, max_nodes, visibility)
    if visible is None:
        return answer
    _count_own(graph, visible, own_wanted)
    return {
        **answer,
        "hiddenNodes": visible.hidden_nodes,
        "hiddenRelations": visible.hidden_relations,
    }


def _with_dependencies(
    conn: Connection,
    answer: LineageAnswer,
    job_id: uuid.UUID,
    params: LineageParams,
    max_nodes: int,
    visibility: Visibility,
) -> LineageAnswer:
    """`answer` with the control flow around the job (design §3.3), and the programs it
    names: a separate list, so no data-flow relation comes from it. The jobs it adds count
    towards `max_nodes`, nearest hops first; a cut answer says `"truncated"`. A dependency
    with an end in a namespace `visibility` hides is left out, like a hidden relation."""
    found = dependencies_around(conn, job_id, params.window, params.direction, params.levels)
    shown = {*answer["data"], *answer["programs"]}
    room = max(0, max_nodes - len(shown))
    entries, programs, cut = job_dependency_entries(conn, found, shown, room)
    if not visibility.everything:
        programs = {
            key: entry
            for key, entry in programs.items()
            if visibility.shows(entry["entityId"]["namespace"])
        }
        known = {*programs, *answer["programs"]}
        entries = [e for e in entries if e["upstream"] in known and e["downstream"] in known]
    if cut:
        answer["truncated"] = True
    answer["jobDependencies"] = entries
    answer["programs"] = dict(sorted({**programs, **answer["programs"]}.items()))
    return answer


def _count_own(graph: Graph, visible: VisibleNodes, own: list[Relation]) -> None:
    """Count the job's own relations with hidden datasets among what the answer hid."""
    known = [
        (graph.ids.datasets.known(str(r.dataset_id)), graph.ids.jobs.known(str(r.job_id)), r)
        for r in own
    ]
    rows = [
        (dataset, job, NONE if r.run_id is None else graph.ids.runs.known(str(r.run_id)), r)
        for dataset, job, r in known
        if dataset is not None and job is not None
    ]
    columns = np.array(
        [(d, j, NONE if run is None else run, r.access == "write") for d, j, run, r in rows],
        dtype=np.int64,
    ).reshape(-1, 4)
    met = np.ones(len(columns), dtype=np.bool_)
    visible.stop_at(columns[:, 0], columns[:, 1], columns[:, 2], columns[:, 3], met)


def _own_relations(conn: Connection, job_id: uuid.UUID, params: LineageParams) -> set[Relation]:
    """The job's relations in the window; a workflow's are those of the runs inside its
    runs, so its graph shows its jobs (or, rolled up, itself) rather than nothing."""
    graph = graph_of(conn)
    reads = WalkReads(graph, params.window, params.direction)
    own = reads.relations_of_jobs({job_id})
    kind = sa.select(t.jobs.c.job_type, t.jobs.c.seen_as_parent).where(t.jobs.c.id == job_id)
    job_type, seen_as_parent = conn.execute(kind).one()
    if is_workflow(job_type, seen_as_parent):
        members = workflow_members(graph, {job_id}, params.window)
        own |= reads.relations_of_runs(members)
    return own


def _dataset_names(conn: Connection, ids: set[uuid.UUID]) -> dict[uuid.UUID, tuple[str, str]]:
    """The (namespace, name) of each dataset of `ids`."""
    d = t.datasets.c
    found: dict[uuid.UUID, tuple[str, str]] = {}
    for matches in id_filters(conn, d.id, ids):
        query = sa.select(d.id, d.namespace, d.name).where(matches)
        found.update((i, (namespace, name)) for i, namespace, name in conn.execute(query))
    return found


def _centre_runs(conn: Connection, own: set[Relation], params: LineageParams) -> set[str]:
    """The run ids the job's relations carry in an answer: its own runs, or with
    rollup=workflow the workflow runs its runs belong to."""
    runs = {r.run_id for r in own if r.run_id is not None}
    if params.rollup != "workflow":
        return {str(run) for run in runs}
    links = workflow_runs(graph_of(conn), runs)
    return {str(links.get(run, run)) for run in runs}


def _centred(
    answer: LineageAnswer, seed: tuple[str, str], job: tuple[str, str], runs: set[str]
) -> LineageAnswer:
    """Only the relations of `answer` between the seed dataset and the job (or the workflow
    standing for it): its own program, or a run of `runs` (a declared relation has none)."""
    seed_key = next(
        key
        for key, entry in answer["data"].items()
        if (entry["entityId"]["namespace"], entry["entityId"]["name"]) == seed
    )
    mine = {
        key
        for key, entry in answer["programs"].items()
        if (entry["entityId"]["namespace"], entry["entityId"]["name"]) == job
    }
    kept = [
        relation
        for relation in answer["relations"]
        if relation["data"] == seed_key
        and (relation["program"] in mine or set(relation["runs"]) & runs)
    ]
    programs = {relation["program"] for relation in kept}
    return {
        **answer,
        "relations": kept,
        "data": {seed_key: answer["data"][seed_key]},
        "programs": {key: answer["programs"][key] for key in programs},
    }


def _keyed(relations: Iterable[RelationEntry]) -> Iterable[KeyedRelation]:
    """Uncollapsed relations (one access, at most one run and one component) as keys."""
    for relation in relations:
        run = relation["runs"][0] if relation["runs"] else None
        component = relation["components"][0] if relation["components"] else ""
        yield KeyedRelation(
            relation["data"], relation["program"], relation["accesses"][0], run, component
        )


def _merged(
    conn: Connection, answers: list[LineageAnswer], params: LineageParams, max_nodes: int
) -> LineageAnswer:
    """One answer from several uncollapsed ones: relations unioned, cut to `max_nodes`
    nodes in the answers' order, then collapsed as asked."""
    keyed: dict[KeyedRelation, None] = {}
    data: dict[str, DataEntry] = {}
    programs: dict[str, ProgramEntry] = {}
    truncated = any(answer.get("truncated") for answer in answers)
    nodes: set[str] = set()
    for answer in answers:
        for relation in _keyed(answer["relations"]):
            new = {relation.data, relation.program} - nodes
            if len(nodes) + len(new) > max_nodes:
                truncated = True
                continue
            nodes |= new
            keyed[relation] = None
            entry = answer["data"][relation.data]
            if relation.data not in data or entry.get("temporary"):
                data[relation.data] = entry  # temporary when any answer found it so
            programs[relation.program] = answer["programs"][relation.program]
    run_ids = {r.run for r in keyed if r.run is not None}
    relations = KeyedRelations.of(keyed)
    run_order = relations.run_places(newest_first(conn, run_ids))
    response: LineageAnswer = {
        "start": int(params.start.timestamp()),
        "end": int(params.end.timestamp()),
        "relations": collapse(relations, params.collapse, run_order),
        "data": dict(sorted(data.items())),
        "programs": dict(sorted(programs.items())),
    }
    if truncated:
        response["truncated"] = True
    if params.rollup == "jobs":
        # The temporary datasets the job itself touched were the walks' seeds, kept there.
        response["jobLinks"] = [link for answer in answers for link in answer["jobLinks"]]
        return through_temporaries(conn, response, keep=())
    return response
