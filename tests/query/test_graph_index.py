"""The graph index (design §6) answers dataset lineage exactly as the stored rows say.

Random small graphs — runs with inputs and outputs at random times, lineage facets with job
ends, declared lineage replaced over time, deletions — are stored in a random order on both
stores; every walk through the index must equal a naive walk written here from design §4.2
over the rows read back with plain statements.
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
from upstream.query.graph_index.dataset_walk import ShownRelation, walk_relations
from upstream.query.graph_index.index import graph_of
from upstream.store import schema as t
from upstream.store.deletion import mark_deleted
from upstream.store.edge_rows import EDGES
from upstream.store.engine import Store

NS = "prop"
DATASETS = [f"d{i}" for i in range(5)]
JOBS = [f"j{i}" for i in range(3)]


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
            inputs=[ds(NS, d) for d in inputs],
        ),
    ]
    if draw(st.booleans()):
        events.append(
            run_event(
                job,
                run_id=run_id,
                time=_when(start + draw(st.integers(0, 6))),
                outputs=[ds(NS, d) for d in outputs],
                job_facets=facets,
            )
        )
    else:
        events[0]["outputs"] = [ds(NS, d) for d in outputs]
        events[0]["job"]["facets"] = facets
    return events


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
    groups = draw(st.lists(st.one_of(_run(), _run(), _declaration()), min_size=1, max_size=7))
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
            self.flows = self._rows(conn, t.flows, t.declared_flows, in_force, window)
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
        history: sa.Table,
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
    changed = True
    while changed:
        changed = False
        for start, end, weight in steps:
            if start in depth and end[1] is not None and rows.live(end[1]):
                reached = depth[start] + weight
                if reached < levels and reached < depth.get(end, levels):
                    depth[end] = reached
                    changed = True
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
    near, far = ("target", "source") if mode == "upstream" else ("source", "target")
    near_access, far_access = ("write", "read") if mode == "upstream" else ("read", "write")
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
        for e in rows.edges:
            if getattr(e, f"{near}_type") != kind or getattr(e, f"{near}_{kind}_id") != node:
                continue
            if kind == "dataset" and getattr(e, f"{far}_type") == "job":
                show(
                    (node, getattr(e, f"{far}_job_id"), getattr(e, f"{far}_run_id"), near_access),
                    level,
                )
            if kind == "job" and getattr(e, f"{far}_type") == "dataset":
                far_dataset = getattr(e, f"{far}_dataset_id")
                if far_dataset is not None:
                    show((far_dataset, node, getattr(e, f"{near}_run_id"), far_access), level)
    components: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for r in rows.relations:
        components[(r.dataset_id, r.job_id, r.run_id, r.access)].add(r.component)
    return _as_shown(
        {
            (*key, component): level
            for key, level in shown.items()
            for component in components.get(key) or {""}
        }
    )


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


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(graph=_graphs())
def test_index_walks_equal_the_naive_walk(
    fresh: Any, graph: tuple[list[dict[str, Any]], list[str]]
) -> None:
    events, deleted = graph
    store = fresh()
    for event in events:
        ingest_documents(store, [event], batch=False)
    datasets = [DatasetRef(NS, name).id for name in deleted if name.startswith("d")]
    jobs = [JobRef(NS, name).id for name in deleted if name.startswith("j")]
    store.write(lambda conn: mark_deleted(conn, "dataset", datasets, BASE_TIME + timedelta(days=9)))
    store.write(lambda conn: mark_deleted(conn, "job", jobs, BASE_TIME + timedelta(days=9)))
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
                            else walk_relations(graph_index, number, mode, levels, window)
                        )
                        assert found == expected, (mode, levels, window, seed)
