"""A round walks again only the subscriptions a change may concern (found by the entities
their radius holds, `upstream.watch.memory`), on both stores. That choice must never change
a notification: each step of a hand-worked story — a new edge at a radius's frontier, an
edge that connects an island to it, an alias claim, deletions and revivals, a schema
change, a failed run, a tag added to a field — is looked at on one snapshot by the
dispatcher and by one that walks every radius, and both must find the same notifications
and the same radii. And a write that touches nothing watched walks no radius at all."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Connection

from tests.builders import column_lineage, dataset_event, ds, job_event, run_event, schema_facet
from tests.conftest import post
from tests.watch.test_notifications import NS, app
from tests.watch_support import SECRET, Receiver, receiver_running, recent
from upstream.store.engine import Store
from upstream.watch import observe
from upstream.watch.dispatcher import Dispatcher, Round
from upstream.watch.memory import Remembered, SubscriptionMemory
from upstream.watch.payload import Links

__all__ = ["app"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


class Everyone(SubscriptionMemory):
    """A memory by which every change concerns every subscription: its dispatcher walks
    every radius each round, as the dispatcher did before it had the index."""

    everyone: list[Remembered]

    def refresh(self, conn: Connection) -> list[Remembered]:
        self.everyone = super().refresh(conn)
        return self.everyone

    def concerned(self, touched: Any) -> list[Remembered]:
        return self.everyone


def dataset(name: str, fields: tuple[str, ...] = (), lineage: dict[str, str] | None = None,
            **facets: Any) -> dict[str, Any]:  # fmt: skip
    """A dataset of NS with a schema of `fields` and column lineage field -> "dataset.field"."""
    if fields:
        facets["schema"] = schema_facet(*((f, "string") for f in fields))
    if lineage:
        facets["columnLineage"] = column_lineage(
            {out: [(NS, *source.split("."))] for out, source in lineage.items()}
        )
    return ds(NS, name, **facets)


def run(job: str, reads: list[dict[str, Any]], writes: list[dict[str, Any]],
        **extra: Any) -> dict[str, Any]:  # fmt: skip
    return run_event((NS, job), inputs=reads, outputs=writes, time=recent(), **extra)


def etl(fields: tuple[str, ...]) -> dict[str, Any]:
    lineage = {"id": "raw.id", "total": "raw.amount"}
    kept = {f: source for f, source in lineage.items() if f in fields}
    return run("etl", [dataset("raw", ("id", "amount"))], [dataset("orders", fields, kept)])


def report() -> dict[str, Any]:
    written = dataset("dash", ("revenue",), {"revenue": "orders.total"})
    return run("report", [dataset("orders")], [written])


def symlinks(name: str) -> dict[str, Any]:
    return {
        "_producer": "https://example.com/test",
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SymlinksDatasetFacet.json",
        "identifiers": [{"namespace": NS, "name": name, "type": "TABLE"}],
    }


def body(notification: dict[str, Any]) -> dict[str, Any]:
    """A notification's body without its id, which is drawn anew each time."""
    document: dict[str, Any] = json.loads(notification["body"])
    document.pop("id")
    return document


class Both:
    """The dispatcher (which walks the subscriptions the changes may concern) and one that
    walks every radius, looking at the same snapshots; the first one's rounds are stored."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.chosen = Dispatcher(store, Links("https://lineage.example.com"), timedelta(days=1))
        self.every = Dispatcher(store, Links("https://lineage.example.com"), timedelta(days=1))
        self.every.subscriptions = Everyone()
        self.told: list[dict[str, Any]] = []

    def round(self) -> list[dict[str, Any]]:
        """One round of both; the bodies of the notifications it made."""
        now = datetime.now(UTC)
        with self.store.read() as conn:
            chosen = self.chosen._round(conn, now)
            every = self.every._round(conn, now)
        assert (chosen is None) == (every is None)
        if chosen is None or every is None:
            return []
        assert _bodies(chosen) == _bodies(every)
        assert chosen.radii == every.radii
        self.chosen.keep(chosen)
        self.told.extend(_bodies(chosen))
        return _bodies(chosen)


def _bodies(found: Round) -> list[dict[str, Any]]:
    return sorted((body(n) for n in found.notifications), key=lambda b: b["subscription"])


def subscribe(app: TestClient, receiver: Receiver, watch: dict[str, Any], **asked: Any) -> str:
    answer = app.post(
        "/v3/subscriptions",
        json={"watch": watch, "deliver": {"webhook": {"url": receiver.url, "secret": SECRET}},
              **asked},
    )  # fmt: skip
    assert answer.status_code == 201, answer.text
    subscription: str = answer.json()["id"]
    return subscription


def watch(name: str) -> dict[str, Any]:
    return {"dataset": {"namespace": NS, "name": name}}


def test_choosing_the_subscriptions_a_change_concerns_changes_no_notification(
    app: TestClient, store: Store, receiver: Receiver
) -> None:
    both = Both(store)
    post(app, etl(("id", "total")), report(), run("crm", [dataset("leads")], [dataset("sales")]))
    post(app, dataset_event(NS, "lonely", time=recent()))
    down = subscribe(app, receiver, watch("orders"), direction="downstream", levels=1)
    relations = ["relation_added", "relation_removed"]
    frontier = subscribe(app, receiver, watch("orders"), direction="downstream", levels=2,
                         changes=relations)  # fmt: skip
    up = subscribe(app, receiver, watch("dash"), direction="upstream", levels=3)
    subscribe(app, receiver, watch("raw"), direction="both", levels=3)
    subscribe(app, receiver, watch("sales"), direction="downstream", levels=2)
    lonely = subscribe(app, receiver, watch("lonely"), direction="downstream", levels=1)
    field = {"field": {"namespace": NS, "name": "orders", "field": "total"}}
    total = subscribe(app, receiver, field, direction="downstream", levels=2)
    _ok(app.put("/api/v1/tags/PII", json={}))
    subscribe(app, receiver, {"tag": "PII"}, direction="downstream", levels=2)
    namespace = subscribe(app, receiver, {"namespace": NS}, direction="downstream", levels=1)
    assert both.round() == []  # the radii as they stand are the starting point

    def told(step: Callable[[], None]) -> set[tuple[str, str]]:
        step()
        return {(b["subscription"], kind) for b in both.round() for kind in b["changes"]}

    # An edge at the frontier of `orders`'s one level downstream: `dash` is its last
    # dataset, and a new reader of it is outside, but inside two levels down (a watch
    # asking only for relations knows `dash` by its radius alone). The watch of
    # `orders.total` two levels down gains the field edge from `dash.revenue`.
    site = dataset("site", ("revenue",), {"revenue": "dash.revenue"})
    published = told(lambda: post(app, run("publish", [dataset("dash")], [site])))
    assert {(frontier, "relation_added"), (total, "field_edges_changed")} <= published
    assert (down, "relation_added") not in published
    assert (down, "relation_added") in told(
        lambda: post(app, run("audit", [dataset("orders")], [dataset("audit")]))
    )
    # An island written elsewhere, then joined to the upstream of `dash` through `raw`.
    island = run("copy", [dataset("s3_dump")], [dataset("landing")])
    assert told(lambda: post(app, island)) == {(namespace, "relation_added")}
    assert (up, "relation_added") in told(
        lambda: post(app, run("load", [dataset("landing")], [dataset("raw")]))
    )
    # `sales` appears as an alias of `orders`: the watch of `sales` now watches `orders`.
    told(
        lambda: post(
            app, run("etl", [dataset("raw")], [dataset("orders", symlinks=symlinks("sales"))])
        )
    )
    # A dataset no job touched yet, watched, gains a reader.
    assert told(lambda: post(app, run("use", [dataset("lonely")], [dataset("used")]))) >= {
        (lonely, "relation_added")
    }
    # Deletions and revivals of a job and a dataset in the radii: the job comes back by an
    # event naming only itself.
    told(lambda: _ok(app.delete(f"/api/v1/namespaces/{NS}/jobs/report")))
    assert (down, "revived") in told(lambda: post(app, job_event((NS, "report"), time=recent())))
    told(lambda: post(app, report()))
    told(lambda: _ok(app.delete(f"/api/v1/namespaces/{NS}/datasets/audit")))
    # A field gone from `orders`'s schema while field edges go on from it downstream.
    told(lambda: post(app, etl(("id",))))
    # A failed run writing into the radii.
    told(lambda: post(app, run("etl", [dataset("raw")], [dataset("orders")], event_type="FAIL")))
    # A tag added to a field: the tag's watch now watches it.
    told(lambda: _ok(app.post(f"/api/v1/namespaces/{NS}/datasets/raw/fields/id/tags/PII")))
    kinds = {(b["watch"].get("dataset", {}).get("name") or next(iter(b["watch"])), k)
             for b in both.told for k in b["changes"]}  # fmt: skip
    # The story made every kind of change for some watch, and a notification of the alias.
    assert {k for _, k in kinds} >= {
        "relation_added", "relation_removed", "deleted", "revived", "schema_break",
        "run_failed", "field_edges_changed",
    }  # fmt: skip
    assert ("sales", "relation_added") in kinds
    assert ("tag", "field_edges_changed") in kinds


def _ok(answer: Any) -> None:
    assert answer.status_code in (200, 201), answer.text


def test_a_round_after_a_write_touching_nothing_watched_walks_no_radius(
    app: TestClient, store: Store, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    walks: list[str] = []

    def counted(walk: Callable[..., Any], name: str) -> Callable[..., Any]:
        def walked(*args: Any, **kwargs: Any) -> Any:
            walks.append(name)
            return walk(*args, **kwargs)

        return walked

    monkeypatch.setattr(observe, "radius_walk", counted(observe.radius_walk, "datasets"))
    monkeypatch.setattr(observe, "field_radius", counted(observe.field_radius, "fields"))
    post(app, run("etl", [dataset("raw", ("id",))], [dataset("orders", ("id",), {"id": "raw.id"})]))
    subscribe(app, receiver, watch("orders"), direction="both", levels=3)
    subscribe(app, receiver, {"field": {"namespace": NS, "name": "orders", "field": "id"}})
    dispatcher_ = Dispatcher(store, Links(), timedelta(days=1))
    dispatcher_.dispatch_once()  # the first round sweeps: every radius is walked
    walks.clear()
    post(app, run("elsewhere", [dataset("a", ("x",))], [dataset("b", ("x",), {"x": "a.x"})]))
    assert dispatcher_.dispatch_once() == 0
    assert walks == []
    post(app, run("report", [dataset("orders")], [dataset("dash", ("id",), {"id": "orders.id"})]))
    assert dispatcher_.dispatch_once() == 2
    # Each subscription the change concerns, walked once: the dataset watch by datasets and
    # (it asks for field edges) by fields, the field watch by fields.
    assert sorted(walks) == ["datasets", "fields", "fields"]
