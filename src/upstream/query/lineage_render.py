"""A dataset-lineage answer written from the relations a walk shows (design §4.2): the entities
named, datasets temporary to a workflow run marked, relations collapsed and sorted.

Ids arrive as their hyphenated text (`upstream.query.graph_index.dataset_walk.ShownRelation`),
and the rows each answer names are read by that text, so no `uuid.UUID` is made per relation.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.keys import entity_key
from upstream.model.workflow import is_workflow
from upstream.query.answers import DataEntry, EntityId, LineageAnswer, ProgramEntry
from upstream.query.collapse import KeyedRelation, collapse, listed
from upstream.query.graph_index.dataset_walk import ShownRelation
from upstream.query.graph_index.index import graph_of, names_of
from upstream.query.graph_index.names import Name
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.workflows import job_kinds
from upstream.query.lineage_params import LineageParams
from upstream.query.run_order import newest_first
from upstream.query.workflows import temporary_datasets
from upstream.store import schema as t
from upstream.store.dialect import id_text, text_id_filters


@dataclass(frozen=True)
class Omitted:
    """How many of the nodes and relations a walk found a cut answer leaves out."""

    nodes: int
    relations: int


@dataclass(frozen=True)
class RolledUp:
    """What a rolled-up walk met within the levels an answer shows: the jobs standing for
    workflows and the datasets found temporary (ids as text)."""

    workflows: set[str]
    temporary: set[str]


@dataclass(frozen=True)
class _Program:
    namespace: str
    name: str
    workflow: bool

    @property
    def key(self) -> str:
        return entity_key("workflow" if self.workflow else "job", self.namespace, self.name)


def render(
    conn: Connection,
    params: LineageParams,
    seed: uuid.UUID,
    relations: list[ShownRelation],
    omitted: Omitted | None,
    rolled_up: RolledUp | None,
    *,
    runs_in_order: bool = True,
) -> LineageAnswer:
    """The answer for `relations`, found from `seed`; `rolled_up` holds what a rolled-up
    walk found (workflows, temporaries), None for a walk without a rollup. Runs collapsed
    into one relation are listed newest first, or by id without `runs_in_order`."""
    dataset_ids = {str(seed)} | {r.dataset_id for r in relations}
    dataset_names, job_names = names_of(conn)
    datasets = dataset_names.of(conn, dataset_ids)
    programs = _named_programs(
        conn,
        job_names.of(conn, {r.job_id for r in relations}),
        rolled_up.workflows if rolled_up else set(),
    )
    temporary = rolled_up.temporary if rolled_up is not None else _temporary(conn, relations)
    data_keys = {d: entity_key("dataset", *datasets[d]) for d in dataset_ids}
    program_keys = {job_id: program.key for job_id, program in programs.items()}
    if params.collapse:
        run_order: Callable[[str], Any] | None = None
        if runs_in_order and "run" in params.collapse:
            run_order = newest_first(conn, {r.run_id for r in relations if r.run_id is not None})
        keyed = [
            KeyedRelation(
                data_keys[r.dataset_id], program_keys[r.job_id], r.access, r.run_id, r.component
            )
            for r in relations
        ]
        entries = collapse(keyed, params.collapse, run_order)
    else:
        entries = listed(
            (data_keys[d], program_keys[j], access, run or "", component)
            for d, j, run, access, component in relations
        )
    data: dict[str, DataEntry] = {}
    for dataset_id in dataset_ids:
        namespace, name = datasets[dataset_id]
        entry: DataEntry = {"entityId": {"type": "dataset", "namespace": namespace, "name": name}}
        if dataset_id in temporary:
            entry["temporary"] = True
        data[data_keys[dataset_id]] = entry
    shown_programs: dict[str, ProgramEntry] = {
        p.key: {"entityId": _entity_of(p)} for p in programs.values()
    }
    response = cast(
        LineageAnswer,
        {
            "start": int(params.start.timestamp()),
            "end": int(params.end.timestamp()),
            **({"asOf": params.as_of.isoformat()} if params.as_of else {}),
            "relations": entries,
            "data": dict(sorted(data.items())),
            "programs": dict(sorted(shown_programs.items())),
        },
    )
    if omitted is not None:
        response["truncated"] = True
        response["omittedNodes"] = omitted.nodes
        response["omittedRelations"] = omitted.relations
    return response


def _named_programs(
    conn: Connection, names: dict[str, Name], rolled_up: Collection[str]
) -> dict[str, _Program]:
    """Each job of `names` (id text: namespace and name) as the answer shows it, a workflow
    when the index says it is one or when the rollup made it stand for the runs inside its
    runs (`rolled_up`). A job the index has not numbered (none of a walk's) is looked up."""
    graph = graph_of(conn)
    numbers = [graph.ids.jobs.known(job_id) for job_id in names]
    flags = graph.workflows.are_workflows(
        np.array([NONE if n is None else n for n in numbers], dtype=np.int64)
    ).tolist()
    unnumbered = [uuid.UUID(j) for j, n in zip(names, numbers, strict=True) if n is None]
    looked_up = job_kinds(conn, unnumbered) if unnumbered else {}
    return {
        job_id: _Program(namespace, name, job_id in rolled_up or looked_up.get(job_id, workflow))
        for (job_id, (namespace, name)), workflow in zip(names.items(), flags, strict=True)
    }


def _programs(
    conn: Connection, job_ids: Collection[str], rolled_up: Collection[str]
) -> dict[str, _Program]:
    """Each job of `job_ids` as the answer shows it: a workflow when it is one or when the
    rollup made it stand for the runs inside its runs (`rolled_up`)."""
    j = t.jobs.c
    found: dict[str, _Program] = {}
    dialect = conn.dialect.name
    for matches in text_id_filters(conn, j.id, job_ids):
        query = sa.select(
            id_text(j.id, dialect), j.namespace, j.name, j.job_type, j.seen_as_parent
        ).where(matches)
        for id_, namespace, name, job_type, seen_as_parent in conn.execute(query):
            workflow = id_ in rolled_up or is_workflow(job_type, seen_as_parent)
            found[id_] = _Program(namespace, name, workflow)
    return found


def program_entries(
    conn: Connection, job_ids: Collection[str]
) -> dict[str, tuple[str, ProgramEntry]]:
    """Each job of `job_ids` (by id text) with its key and entry, as answers show programs."""
    return {
        job_id: (p.key, {"entityId": _entity_of(p)})
        for job_id, p in _programs(conn, job_ids, ()).items()
    }


def _entity_of(program: _Program) -> EntityId:
    kind = "workflow" if program.workflow else "job"
    return {"type": kind, "namespace": program.namespace, "name": program.name}


def _temporary(conn: Connection, relations: list[ShownRelation]) -> set[str]:
    """The datasets of `relations` an answer marks temporary (`query.workflows`)."""
    return temporary_datasets(graph_of(conn), relations)
