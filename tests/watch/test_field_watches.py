"""Watching fields, tags and namespaces, the kinds field_edges_changed and schema_break, and
digests, on both stores, sent to a real HTTP receiver: each change is exactly the expected
notification on a hand-worked graph, and writes that change nothing send nothing.

The graph: `etl` reads raw(id, amount) and writes orders(id, total), orders.id <- raw.id and
orders.total <- raw.amount; `report` reads orders and writes dash(revenue), dash.revenue <-
orders.total. All column lineage, so every edge's origin is `columnLineage`.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import column_lineage, ds, job_event, run_event, schema_facet
from tests.conftest import post
from tests.watch.test_notifications import NS, app, notify
from tests.watch_support import SECRET, Receiver, deliver, dispatch, receiver_running, recent
from upstream.query.watch_fields import Schemas
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.watch.digest import interval_of

__all__ = ["app"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


def output(name: str, fields: list[str], lineage: dict[str, list[str]]) -> dict[str, Any]:
    """An output dataset with a schema of `fields` and column lineage `lineage`: field ->
    ["dataset.field", ...] of this namespace."""
    inputs = {
        out: [(NS, *source.split(".")) for source in sources] for out, sources in lineage.items()
    }
    facets: dict[str, Any] = {"schema": schema_facet(*((f, "string") for f in fields))}
    if inputs:
        facets["columnLineage"] = column_lineage(inputs)
    return ds(NS, name, **facets)


def etl(orders_fields: tuple[str, ...] = ("id", "total")) -> dict[str, Any]:
    lineage = {"id": ["raw.id"], "total": ["raw.amount"]}
    kept = {f: sources for f, sources in lineage.items() if f in orders_fields}
    return run_event(
        (NS, "etl"),
        inputs=[ds(NS, "raw", schema=schema_facet(("id", "int"), ("amount", "int")))],
        outputs=[output("orders", list(orders_fields), kept)],
        time=recent(),
    )


def report() -> dict[str, Any]:
    return run_event(
        (NS, "report"),
        inputs=[ds(NS, "orders")],
        outputs=[output("dash", ["revenue"], {"revenue": ["orders.total"]})],
        time=recent(),
    )


def audit(hours_ago: float = 1) -> dict[str, Any]:
    return run_event(
        (NS, "audit"),
        inputs=[ds(NS, "orders")],
        outputs=[output("audit", ["total_copy"], {"total_copy": ["orders.total"]})],
        time=recent(hours_ago),
    )


def subscribe(app: TestClient, receiver: Receiver, watch: dict[str, Any], **asked: Any) -> str:
    body = {"watch": watch, "deliver": {"webhook": {"url": receiver.url, "secret": SECRET}}}
    response = app.post("/v3/subscriptions", json={**body, **asked})
    assert response.status_code == 201, response.text
    subscription: str = response.json()["id"]
    return subscription


def field(dataset: str, name: str) -> dict[str, str]:
    return {"namespace": NS, "name": dataset, "field": name}


def edge(source: str, target: str, runs: list[str] | None = None) -> dict[str, Any]:
    """A column-lineage field edge, ends as "dataset.field", stated by `runs` (none for a
    removed edge)."""
    return {
        "source": field(*source.split(".")),
        "target": field(*target.split(".")),
        "origin": "columnLineage",
        "runs": runs or [],
    }


def run_of(event: dict[str, Any]) -> str:
    run: str = event["run"]["runId"]
    return run


def watch_field(dataset: str, name: str) -> dict[str, Any]:
    return {"field": field(dataset, name)}


def test_a_watched_field_gains_then_loses_an_outgoing_edge(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, etl(), report())
    subscription = subscribe(app, receiver, watch_field("orders", "total"), direction="both")
    notify(store)
    assert receiver.documents() == []

    start = dict(audit(), eventType="START")
    post(app, start)
    notify(store)
    [sent] = receiver.documents()
    assert sent["subscription"] == subscription
    assert sent["watch"] == watch_field("orders", "total")
    assert sent["changes"] == ["field_edges_changed"]
    assert sent["fieldEdges"] == {
        "added": [edge("orders.total", "audit.total_copy", [run_of(start)])],
        "removed": [],
    }
    assert sent["added"] == sent["removed"] == sent["schemaBreaks"] == []
    assert sent["links"]["watched"] == (
        f"https://lineage.example.com/#/fields?ns={NS}&name=orders&field=total"
    )

    # The COMPLETE repeating its START, a run repeating the last one, and new edges outside
    # the field's radius change nothing.
    post(app, dict(start, eventType="COMPLETE"))
    notify(store)
    post(app, audit(), report())
    post(app, etl())
    notify(store)
    assert len(receiver.documents()) == 1

    assert app.delete(f"/api/v1/namespaces/{NS}/datasets/audit").status_code == 200
    notify(store)
    removed = receiver.documents()[1]
    assert removed["changes"] == ["field_edges_changed"]
    assert removed["fieldEdges"] == {
        "added": [],
        "removed": [edge("orders.total", "audit.total_copy")],
    }


def test_an_added_field_edge_names_the_runs_that_state_it_newest_first(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """orders.total -> audit.total_copy is stated in one round by two runs of `audit` (3 h
    and 1 h ago) and one of `recheck` (2 h ago); orders.total -> ledger.total only by a
    JobEvent's declaration, which is no run."""
    post(app, etl(), report())
    subscribe(app, receiver, watch_field("orders", "total"), direction="downstream")
    older, newer = audit(hours_ago=3), audit()
    recheck = run_event(
        (NS, "recheck"),
        inputs=[ds(NS, "orders")],
        outputs=[output("audit", ["total_copy"], {"total_copy": ["orders.total"]})],
        time=recent(2),
    )
    declared = job_event(
        (NS, "ledger"),
        time=recent(),
        inputs=[ds(NS, "orders")],
        outputs=[output("ledger", ["total"], {"total": ["orders.total"]})],
    )
    post(app, older, newer, recheck, declared)
    notify(store)
    [sent] = receiver.documents()
    assert sent["fieldEdges"] == {
        "added": [
            # Edges in the order of their text: ledger's `total` before audit's `total_copy`.
            edge("orders.total", "ledger.total", []),
            edge(
                "orders.total", "audit.total_copy", [run_of(newer), run_of(recheck), run_of(older)]
            ),
        ],
        "removed": [],
    }


def test_levels_and_direction_of_a_field_watch(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """Upstream of dash.revenue, two levels: orders.total (1), raw.amount (2). A new source
    of raw.amount is three levels up: not told; a new reader of dash.revenue is downstream:
    not told; a new source of orders.total is told."""
    post(app, etl(), report())
    subscribe(app, receiver, watch_field("dash", "revenue"), direction="upstream", levels=2)
    loader = run_event(
        (NS, "loader"),
        inputs=[ds(NS, "dump")],
        outputs=[output("raw", ["id", "amount"], {"amount": ["dump.cents"]})],
        time=recent(),
    )
    reader = run_event(
        (NS, "reader"),
        inputs=[ds(NS, "dash")],
        outputs=[output("board", ["r"], {"r": ["dash.revenue"]})],
        time=recent(),
    )
    post(app, loader, reader)
    notify(store)
    assert receiver.documents() == []

    fixer = run_event(
        (NS, "fixer"),
        inputs=[ds(NS, "refunds")],
        outputs=[output("orders", ["id", "total"], {"total": ["refunds.amount"]})],
        time=recent(),
    )
    post(app, fixer)
    notify(store)
    [sent] = receiver.documents()
    assert sent["fieldEdges"]["added"] == [edge("refunds.amount", "orders.total", [run_of(fixer)])]


def test_a_tag_watches_every_field_carrying_it(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    first = etl()
    post(app, first, report())
    assert app.put("/api/v1/tags/PII", json={}).status_code in (200, 201)
    tagged = f"/api/v1/namespaces/{NS}/datasets/orders/fields/total/tags/PII"
    assert app.post(tagged).status_code in (200, 201)
    subscribe(app, receiver, {"tag": "PII"}, direction="downstream")
    auditing = audit()
    post(app, auditing)
    notify(store)
    [sent] = receiver.documents()
    assert sent["watch"] == {"tag": "PII"}
    assert sent["fieldEdges"]["added"] == [
        edge("orders.total", "audit.total_copy", [run_of(auditing)])
    ]
    assert sent["links"]["watched"] == "https://lineage.example.com/#/tag?tag=PII"

    # A field tagged later is watched from then on: its edges are news.
    assert app.post(f"/api/v1/namespaces/{NS}/datasets/raw/fields/id/tags/PII").status_code in (
        200,
        201,
    )
    notify(store)
    assert receiver.documents()[1]["fieldEdges"] == {
        "added": [edge("raw.id", "orders.id", [run_of(first)])],
        "removed": [],
    }


def test_a_namespace_watches_every_dataset_in_it(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, etl())
    subscribe(app, receiver, {"namespace": NS}, changes=["relation_added"])
    other = run_event(
        ("elsewhere", "copy"),
        inputs=[ds("elsewhere", "a")],
        outputs=[ds("elsewhere", "b")],
        time=recent(),
    )
    post(app, other)
    notify(store)
    assert receiver.documents() == []  # nothing of the namespace changed

    post(app, report())
    notify(store)
    [sent] = receiver.documents()
    assert sent["watch"] == {"namespace": NS}
    assert sent["changes"] == ["relation_added"]
    assert [(r["data"], r["program"], r["accesses"]) for r in sent["added"]] == [
        (f"dataset.{NS}.dash", f"job.{NS}.report", ["write"]),
        (f"dataset.{NS}.orders", f"job.{NS}.report", ["read"]),
    ]
    assert sent["links"] == {"watched": None}  # the UI has no namespace page


def test_a_column_dropped_upstream_breaks_the_dashboard(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """The dashboard team watches dash upstream; orders drops `total`, which feeds
    dash.revenue (not audit.total_copy, which it also feeds, outside the radius)."""
    post(app, etl(), report(), audit())
    subscribe(
        app,
        receiver,
        {"dataset": {"namespace": NS, "name": "dash"}},
        direction="upstream",
        levels=2,
        changes=["schema_break"],
    )
    post(app, etl(("id",)))
    notify(store)
    [sent] = receiver.documents()
    assert sent["change"] == "schema_break"
    assert sent["schemaBreaks"] == [
        {"field": field("orders", "total"), "downstream": [{**field("dash", "revenue"), "hops": 1}]}
    ]
    # The same schema again, and a field with nothing downstream dropped: nothing.
    post(app, etl(("id",)))
    notify(store)
    assert len(receiver.documents()) == 1


def test_a_nested_field_dropped_upstream_breaks_the_downstream(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """orders has a struct `customer` of `name` and `email`; contacts.email <- the nested
    orders field `customer.email` (named by its path, as column lineage names it). etl
    writes orders again with `customer` holding `name` only: `customer.email` is gone from
    the schema while an edge from it leads to contacts.email."""

    def orders(*inner: str) -> dict[str, Any]:
        schema = schema_facet(("id", "int"))
        nested = [{"name": name, "type": "string"} for name in inner]
        schema["fields"].append({"name": "customer", "type": "struct", "fields": nested})
        return run_event(
            (NS, "etl"), inputs=[ds(NS, "raw")], outputs=[ds(NS, "orders", schema=schema)],
            time=recent(),
        )  # fmt: skip

    mailer = run_event(
        (NS, "mailer"),
        inputs=[ds(NS, "orders")],
        outputs=[
            ds(
                NS,
                "contacts",
                schema=schema_facet(("email", "string")),
                columnLineage=column_lineage({"email": [(NS, "orders", "customer.email")]}),
            )
        ],
        time=recent(),
    )
    post(app, orders("name", "email"), mailer)
    subscribe(
        app,
        receiver,
        {"dataset": {"namespace": NS, "name": "contacts"}},
        direction="upstream",
        changes=["schema_break"],
    )
    post(app, orders("name"))
    notify(store)
    [sent] = receiver.documents()
    assert sent["schemaBreaks"] == [
        {
            "field": field("orders", "customer.email"),
            "downstream": [{**field("contacts", "email"), "hops": 1}],
        }
    ]
    # The struct as it is now, again: nothing more is gone.
    post(app, orders("name"))
    notify(store)
    assert len(receiver.documents()) == 1


def test_a_dropped_field_without_downstream_edges_breaks_nothing(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, etl(), report())
    subscribe(
        app,
        receiver,
        {"dataset": {"namespace": NS, "name": "orders"}},
        direction="downstream",
        levels=2,
        changes=["schema_break"],
    )
    post(app, etl(("total",)))  # orders.id has no field edge downstream
    notify(store)
    assert receiver.documents() == []


def test_a_watched_field_dropped_lists_its_downstream_fields_within_the_levels(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, etl(), report(), audit())
    board = run_event(
        (NS, "board"),
        inputs=[ds(NS, "dash")],
        outputs=[output("board", ["r"], {"r": ["dash.revenue"]})],
        time=recent(),
    )
    post(app, board)
    subscribe(
        app,
        receiver,
        watch_field("orders", "total"),
        direction="downstream",
        levels=2,
        changes=["schema_break"],
    )
    post(app, etl(("id",)))
    notify(store)
    [sent] = receiver.documents()
    assert sent["schemaBreaks"] == [
        {
            "field": field("orders", "total"),
            "downstream": [
                {**field("audit", "total_copy"), "hops": 1},
                {**field("dash", "revenue"), "hops": 1},
                {**field("board", "r"), "hops": 2},
            ],
        }
    ]


def test_a_digest_sends_an_intervals_changes_as_one_notification(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    post(app, etl())
    subscription = subscribe(
        app,
        receiver,
        {"dataset": {"namespace": NS, "name": "orders"}},
        direction="downstream",
        changes=["relation_added"],
        digest="PT1H",
    )
    first = datetime.now(UTC)
    start, end = interval_of(first, 3600)
    if end - first < timedelta(seconds=5):
        first = end + timedelta(seconds=1)
        start, end = interval_of(first, 3600)
    post(app, report())
    dispatch(store, now=first)
    post(app, audit())
    dispatch(store, now=first + timedelta(seconds=1))
    deliver(store, at=first + timedelta(seconds=2))
    assert receiver.documents() == []  # the hour has not ended

    dispatch(store, now=end)
    deliver(store, at=end)
    [sent] = receiver.documents()
    assert sent["subscription"] == subscription
    assert sent["changes"] == ["relation_added"]
    assert sent["digest"] == {"from": start.isoformat(), "to": end.isoformat()}
    added = [[r["data"] for r in note["added"]] for note in sent["notifications"]]
    assert added == [
        [f"dataset.{NS}.dash", f"dataset.{NS}.orders"],
        [f"dataset.{NS}.audit", f"dataset.{NS}.orders"],
    ]
    log = app.get(f"/v3/subscriptions/{subscription}/deliveries").json()["deliveries"]
    assert sorted(d["state"] for d in log) == ["delivered", "digested", "digested"]

    dispatch(store, now=end + timedelta(hours=2))
    deliver(store, at=end + timedelta(hours=2))
    assert len(receiver.documents()) == 1  # a digest is made once


def test_two_processes_make_a_digest_once(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    """Both read the same held notifications; the one that stores second finds them taken
    and stores nothing."""
    from upstream.watch import digest

    post(app, etl())
    subscribe(
        app,
        receiver,
        {"dataset": {"namespace": NS, "name": "orders"}},
        direction="downstream",
        digest=60,
    )
    post(app, report())
    made = datetime.now(UTC)
    dispatch(store, now=made)
    _, end = interval_of(made, 60)
    with store.read() as conn:
        first = digest.due_digests(conn, end)
        second = digest.due_digests(conn, end)
    assert len(first) == len(second) == 1
    assert store.write(lambda conn: digest._store(conn, first, end)) == 1
    with pytest.raises(digest._Taken):
        store.write(lambda conn: digest._store(conn, second, end))
    deliver(store, at=end)
    [sent] = receiver.documents()
    assert len(sent["notifications"]) == 1


def test_a_rounds_schemas_read_each_dataset_once(app: TestClient, store: Store) -> None:
    """A dispatcher's round shares one `Schemas` among its subscriptions: a dataset already
    read is answered without a statement, and only the new ones are read."""
    schema = {"fields": [{"name": "id", "type": "int"}, {"name": "total", "type": "float"}]}
    post(app, run_event((NS, "etl"), inputs=[ds(NS, "raw", schema=schema)],
                        outputs=[ds(NS, "orders")]))  # fmt: skip
    with store.read() as conn:
        ids = {
            name: str(i) for i, name in conn.execute(sa.select(t.datasets.c.id, t.datasets.c.name))
        }
        statements: list[str] = []
        sa.event.listen(conn, "before_cursor_execute", lambda *a: statements.append(a[2]))
        schemas = Schemas(conn)
        assert schemas.fields([ids["raw"]]) == {(ids["raw"], "id"), (ids["raw"], "total")}
        assert len(statements) == 1
        both = schemas.fields([ids["raw"], ids["orders"]])
        assert both == {(ids["raw"], "id"), (ids["raw"], "total")}
        assert len(statements) == 2  # orders only
        assert schemas.fields([ids["orders"], ids["raw"]]) == both
        assert len(statements) == 2
