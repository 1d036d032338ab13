"""The graph index (design §6) answers dataset lineage exactly as the stored rows say.

Random small graphs — runs with inputs and outputs at random times, lineage facets with job
ends, declared lineage replaced over time, deletions, runs inside (nested) workflow runs,
outputs marked temporary or created and dropped, a dataset named after a workflow run — are
stored in a random order on both stores; every walk through the index, rolled up to
workflows or not, must equal a naive walk written here from design §3.4 and §4.2 over the
rows read back with plain statements.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders import (
    BASE_TIME,
    dataset_entry,
    dataset_input,
    ds,
    job_entry,
    job_event,
    job_input,
    lineage_facet,
    run_event,
)
from tests.conftest import truncate_tables
from upstream.ingest.service import ingest_documents
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.window import Window
from upstream.model.workflow import is_workflow
from upstream.query.graph_index.dataset_walk import (
    FoundRelations,
    RolledUpRelations,
    ShownRelation,
    microseconds,
    walk_relations,
    walk_rolled_up,
)
from upstream.query.graph_index.graph import Graph
from upstream.query.graph_index.graph_export import EdgeEnd, flows_out_of, job_edges
from upstream.query.graph_index.index import graph_of
from upstream.query.graph_index.marquez_walk import marquez_graph
from upstream.query.graph_index.numbering import NONE
from upstream.query.graph_index.run_walk import run_links
from upstream.store import schema as t
from upstream.store.deletion import mark_deleted
from upstream.store.edge_rows import EDGES
from upstream.store.engine import Store

NS = "prop"
JOBS = [f"j{i}" for i in range(3)]
VERSIONS = ["v1", "v2"]


def _run_id(job: str, label: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job}/{label}"))


#: The runs other runs may name as parent, each with its job's type; a run may name only a
#: later one as its own parent, so chains nest (a j2 run inside a TASK run inside a DAG run).
#: j2 has runs of its own too: being named as parent makes it a workflow.
PARENTS = [
    ("j2", _run_id("j2", "parent"), None),
    ("t0", _run_id("t0", "1"), "TASK"),
    ("w1", _run_id("w1", "1"), None),
    ("w0", _run_id("w0", "1"), "DAG"),
    ("w0", _run_id("w0", "2"), "DAG"),
]
#: d5 is named after a workflow run, as CDAP names a workflow run's local datasets.
DATASETS = [*(f"d{i}" for i in range(5)), f"d5.{PARENTS[3][1]}"]
#: What an output may say about the dataset's life (design §3.4).
MARKS: list[dict[str, Any]] = [
    {},
    {"datasetType": {"datasetType": "JOB_OUTPUT"}},
    {"lifecycleStateChange": {"lifecycleStateChange": "CREATE"}},
    {"lifecycleStateChange": {"lifecycleStateChange": "DROP"}},
]


def _when(hour: int) -> datetime:
    return BASE_TIME + timedelta(hours=hour)


@st.composite
def _run(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One run's events: START and COMPLETE, with inputs, outputs and maybe job-end entries."""
    job = (NS, draw(st.sampled_from(JOBS)))
    # A run belongs to one job: its id is made from the job's name and a number.
    run_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{job[1]}/{draw(st.integers(1, 2**64))}"))
    start = draw(st.integers(0, 40))
    inputs = draw(st.lists(st.sampled_from(DATASETS), max_size=2, unique=True))
    outputs = draw(st.lists(st.sampled_from(DATASETS), max_size=2, unique=True))
    # Some reads and writes name a version (run lineage links them by it).
    named = {
        d: {"version": {"datasetVersion": v}}
        for d in {*inputs, *outputs}
        if (v := draw(st.sampled_from([None, *VERSIONS])))
    }
    for d in outputs:
        named[d] = {**named.get(d, {}), **draw(st.sampled_from(MARKS))}
    parent = draw(st.sampled_from([None, *PARENTS]))
    in_run = {} if parent is None else {"parent": ((NS, parent[0]), parent[1])}
    facets: dict[str, Any] = {}
    if draw(st.booleans()) and outputs:
        other = (NS, draw(st.sampled_from(JOBS)))
        entries = [
            dataset_entry(
                NS, outputs[0], [job_input(*other), *(dataset_input(NS, d) for d in inputs)]
            ),
            job_entry(inputs=[dataset_input(NS, draw(st.sampled_from(DATASETS)))]),
        ]
        facets = lineage_facet(*entries)
    events = [
        run_event(
            job,
            run_id=run_id,
            event_type="START",
            time=_when(start),
            inputs=[ds(NS, d, **named.get(d, {})) for d in inputs],
            **in_run,
        ),
    ]
    if draw(st.booleans()):
        events.append(
            run_event(
                job,
                run_id=run_id,
                time=_when(start + draw(st.integers(0, 6))),
                outputs=[ds(NS, d, **named.get(d, {})) for d in outputs],
                job_facets=facets,
                **in_run,
            )
        )
    else:
        events[0]["outputs"] = [ds(NS, d, **named.get(d, {})) for d in outputs]
        events[0]["job"]["facets"] = facets
    return events


@st.composite
def _workflow_run(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A run others may name as parent, started by its own event, maybe inside a later one,
    maybe writing a dataset itself."""
    at = draw(st.integers(0, len(PARENTS) - 1))
    job, run_id, job_type = PARENTS[at]
    outer = draw(st.sampled_from([None, *PARENTS[at + 1 :]]))
    start = draw(st.integers(0, 40))
    return [
        run_event(
            (NS, job),
            run_id=run_id,
            event_type="START",
            time=_when(start),
            outputs=[ds(NS, d) for d in draw(st.lists(st.sampled_from(DATASETS), max_size=1))],
            job_facets={} if job_type is None else {"jobType": {"jobType": job_type}},
            parent=None if outer is None else ((NS, outer[0]), outer[1]),
        )
    ]


@st.composite
def _declaration(draw: st.DrawFn) -> list[dict[str, Any]]:
    job = (NS, draw(st.sampled_from(JOBS)))
    return [
        job_event(
            job,
            time=_when(draw(st.integers(0, 40))),
            inputs=[ds(NS, d) for d in draw(st.lists(st.sampled_from(DATASETS), max_size=2))],
            outputs=[ds(NS, d) for d in draw(st.lists(st.sampled_from(DATASETS), max_size=2))],
        )
    ]


@st.composite
def _graphs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """Events in a random order, and names of datasets and jobs deleted afterwards."""
    kinds = st.one_of(_run(), _run(), _declaration(), _workflow_run())
    groups = draw(st.lists(kinds, min_size=1, max_size=8))
    events = draw(st.permutations([event for group in groups for event in group]))
    deleted = draw(st.lists(st.sampled_from(DATASETS[1:] + JOBS), max_size=2, unique=True))
    return events, deleted


# -- the naive walk -------------------------------------------------------------------------


def _in_window(started: datetime | None, ended: datetime | None, window: Window) -> bool:
    if started is None or started >= window.end or (ended is not None and ended < window.start):
        return False
    return window.as_of is None or started <= window.as_of


class _Rows:
    """Every stored row a walk may follow, read back with plain statements."""

    def __init__(self, store: Store, window: Window) -> None:
        with store.read() as conn:
            runs = {r.id: r for r in conn.execute(sa.select(t.runs))}
            self.deleted = set(conn.execute(sa.select(t.deletions.c.entity_id)).scalars())
            in_force = self._declarations(conn, window)
            self.relations = self._rows(conn, t.relations, t.declared_relations, in_force, window)
            # A run's flow names its run as its owner (`schema.owned_run`), whose row holds
            # the span; a declaration's has neither.
            run = t.owned_run(t.flows).label("run_id")
            flows = (
                sa.select(*t.flows.c, run, t.runs.c.started_at, t.runs.c.ended_at)
                .select_from(t.flows_with_runs())
                .subquery()
            )
            nothing = (sa.null().label(name) for name in ("run_id", "started_at", "ended_at"))
            declared = sa.select(*t.declared_flows.c, *nothing).subquery()
            self.flows = self._rows(conn, flows, declared, in_force, window, "scope")
            edges = [
                e
                for e in self._rows(conn, EDGES, t.declared_edges, in_force, window, "scope")
                if "job" in (e.source_type, e.target_type)
            ]
        self.window = window

        def run_in(run_id: uuid.UUID | None) -> bool:
            run = runs.get(run_id)
            return run_id is None or (
                run is not None and _in_window(run.started_at, run.ended_at, window)
            )

        self.run_in = run_in
        self.edges = [e for e in edges if run_in(e.run_id)]

    @staticmethod
    def _declarations(conn: sa.Connection, window: Window) -> set[uuid.UUID] | None:
        if window.as_of is None:
            return None
        return {
            row.id
            for row in conn.execute(sa.select(t.declarations))
            if row.declared_at <= window.as_of
            and (row.replaced_at is None or row.replaced_at > window.as_of)
        }

    @staticmethod
    def _rows(
        conn: sa.Connection,
        current: Any,
        history: sa.FromClause,
        in_force: set[uuid.UUID] | None,
        window: Window,
        run_marker: str = "run_id",
    ) -> list[Any]:
        rows = list(conn.execute(sa.select(current)))
        if in_force is None:
            return rows
        of_runs = [
            r for r in rows if (r.scope == "run" if run_marker == "scope" else r.run_id is not None)
        ]
        return of_runs + [
            r for r in conn.execute(sa.select(history)) if r.declaration_id in in_force
        ]

    def live(self, *ids: uuid.UUID | None) -> bool:
        return not any(i in self.deleted for i in ids if i is not None)


def naive_walk(rows: _Rows, seed: uuid.UUID, mode: str, levels: int) -> dict[ShownRelation, int]:
    """Design §4.2 written plainly: least depths by relaxing every step until nothing
    changes, then what each node shows at its level."""
    window = rows.window
    relations = [r for r in rows.relations if rows.run_in(r.run_id)]
    depth: dict[tuple[str, uuid.UUID], int] = {("dataset", seed): 0}
    steps: list[tuple[tuple[str, Any], tuple[str, Any], int]] = []
    if mode == "both":
        for r in relations:
            steps.append((("dataset", r.dataset_id), ("job", r.job_id), 0))
            steps.append((("job", r.job_id), ("dataset", r.dataset_id), 1))
    else:
        near, far = ("target", "source") if mode == "upstream" else ("source", "target")
        for f in rows.flows:
            flow_in = f.run_id is None or _in_window(f.started_at, f.ended_at, window)
            if flow_in and f.job_id is not None and rows.live(f.job_id):
                steps.append(
                    (
                        ("dataset", getattr(f, f"{near}_dataset_id")),
                        ("dataset", getattr(f, f"{far}_dataset_id")),
                        1,
                    )
                )
        for e in rows.edges:
            near_type, far_type = getattr(e, f"{near}_type"), getattr(e, f"{far}_type")
            steps.append(
                (
                    (near_type, getattr(e, f"{near}_{near_type}_id")),
                    (far_type, getattr(e, f"{far}_{far_type}_id")),
                    0 if near_type == "dataset" else 1,
                )
            )
    _settle(rows, steps, depth, levels)
    shown: dict[tuple[Any, ...], int] = {}

    def show(key: tuple[Any, ...], level: int) -> None:
        if rows.live(key[0], key[1]) and level < shown.get(key, levels + 2):
            shown[key] = level

    if mode == "both":
        for r in relations:
            if ("job", r.job_id) in depth:
                show(
                    (r.dataset_id, r.job_id, r.run_id, r.access, r.component),
                    depth[("job", r.job_id)] + 1,
                )
        return _as_shown(shown)
    near = "target" if mode == "upstream" else "source"
    near_access = "write" if mode == "upstream" else "read"
    for (kind, node), d in depth.items():
        level = d + 1
        if kind == "dataset":
            for r in relations:
                if r.dataset_id == node and r.access == near_access:
                    show((r.dataset_id, r.job_id, r.run_id, r.access), level)
            for f in rows.flows:
                flow_in = f.run_id is None or _in_window(f.started_at, f.ended_at, window)
                ends = (f.source_dataset_id, f.target_dataset_id, f.job_id)
                near_end = getattr(f, f"{near}_dataset_id")
                if near_end == node and flow_in and f.job_id is not None and rows.live(*ends):
                    show((f.source_dataset_id, f.job_id, f.run_id, "read"), level)
                    show((f.target_dataset_id, f.job_id, f.run_id, "write"), level)
        for key in _edge_relations(rows, kind, node, mode):
            show(key, level)
    components = _components(rows)
    return _as_shown(
        {
            (*key, component): level
            for key, level in shown.items()
            for component in components.get(key) or {""}
        }
    )


def _settle(
    rows: _Rows,
    steps: list[tuple[tuple[Any, ...], tuple[Any, ...], int]],
    depth: dict[tuple[Any, ...], int],
    levels: int,
) -> None:
    """Lower each node's `depth` along `steps` (start, end, weight) until nothing changes: the
    least depth under `levels` at which the walk reaches it, never onto a deleted node."""
    changed = True
    while changed:
        changed = False
        for start, end, weight in steps:
            if start in depth and end[1] is not None and rows.live(end[1]):
                reached = depth[start] + weight
                if reached < levels and reached < depth.get(end, levels):
                    depth[end] = reached
                    changed = True


def _edge_relations(
    rows: _Rows, kind: str, node: uuid.UUID, mode: str
) -> Iterator[tuple[Any, ...]]:
    """The relations (dataset, job, run, access) that the job-end edges at `node` (a dataset
    or a job) show, walking `mode` (upstream or downstream)."""
    near, far = ("target", "source") if mode == "upstream" else ("source", "target")
    near_access, far_access = ("write", "read") if mode == "upstream" else ("read", "write")
    for e in rows.edges:
        if getattr(e, f"{near}_type") != kind or getattr(e, f"{near}_{kind}_id") != node:
            continue
        if kind == "dataset" and getattr(e, f"{far}_type") == "job":
            yield (node, getattr(e, f"{far}_job_id"), getattr(e, f"{far}_run_id"), near_access)
        if kind == "job" and getattr(e, f"{far}_type") == "dataset":
            far_dataset = getattr(e, f"{far}_dataset_id")
            if far_dataset is not None:
                yield (far_dataset, node, getattr(e, f"{near}_run_id"), far_access)


def _components(rows: _Rows) -> dict[tuple[Any, ...], set[str]]:
    """The components each relation (dataset, job, run, access) was stated with."""
    components: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for r in rows.relations:
        components[(r.dataset_id, r.job_id, r.run_id, r.access)].add(r.component)
    return components


def _named(graph: Graph, found: FoundRelations) -> dict[ShownRelation, int]:
    """The relations a walk found (index numbers) named by their ids' text."""
    ids = graph.ids
    return {
        ShownRelation(
            ids.datasets.texts[dataset],
            ids.jobs.texts[job],
            None if run == NONE else ids.runs.texts[run],
            "write" if write else "read",
            ids.components.texts[component],
        ): level
        for (dataset, job, run, write, component), level in zip(
            found.rows.tolist(), found.levels.tolist(), strict=True
        )
    }


def _as_shown(found: dict[tuple[Any, ...], int]) -> dict[ShownRelation, int]:
    return {
        ShownRelation(str(d), str(j), None if r is None else str(r), access, component): level
        for (d, j, r, access, component), level in found.items()
    }


# -- the property ---------------------------------------------------------------------------


@pytest.fixture
def fresh(db_url: str) -> Iterator[Any]:
    """A function that gives an empty store for each example."""
    stores: list[Store] = []

    def make() -> Store:
        if db_url.startswith("postgresql"):
            truncate_tables(db_url)
        else:
            emptied = Store(db_url)
            with emptied.engine.begin() as conn:
                for table in reversed(t.metadata.sorted_tables):
                    if table is not t.change_log_head:
                        conn.execute(table.delete())
                conn.execute(t.change_log_head.update().values(position=0))
            emptied.dispose()
        stores.append(Store(db_url))
        return stores[-1]

    yield make
    for store in stores:
        store.dispose()


WINDOWS = [
    Window(_when(-1), _when(60)),
    Window(_when(10), _when(25)),
    Window(_when(-1), _when(60), as_of=_when(20)),
]


def _stored(store: Any, graph: tuple[list[dict[str, Any]], list[str]]) -> Any:
    """`store` holding the graph's events, one at a time, and its deleted datasets and jobs."""
    events, deleted = graph
    for event in events:
        ingest_documents(store, [event], batch=False)
    datasets = [DatasetRef(NS, name).id for name in deleted if name.startswith("d")]
    jobs = [JobRef(NS, name).id for name in deleted if name.startswith("j")]
    store.write(lambda conn: mark_deleted(conn, "dataset", datasets, BASE_TIME + timedelta(days=9)))
    store.write(lambda conn: mark_deleted(conn, "job", jobs, BASE_TIME + timedelta(days=9)))
    return store


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=_graphs())
def test_index_walks_equal_the_naive_walk(
    fresh: Any, graph: tuple[list[dict[str, Any]], list[str]]
) -> None:
    deleted = graph[1]
    store = _stored(fresh(), graph)
    seeds = [DatasetRef(NS, name).id for name in DATASETS if name not in deleted]
    for window in WINDOWS:
        rows = _Rows(store, window)
        with store.read() as conn:
            graph_index = graph_of(conn)
            for seed in seeds:
                number = graph_index.ids.datasets.known(str(seed))
                for mode in ("both", "upstream", "downstream"):
                    for levels in (1, 2, 4):
                        expected = naive_walk(rows, seed, mode, levels)
                        found = (
                            {}
                            if number is None
                            else _named(
                                graph_index,
                                walk_relations(graph_index, number, mode, levels, window),
                            )
                        )
                        assert found == expected, (mode, levels, window, seed)


# -- rolled up to workflows ----------------------------------------------------------------


class _Workflows:
    """Parent chains, workflow jobs, dataset names and temporary marks, read back plainly,
    and the rules of design §3.4 over them written out."""

    def __init__(self, store: Store) -> None:
        with store.read() as conn:
            self.runs = {r.id: r for r in conn.execute(sa.select(t.runs))}
            self.workflow_jobs = {
                j.id
                for j in conn.execute(sa.select(t.jobs))
                if is_workflow(j.job_type, j.seen_as_parent)
            }
            self.names = {d.id: d.name for d in conn.execute(sa.select(t.datasets))}
            self.marks = [r for r in conn.execute(sa.select(t.relations)) if r.run_id is not None]

    def chain(self, run_id: uuid.UUID | None) -> list[uuid.UUID]:
        """The run and its ancestors that have a row, nearest first."""
        found: list[uuid.UUID] = []
        while run_id is not None and run_id in self.runs:
            found.append(run_id)
            run_id = self.runs[run_id].parent_run_id
        return found

    def workflow_run(self, run_id: uuid.UUID | None) -> uuid.UUID | None:
        chain = self.chain(run_id)
        for run in chain:
            if self.runs[run].job_id in self.workflow_jobs:
                return run
        return chain[-1] if len(chain) > 1 else None

    def job(self, run_id: uuid.UUID) -> uuid.UUID:
        job: uuid.UUID = self.runs[run_id].job_id
        return job

    def temporary(self, dataset: uuid.UUID, workflow_run: uuid.UUID) -> bool:
        if self.names[dataset].lower().endswith(str(workflow_run)):
            return True
        states: set[str] = set()
        for mark in self.marks:
            if mark.dataset_id == dataset and self.workflow_run(mark.run_id) == workflow_run:
                if mark.temporary:
                    return True
                states |= {state.upper() for state in mark.lifecycles or ()}
        return {"CREATE", "DROP"} <= states

    def members(self, jobs: set[uuid.UUID], window: Window) -> set[uuid.UUID]:
        """Runs whose workflow run is a run of `jobs`, below a run of `jobs` that had no
        events or overlaps the window."""

        def root(run: uuid.UUID) -> bool:
            row = self.runs[run]
            in_window = _in_window(row.started_at, row.ended_at, window)
            return row.job_id in jobs and (not row.has_events or in_window)

        return {
            run
            for run in self.runs
            if (link := self.workflow_run(run)) is not None
            and self.job(link) in jobs
            and any(root(above) for above in self.chain(run))
        }


_Rolled = tuple[dict[ShownRelation, int], dict[str, int], dict[str, int]]


class _Rollup:
    """A rolled-up walk's view: rows rolled up, and what it met, each at its least level."""

    def __init__(self, flows_of: _Workflows) -> None:
        self.flows_of = flows_of
        self.temporary: dict[uuid.UUID, int] = {}
        self.workflows: dict[uuid.UUID, int] = {}

    def view(self, key: tuple[Any, ...], level: int) -> tuple[Any, ...] | None:
        """`key` (dataset, job, run, access, component) rolled up; None when left out."""
        dataset, _, run, *rest = key
        link = self.flows_of.workflow_run(run)
        if link is None:
            return key
        if self.flows_of.temporary(dataset, link):
            self.temporary[dataset] = min(level, self.temporary.get(dataset, level))
            return None
        job = self.flows_of.job(link)
        self.workflows[job] = min(level, self.workflows.get(job, level))
        return (dataset, job, link, *rest)

    def answer(self, shown: dict[tuple[Any, ...], int]) -> _Rolled:
        return (
            _as_shown(shown),
            {str(job): level for job, level in self.workflows.items()},
            {str(dataset): level for dataset, level in self.temporary.items()},
        )


def naive_rolled_up(
    rows: _Rows, flows_of: _Workflows, seed: uuid.UUID, mode: str, levels: int
) -> _Rolled:
    """rollup=workflow written plainly. Along data flow: a step made by a run inside
    workflow run W into a dataset temporary to W reaches that dataset within W (a node of
    its own, at the same depth), from which only W's flows go on; what a node shows is
    rolled up. `both`: level by level, as design §4.2 says CDAP walks it."""
    if mode == "both":
        return _naive_rolled_both(rows, flows_of, seed, levels)
    window, rollup = rows.window, _Rollup(flows_of)
    relations = [r for r in rows.relations if rows.run_in(r.run_id)]
    near, far = ("target", "source") if mode == "upstream" else ("source", "target")
    near_access = "write" if mode == "upstream" else "read"
    flows = [
        f
        for f in rows.flows
        if (f.run_id is None or _in_window(f.started_at, f.ended_at, window))
        and f.job_id is not None
        and rows.live(f.source_dataset_id, f.target_dataset_id, f.job_id)
    ]

    def into(dataset: uuid.UUID, run: uuid.UUID | None) -> tuple[tuple[Any, ...], int]:
        link = flows_of.workflow_run(run)
        if link is not None and flows_of.temporary(dataset, link):
            return ("within", dataset, link), 0
        return ("dataset", dataset, None), 1

    steps: list[tuple[tuple[Any, ...], tuple[Any, ...], int]] = []
    for f in flows:
        start, end = getattr(f, f"{near}_dataset_id"), getattr(f, f"{far}_dataset_id")
        node, weight = into(end, f.run_id)
        steps.append((("dataset", start, None), node, weight))
        steps.append((("within", start, flows_of.workflow_run(f.run_id)), node, weight))
    for e in rows.edges:
        near_type, far_type = getattr(e, f"{near}_type"), getattr(e, f"{far}_type")
        start = (near_type, getattr(e, f"{near}_{near_type}_id"), None)
        if far_type == "job":
            weight = 0 if near_type == "dataset" else 1
            steps.append((start, ("job", getattr(e, f"{far}_job_id"), None), weight))
        elif near_type == "job" and getattr(e, f"{far}_dataset_id") is not None:
            # The step is the job end's run's, as the relation it shows is.
            far_dataset, run = getattr(e, f"{far}_dataset_id"), getattr(e, f"{near}_run_id")
            steps.append((start, *into(far_dataset, run)))
    depth: dict[tuple[Any, ...], int] = {("dataset", seed, None): 0}
    _settle(rows, steps, depth, levels)
    shown: dict[tuple[Any, ...], int] = {}

    def show(key: tuple[Any, ...], level: int) -> None:
        if rows.live(key[0], key[1]) and level < shown.get(key, levels + 2):
            shown[key] = level

    for (kind, node, link), d in depth.items():
        level = d + 1
        if kind in ("dataset", "within"):
            # Within a workflow run, only its runs' rows.
            ours = [
                r for r in relations if kind == "dataset" or flows_of.workflow_run(r.run_id) == link
            ]
            for r in ours:
                if r.dataset_id == node and r.access == near_access:
                    show((r.dataset_id, r.job_id, r.run_id, r.access), level)
            for f in flows:
                ours_f = kind == "dataset" or flows_of.workflow_run(f.run_id) == link
                if getattr(f, f"{near}_dataset_id") == node and ours_f:
                    show((f.source_dataset_id, f.job_id, f.run_id, "read"), level)
                    show((f.target_dataset_id, f.job_id, f.run_id, "write"), level)
        if kind == "within":
            continue
        for key in _edge_relations(rows, kind, node, mode):
            show(key, level)
    components = _components(rows)
    rolled: dict[tuple[Any, ...], int] = {}
    for key, level in shown.items():
        for component in components.get(key) or {""}:
            found = rollup.view((*key, component), level)
            if found is not None and level < rolled.get(found, levels + 2):
                rolled[found] = level
    return rollup.answer(rolled)


def _naive_rolled_both(rows: _Rows, flows_of: _Workflows, seed: uuid.UUID, levels: int) -> _Rolled:
    rollup = _Rollup(flows_of)
    relations = [
        (r.dataset_id, r.job_id, r.run_id, r.access, r.component)
        for r in rows.relations
        if rows.run_in(r.run_id) and rows.live(r.dataset_id, r.job_id)
    ]
    shown: dict[tuple[Any, ...], int] = {}

    def view(keys: list[tuple[Any, ...]], level: int) -> set[tuple[Any, ...]]:
        return {found for key in keys if (found := rollup.view(key, level)) is not None}

    seen_datasets, seen_programs, frontier = {seed}, set(), {seed}
    for level in range(1, levels + 1):
        if not frontier:
            break
        touching = view([r for r in relations if r[0] in frontier], level)
        programs = {r[1] for r in touching} - seen_programs
        seen_programs |= programs
        theirs = view([r for r in relations if r[1] in programs], level)
        members = flows_of.members(programs & set(rollup.workflows), rows.window)
        theirs |= view([r for r in relations if r[2] in members], level)
        theirs = {r for r in theirs if r[1] in programs}
        for key in touching | theirs:
            shown.setdefault(key, level)
        frontier = {r[0] for r in theirs} - seen_datasets
        seen_datasets |= frontier
    return rollup.answer(shown)


def _parts(graph: Graph, found: RolledUpRelations) -> _Rolled:
    return _named(graph, found.found), found.workflows, found.temporary


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=_graphs())
def test_rolled_up_walks_equal_the_naive_walk(
    fresh: Any, graph: tuple[list[dict[str, Any]], list[str]]
) -> None:
    deleted = graph[1]
    store = _stored(fresh(), graph)
    flows_of = _Workflows(store)
    seeds = [DatasetRef(NS, name).id for name in DATASETS if name not in deleted]
    for window in WINDOWS:
        rows = _Rows(store, window)
        with store.read() as conn:
            graph_index = graph_of(conn)
        for seed in seeds:
            number = graph_index.ids.datasets.known(str(seed))
            for mode in ("both", "upstream", "downstream"):
                for levels in (1, 2, 4):
                    expected = naive_rolled_up(rows, flows_of, seed, mode, levels)
                    found = (
                        ({}, {}, {})
                        if number is None
                        else _parts(
                            graph_index,
                            walk_rolled_up(graph_index, number, mode, levels, window),
                        )
                    )
                    assert found == expected, (mode, levels, window, seed)


# -- the Marquez graph, run lineage and the whole graph -------------------------------------


def naive_marquez(
    rows: _Rows, kind: str, seed: uuid.UUID, depth: int, max_nodes: int
) -> tuple[set[str], set[str], bool]:
    """Design §4.4 written plainly: per level, downstream then upstream, each direction's
    step adds nodes in the order of sorted rows, and the graph stops growing at the cap."""
    window = rows.window
    relations = {
        (r.dataset_id, r.job_id, r.access)
        for r in rows.relations
        if rows.run_in(r.run_id) and rows.live(r.dataset_id, r.job_id)
    }
    flows = {
        (f.source_dataset_id, f.target_dataset_id, f.job_id, f.run_id)
        for f in rows.flows
        if (f.run_id is None or _in_window(f.started_at, f.ended_at, window))
        and rows.live(f.source_dataset_id, f.target_dataset_id, f.job_id)
    }
    links = {
        (e.source_job_id, e.target_job_id)
        for e in rows.edges
        if e.source_type == e.target_type == "job" and rows.live(e.source_job_id, e.target_job_id)
    }
    graph: list[tuple[str, uuid.UUID]] = []
    cut = [False]

    def add(node: tuple[str, uuid.UUID]) -> bool:
        if node in graph:
            return True
        if len(graph) >= max_nodes:
            cut[0] = True
            return False
        graph.append(node)
        return True

    def reach(
        node: tuple[str, uuid.UUID],
        seen: set[tuple[str, uuid.UUID]],
        following: set[tuple[str, uuid.UUID]],
    ) -> None:
        if add(node) and node not in seen:
            seen.add(node)
            following.add(node)

    add((kind, seed))
    walks = {step: ({(kind, seed)}, {(kind, seed)}) for step in ("downstream", "upstream")}
    for _ in range(depth):
        if not any(frontier for frontier, _ in walks.values()):
            break
        for step, (frontier, seen) in list(walks.items()):
            down = step == "downstream"
            near, far = ("read", "write") if down else ("write", "read")
            following: set[tuple[str, uuid.UUID]] = set()
            datasets = {n for k, n in frontier if k == "dataset"}
            jobs = {n for k, n in frontier if k == "job"}
            met: set[uuid.UUID] = set()
            for _, j, _ in sorted(r for r in relations if r[0] in datasets and r[2] == near):
                if add(("job", j)):
                    met.add(j)
            anchored = [f for f in flows if (f[0] if down else f[1]) in datasets]
            for source, target, job, _ in sorted(
                anchored, key=lambda f: (f[0].int, f[1].int, f[2].int if f[2] else -1)
            ):
                if job is not None:
                    if not add(("job", job)):
                        continue
                    met.add(job)
                reach(("dataset", target if down else source), seen, following)
            for d, _, _ in sorted(r for r in relations if r[1] in jobs and r[2] == far):
                reach(("dataset", d), seen, following)
            linked = [pair for pair in links if (pair[0] if down else pair[1]) in jobs | met]
            for source, target in sorted(linked):
                reach(("job", target if down else source), seen, following)
            walks[step] = (following, seen)
    datasets_found = {str(n) for k, n in graph if k == "dataset"}
    return datasets_found, {str(n) for k, n in graph if k == "job"}, cut[0]


def naive_run_links(
    store: Store, seed: uuid.UUID, direction: str, levels: int, as_of: datetime | None
) -> set[tuple[str, str, str | None, int]]:
    """Design §4.5 written plainly: each read's writer by the rule, least levels by
    relaxing every link until nothing changes."""
    with store.read() as conn:
        runs = {r.id: r for r in conn.execute(sa.select(t.runs))}
        relations = [r for r in conn.execute(sa.select(t.relations)) if r.run_id is not None]
    writes = [r for r in relations if r.access == "write"]

    def writer_of(read: Any) -> uuid.UUID | None:
        others = [w for w in writes if w.dataset_id == read.dataset_id and w.run_id != read.run_id]
        named = [w for w in others if read.version is not None and w.version == read.version]
        if named:
            return max(named, key=lambda w: (w.event_time, w.run_id.int)).run_id
        started = runs[read.run_id].started_at
        done = [
            w
            for w in others
            if runs[w.run_id].state == "COMPLETE"
            and runs[w.run_id].ended_at is not None
            and started is not None
            and runs[w.run_id].ended_at <= started
        ]
        latest = max(done, key=lambda w: (runs[w.run_id].ended_at, w.run_id.int), default=None)
        return None if latest is None else latest.run_id

    reads = [(r, writer_of(r)) for r in relations if r.access == "read"]
    depth = {seed: 0}
    links: dict[tuple[str, str, str | None], int] = {}
    changed = True
    while changed:
        changed = False
        for read, writer in reads:
            near = read.run_id if direction == "upstream" else writer
            far = writer if direction == "upstream" else read.run_id
            if near not in depth or depth[near] + 1 > levels:
                continue
            if direction == "downstream":
                started = runs[read.run_id].started_at
                if writer is None or writer == read.run_id:
                    continue
                if as_of is not None and (started is None or started > as_of):
                    continue
            level = depth[near] + 1
            key = (str(read.run_id), str(read.dataset_id), None if writer is None else str(writer))
            links[key] = min(level, links.get(key, level))
            if far is not None and level < depth.get(far, levels + 1):
                depth[far] = level
                changed = True
    return {(*key, level) for key, level in links.items()}


MARQUEZ_WINDOWS: list[Window | None] = [None, Window.until(_when(20))]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=_graphs())
def test_index_answers_marquez_runs_and_export_as_the_rows_say(
    fresh: Any, graph: tuple[list[dict[str, Any]], list[str]]
) -> None:
    deleted = graph[1]
    store = _stored(fresh(), graph)
    seeds = [("dataset", DatasetRef(NS, name).id) for name in DATASETS if name not in deleted]
    seeds += [("job", JobRef(NS, name).id) for name in JOBS if name not in deleted]
    for window in MARQUEZ_WINDOWS:
        # Every run of these events started: a wide window holds every run, as no window does.
        rows = _Rows(store, window or Window(_when(-1000), _when(1000)))
        with store.read() as conn:
            index = graph_of(conn)
        for kind, seed in seeds:
            for depth in (1, 3):
                for max_nodes in (3, 1000):
                    found = marquez_graph(index, kind, str(seed), depth, max_nodes, window)
                    expected = naive_marquez(rows, kind, seed, depth, max_nodes)
                    assert (found.datasets, found.jobs, found.truncated) == expected, (
                        kind, seed, depth, max_nodes, window,
                    )  # fmt: skip
        every = {str(DatasetRef(NS, name).id) for name in DATASETS}
        in_window = {
            (str(f.source_dataset_id), str(f.target_dataset_id), _text(f.job_id), _text(f.run_id))
            for f in rows.flows
            if (f.run_id is None or _in_window(f.started_at, f.ended_at, rows.window))
            and rows.live(f.source_dataset_id, f.target_dataset_id, f.job_id)
        }
        assert {f[:4] for f in flows_out_of(index, every, window)} == in_window
        job_ends = {
            (
                EdgeEnd(e.source_type, _text(getattr(e, f"source_{e.source_type}_id"))),
                EdgeEnd(e.target_type, _text(getattr(e, f"target_{e.target_type}_id"))),
            )
            for e in rows.edges
            if e.source_field is None and e.target_field is None
        }
        assert job_edges(index, window) == job_ends
    with store.read() as conn:
        index = graph_of(conn)
        run_ids = list(conn.execute(sa.select(t.runs.c.id)).scalars())
    for run in run_ids:
        for direction in ("upstream", "downstream"):
            for levels in (1, 3):
                for as_of in (None, _when(20)):
                    at = None if as_of is None else microseconds(as_of)
                    found_links = run_links(index, str(run), direction, levels, at)
                    expected_links = naive_run_links(store, run, direction, levels, as_of)
                    assert set(found_links) == expected_links, (run, direction, levels, as_of)


def _text(value: uuid.UUID | None) -> str | None:
    return None if value is None else str(value)
