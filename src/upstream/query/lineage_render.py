"""A dataset-lineage answer written from the relations a walk shows (design §4.2): the entities
named, datasets temporary to a workflow run marked, relations collapsed and sorted.

Relations arrive as integer columns (`upstream.query.relation_table.RelationTable`): the
datasets, jobs and runs an answer names are made text once each, and its relations are cut,
collapsed and sorted as integers (`upstream.query.collapse`).
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal, NamedTuple, cast

import numpy as np
import numpy.typing as npt
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.json_text import Written
from upstream.model.keys import entity_key
from upstream.model.workflow import is_workflow
from upstream.query.answers import (
    DataEntry,
    EntityId,
    LineageAnswer,
    ProgramEntry,
    RelationEntry,
)
from upstream.query.collapse import KeyedRelations, collapse
from upstream.query.collapsed_entries import DATA_HEAD, collapsed_entries, program_head
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.index import names_of
from upstream.query.graph_index.names import Name
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.workflows import job_kinds
from upstream.query.id_parts import id_parts, id_rows, listed_run_parts
from upstream.query.lineage_params import LineageParams
from upstream.query.listed_entries import listed_entries
from upstream.query.node_entries import (
    head_parts,
    node_entries,
    node_parts,
    node_text,
    temporary_text,
)
from upstream.query.relation_table import RelationTable, Vocabulary, ranked, text_ranks
from upstream.query.run_order import newest_first_places
from upstream.query.workflows import temporary_datasets
from upstream.store import schema as t
from upstream.store.dialect import id_text, text_id_filters

Ints = npt.NDArray[np.int64]
Parts = npt.NDArray[np.object_]


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
    def kind(self) -> Literal["workflow", "job"]:
        return "workflow" if self.workflow else "job"

    @property
    def key(self) -> str:
        return entity_key(self.kind, self.namespace, self.name)


def render(
    conn: Connection,
    params: LineageParams,
    seed: uuid.UUID,
    relations: RelationTable,
    omitted: Omitted | None,
    rolled_up: RolledUp | None,
    *,
    runs_in_order: bool = True,
    written: bool = False,
    nodes_written: bool = False,
) -> LineageAnswer:
    """The answer for `relations`, found from `seed`; `rolled_up` holds what a rolled-up
    walk found (workflows, temporaries), None for a walk without a rollup. Runs collapsed
    into one relation are listed newest first, or by id without `runs_in_order`. With
    `written`, for a caller that only sends the answer (`api.json_answer`), the relations
    are their JSON text (`listed_entries`, `collapsed_entries`), not entries to read; with
    `nodes_written`, `data` and `programs` are too (`node_entries`)."""
    graph = relations.graph
    temporary = _temporary(graph, relations, rolled_up)
    seed_temporary = rolled_up is not None and str(seed) in rolled_up.temporary
    workflows = rolled_up.workflows if rolled_up else set()
    numbered = all(np.all(v.numbers != NONE) for v in (relations.datasets, relations.jobs))
    nodes = (_written_nodes if nodes_written and numbered else _node_entries)(
        conn, seed, relations, (temporary, seed_temporary), workflows
    )
    keyed = KeyedRelations(
        relations.dataset,
        relations.job,
        relations.write,
        relations.run,
        relations.component,
        nodes.data_keys,
        nodes.program_keys,
        relations.runs.texts,
        relations.components.texts,
        key_ranks=nodes.key_ranks,
        heads=nodes.heads,
    )
    in_order = runs_in_order and "run" in params.collapse
    run_order = newest_first_places(graph, relations.runs) if in_order else None
    entries: list[RelationEntry]
    if not written:
        entries = collapse(keyed, params.collapse, run_order)
    elif params.collapse:
        runs = relations.runs.numbers
        if set(params.collapse) == {"run"} and np.all(runs != NONE):
            keyed = replace(keyed, run_rows=id_rows(graph.ids.runs, runs))
        if "run" in params.collapse and keyed.run_rows is None and np.all(runs != NONE):
            keyed = replace(keyed, run_parts=id_parts(graph.ids.runs, runs))
        # Only `model.json_text.answer_bytes` reads it: it places the text as it is.
        entries = cast(list[RelationEntry], collapsed_entries(keyed, params.collapse, run_order))
    else:
        runs = relations.runs.numbers
        if np.all(runs != NONE):
            keyed = replace(keyed, listed_runs=listed_run_parts(graph.ids.runs, runs))
        entries = cast(list[RelationEntry], listed_entries(keyed))
    response = cast(
        LineageAnswer,
        {
            "start": int(params.start.timestamp()),
            "end": int(params.end.timestamp()),
            **({"asOf": params.as_of.isoformat()} if params.as_of else {}),
            "relations": entries,
            "data": nodes.data,
            "programs": nodes.programs,
        },
    )
    if omitted is not None:
        response["truncated"] = True
        response["omittedNodes"] = omitted.nodes
        response["omittedRelations"] = omitted.relations
    return response


class _Nodes(NamedTuple):
    """The datasets and programs an answer names: the key of each dataset and job code of
    its relations, and its `data` and `programs`, as entries or as their text."""

    data_keys: list[str]
    program_keys: list[str]
    data: dict[str, DataEntry] | Written
    programs: dict[str, ProgramEntry] | Written
    #: For relations written as text: the keys' ranks and the entries' heads
    #: (`collapse.KeyedRelations`), made already.
    key_ranks: tuple[Ints, Ints] | None = None
    heads: tuple[Parts, Parts, Parts] | None = None


#: Which dataset codes an answer marks temporary, and whether it marks the queried one.
_Temporary = tuple[npt.NDArray[np.bool_], bool]


def _written_nodes(
    conn: Connection,
    seed: uuid.UUID,
    relations: RelationTable,
    temporary: _Temporary,
    rolled_up: Collection[str],
) -> _Nodes:
    """`_node_entries` as text, for relations whose every dataset and job the index
    numbers: each one's key, member and heads kept by its number (`node_entries`)."""
    graph = relations.graph
    dataset_names, job_names = names_of(conn)
    datasets, jobs = relations.datasets, relations.jobs
    names = partial(dataset_names.of, conn)
    data_keys, data = node_parts(graph.ids.datasets, "dataset", datasets.numbers, names)
    data_heads = head_parts(graph.ids.datasets, "dataset", datasets.numbers, names, DATA_HEAD)
    flags, seed_temporary = temporary
    if flags.any():
        data[flags] = [temporary_text(member) for member in data[flags].tolist()]
    seed_id = str(seed)
    seed_number = graph.ids.datasets.known(seed_id)
    key_list, members = data_keys.tolist(), data.tolist()
    data_ranks = text_ranks(key_list)
    with_seed: Ints | None = data_ranks
    if seed_number is None or not np.any(datasets.numbers == seed_number):
        seed_key, seed_member = node_text("dataset", *dataset_names.of(conn, [seed_id])[seed_id])
        key_list.append(seed_key)
        members.append(temporary_text(seed_member) if seed_temporary else seed_member)
        with_seed = None
    workflow = graph.workflows.are_workflows(jobs.numbers)
    if rolled_up:
        workflow |= np.fromiter((j in rolled_up for j in jobs.texts), dtype=np.bool_)
    names = partial(job_names.of, conn)
    program_keys, programs = node_parts(graph.ids.jobs, "job", jobs.numbers, names)
    reading, writing = (
        head_parts(graph.ids.jobs, "job", jobs.numbers, names, program_head(access))
        for access in (b"read", b"write")
    )
    if workflow.any():
        shown = jobs.numbers[workflow]
        keys, texts = node_parts(graph.ids.jobs, "workflow", shown, names)
        program_keys[workflow], programs[workflow] = keys, texts
        reading[workflow], writing[workflow] = (
            head_parts(graph.ids.jobs, "workflow", shown, names, program_head(access))
            for access in (b"read", b"write")
        )
    program_list = program_keys.tolist()
    program_ranks = text_ranks(program_list)
    return _Nodes(
        data_keys.tolist(),
        program_list,
        node_entries(key_list, members, with_seed),
        node_entries(program_list, programs.tolist(), program_ranks),
        (data_ranks, program_ranks),
        (data_heads, reading, writing),
    )


def _node_entries(
    conn: Connection,
    seed: uuid.UUID,
    relations: RelationTable,
    temporary: _Temporary,
    rolled_up: Collection[str],
) -> _Nodes:
    """The datasets (with `seed`) and programs of `relations` as the answer's entries; the
    datasets `temporary` flags marked, and the jobs `rolled_up` names shown as workflows."""
    graph = relations.graph
    flags, seed_temporary = temporary
    marked = {t for t, flag in zip(relations.datasets.texts, flags.tolist(), strict=True) if flag}
    if seed_temporary:
        marked.add(str(seed))
    dataset_ids = {str(seed), *relations.datasets.texts}
    dataset_names, job_names = names_of(conn)
    datasets = dataset_names.of(conn, dataset_ids)
    programs = _named_programs(
        conn, graph, relations.jobs, job_names.of(conn, relations.jobs.texts), rolled_up
    )
    data: dict[str, DataEntry] = {}
    for dataset_id in dataset_ids:
        namespace, name = datasets[dataset_id]
        entry: DataEntry = {"entityId": {"type": "dataset", "namespace": namespace, "name": name}}
        if dataset_id in marked:
            entry["temporary"] = True
        data[entity_key("dataset", namespace, name)] = entry
    shown = {p.key: {"entityId": _entity_of(p)} for p in programs.values()}
    return _Nodes(
        [entity_key("dataset", *datasets[d]) for d in relations.datasets.texts],
        [programs[j].key for j in relations.jobs.texts],
        dict(sorted(data.items())),
        cast(dict[str, ProgramEntry], dict(sorted(shown.items()))),
    )


def _named_programs(
    conn: Connection,
    graph: Graph,
    jobs: Vocabulary,
    names: dict[str, Name],
    rolled_up: Collection[str],
) -> dict[str, _Program]:
    """Each job of `names` (id text: namespace and name) as the answer shows it, a workflow
    when the index says it is one or when the rollup made it stand for the runs inside its
    runs (`rolled_up`). A job the index has not numbered (none of a walk's) is looked up."""
    number_of = dict(zip(jobs.texts, jobs.numbers.tolist(), strict=True))
    numbers = np.array([number_of[job_id] for job_id in names], dtype=np.int64)
    flags = graph.workflows.are_workflows(numbers).tolist()
    unnumbered = [uuid.UUID(j) for j, n in zip(names, numbers.tolist(), strict=True) if n == NONE]
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


def indexed_program_entries(
    conn: Connection, graph: Graph, jobs: Vocabulary
) -> dict[str, tuple[str, ProgramEntry]]:
    """Each job of `jobs` (by id text) with its key and entry, as an answer without a rollup
    shows it: named by the process's names, a workflow as the index says."""
    _, job_names = names_of(conn)
    programs = _named_programs(conn, graph, jobs, job_names.of(conn, jobs.texts), ())
    return {job_id: (p.key, {"entityId": _entity_of(p)}) for job_id, p in programs.items()}


def _entity_of(program: _Program) -> EntityId:
    kind = "workflow" if program.workflow else "job"
    return {"type": kind, "namespace": program.namespace, "name": program.name}


def _temporary(
    graph: Graph, relations: RelationTable, rolled_up: RolledUp | None
) -> npt.NDArray[np.bool_]:
    """Which dataset codes of `relations` an answer marks temporary: those a rolled-up walk
    found temporary, else those `query.workflows` finds."""
    datasets = relations.datasets
    if rolled_up is not None:
        found = (t in rolled_up.temporary for t in datasets.texts)
        return np.fromiter(found, dtype=np.bool_, count=len(datasets.texts))
    temporary = temporary_datasets(
        graph, datasets.numbers[relations.dataset], ranked(relations.run, relations.runs.numbers)
    )
    flags = np.zeros(len(datasets.texts), dtype=np.bool_)
    flags[relations.dataset[temporary]] = True
    return flags
