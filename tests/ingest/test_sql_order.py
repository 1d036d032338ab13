"""A run's `sql` lineage is a function of all its events, whatever order they arrive in
(design §3.3, §6), on both databases: the SQL names its inputs by their last name part, in
another namespace than the output, and only the run's other events list those inputs."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME, ds, hours, run_event, schema_facet
from tests.ingest.test_ingest_semantics import post
from tests.ingest.test_sql_ingest import sql_facet
from tests.readback import dataset_flows, edges
from upstream.ingest import relink
from upstream.ingest.rebuild import rebuild
from upstream.store import schema as t
from upstream.store.edge_rows import EDGES
from upstream.store.engine import Store

HIVE = "hive://metastore"
PG = "postgres://db:5432"
JOB = ("etl", "sales")
SALES = """
INSERT INTO public.sales (order_id, total, region)
SELECT o.id, o.amount, c.region FROM orders o JOIN customers c ON c.id = o.customer_id
"""


def run_events(run_id: str) -> dict[str, dict[str, Any]]:
    """START lists the orders, RUNNING the customers, COMPLETE the output and the SQL."""
    fields = (("id", "int"), ("amount", "int"), ("customer_id", "int"))
    orders = ds(HIVE, "raw.orders", schema=schema_facet(*fields))
    customers = ds(HIVE, "raw.customers", schema=schema_facet(("id", "int"), ("region", "text")))
    return {
        "START": run_event(JOB, run_id=run_id, event_type="START", inputs=[orders]),
        "RUNNING": run_event(
            JOB, run_id=run_id, event_type="RUNNING", time=BASE_TIME + hours(1), inputs=[customers]
        ),
        "COMPLETE": run_event(
            JOB,
            run_id=run_id,
            time=BASE_TIME + hours(2),
            outputs=[ds(PG, "public.sales")],
            job_facets=sql_facet(SALES),
        ),
    }


ORDERS, CUSTOMERS, OUT = f"{HIVE}/raw.orders", f"{HIVE}/raw.customers", f"{PG}/public.sales"
FIELD_EDGES = {
    (f"{ORDERS}#id", f"{OUT}#order_id"),
    (f"{ORDERS}#amount", f"{OUT}#total"),
    (f"{CUSTOMERS}#region", f"{OUT}#region"),
    (f"{ORDERS}#customer_id", OUT),  # the JOIN's keys feed the whole output
    (f"{CUSTOMERS}#id", OUT),
}
IMPLIED = {(ORDERS, OUT), (CUSTOMERS, OUT)}


def stored_relations(store: Store) -> set[tuple[str, str, str]]:
    """(dataset, access, origin) of every relation, and every dataset a relation names."""
    with store.read() as conn:
        query = sa.select(t.datasets.c.namespace, t.datasets.c.name, t.relations).join(
            t.datasets, t.datasets.c.id == t.relations.c.dataset_id
        )
        rows = conn.execute(query).mappings().all()
    return {(f"{r['namespace']}/{r['name']}", r["access"], r["origin"]) for r in rows}


def origins(store: Store) -> set[str]:
    with store.read() as conn:
        return set(conn.execute(sa.select(EDGES.c.origin).distinct()).scalars())


ORDERINGS = list(itertools.permutations(["START", "RUNNING", "COMPLETE"]))


@pytest.mark.parametrize("in_one_batch", [False, True], ids=["separate posts", "one batch"])
@pytest.mark.parametrize("order", ORDERINGS, ids=["-".join(o) for o in ORDERINGS])
def test_every_order_of_a_runs_events_gives_the_same_sql_lineage(
    client: TestClient, store: Store, order: tuple[str, ...], in_one_batch: bool
) -> None:
    events = run_events(str(uuid.uuid4()))
    posted = [events[kind] for kind in order]
    if in_one_batch:
        response = client.post("/api/v1/lineage", json=posted)
        assert response.status_code == 201, response.text
    else:
        post(client, *posted)
    assert edges(store) == FIELD_EDGES
    assert edges(store, implied=True) == FIELD_EDGES | IMPLIED
    assert origins(store) == {"sql"}
    # Nothing names a dataset of the output's namespace that a too early resolution made up.
    assert stored_relations(store) == {
        (ORDERS, "read", "io"),
        (CUSTOMERS, "read", "io"),
        (OUT, "write", "io"),
    }
    assert dataset_flows(store) == {(ORDERS, OUT), (CUSTOMERS, OUT)}


def test_a_rebuild_of_events_stored_out_of_order_gives_the_same_lineage(
    client: TestClient, store: Store
) -> None:
    events = run_events(str(uuid.uuid4()))
    post(client, events["COMPLETE"], events["RUNNING"], events["START"])
    assert rebuild(store).events == 3
    assert edges(store, implied=True) == FIELD_EDGES | IMPLIED
    assert dataset_flows(store) == {(ORDERS, OUT), (CUSTOMERS, OUT)}


@pytest.fixture
def replayed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The runs a write forgets to derive again (none are then replayed)."""
    forgotten: list[object] = []

    def forget_runs(conn: object, runs: object, through: int | None = None) -> list[object]:
        forgotten.append(runs)
        return []

    monkeypatch.setattr(relink, "forget_runs", forget_runs)
    return forgotten


def test_the_usual_order_derives_each_event_once(
    client: TestClient, store: Store, replayed: list[object]
) -> None:
    """Inputs first, then the SQL: nothing is forgotten and replayed."""
    events = run_events(str(uuid.uuid4()))
    post(client, events["START"], events["RUNNING"], events["COMPLETE"])
    assert replayed == []
    assert edges(store) == FIELD_EDGES


def test_a_later_event_that_repeats_the_runs_datasets_replays_nothing(
    client: TestClient, store: Store, replayed: list[object]
) -> None:
    """START and COMPLETE both list inputs, outputs and the SQL (as Airflow sends them)."""
    run_id = str(uuid.uuid4())
    events = run_events(run_id)
    both = [*events["START"]["inputs"], *events["RUNNING"]["inputs"]]
    for kind, time in (("START", BASE_TIME), ("COMPLETE", BASE_TIME + hours(2))):
        event = run_event(
            JOB,
            run_id=run_id,
            event_type=kind,
            time=time,
            inputs=both,
            outputs=[ds(PG, "public.sales")],
            job_facets=sql_facet(SALES),
        )
        post(client, event)
    assert replayed == []
    assert edges(store) == FIELD_EDGES
