"""Repeated lineage stored once (design §6), on both databases: runs that state the same edges
share one lineage set and add one link each; a run whose lineage changes gets a new set while
the old one stays for the runs that stated it; precedence between origins still holds per
run and output; and any delivery order leaves the same rows."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from tests.builders import (
    BASE_TIME,
    column_lineage,
    dataset_entry,
    dataset_input,
    ds,
    hours,
    job_event,
    lineage_facet,
    run_event,
)
from tests.readback import counts, edge_rows, edges
from upstream.ingest.service import ingest_documents
from upstream.store import schema as t
from upstream.store.engine import Store
from upstream.store.prune import prune
from upstream.store.state import clear_derived

JOB = ("etl", "load")
AB = column_lineage({"a": [("w", "src", "x")], "b": [("w", "src", "y")]})
A_ONLY = column_lineage({"a": [("w", "src", "x")]})
B_ONLY = column_lineage({"b": [("w", "src", "y")]})


def run(
    run_id: str, facet: dict[str, Any], event_type: str = "COMPLETE", at: float = 0
) -> dict[str, Any]:
    return run_event(
        JOB,
        run_id=run_id,
        event_type=event_type,
        time=BASE_TIME + hours(at),
        inputs=[ds("w", "src")],
        outputs=[ds("w", "out", columnLineage=facet)],
    )


def ingest(store: Store, *events: dict[str, Any]) -> None:
    for event in events:
        ingest_documents(store, [event], batch=False)


def lineage_counts(store: Store) -> dict[str, int]:
    found = counts(store)
    return {name: found[name] for name in ("lineage_sets", "lineage_set_edges", "lineage_links")}


def links_per_set(store: Store) -> list[int]:
    link = t.lineage_links.c
    query = sa.select(sa.func.count()).select_from(t.lineage_links).group_by(link.set_id)
    with store.read() as conn:
        return sorted(conn.execute(query).scalars())


def stored_rows(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the lineage tables and the flows, without the times they were written."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    with store.read() as conn:
        for table in (t.lineage_sets, t.lineage_set_edges, t.lineage_links, t.flows):
            columns = [c for c in table.columns if c.name != "created_at"]
            rows = conn.execute(sa.select(*columns)).all()
            found[table.name] = sorted(tuple(str(v) for v in row) for row in rows)
    return found


def forget_everything(store: Store) -> None:
    def clear(conn: sa.Connection) -> None:
        clear_derived(conn)
        conn.execute(t.events.delete())

    store.write(clear)


def test_ten_runs_with_the_same_column_lineage_store_one_set_and_ten_links(
    store: Store,
) -> None:
    ingest(store, *(run(str(uuid.uuid4()), AB, at=i) for i in range(10)))
    # One set: src.x -> out.a, src.y -> out.b and the dataset edge src -> out they imply.
    assert lineage_counts(store) == {
        "lineage_sets": 1,
        "lineage_set_edges": 3,
        "lineage_links": 10,
    }
    assert links_per_set(store) == [10]
    # Readers still see each run's edges: 3 per run.
    assert len(edge_rows(store)) == 30
    assert edges(store) == {("w/src#x", "w/out#a"), ("w/src#y", "w/out#b")}


def test_a_run_whose_lineage_changes_gets_a_new_set_and_the_old_one_stays(
    store: Store,
) -> None:
    ingest(store, *(run(str(uuid.uuid4()), AB, at=i) for i in range(10)))
    changed = column_lineage({"a": [("w", "src", "x")], "b": [("w", "src", "x")]})
    later = str(uuid.uuid4())
    ingest(store, run(later, changed, at=11))
    # A second set of 3 edges (src.x -> out.a, src.x -> out.b, src -> out); 11 links.
    assert lineage_counts(store) == {
        "lineage_sets": 2,
        "lineage_set_edges": 6,
        "lineage_links": 11,
    }
    assert links_per_set(store) == [1, 10]
    later_edges = {
        (r["source_field"], r["target_field"])
        for r in edge_rows(store)
        if str(r["run_id"]) == later and not r["implied"]
    }
    assert later_edges == {("x", "a"), ("x", "b")}


def test_a_later_event_that_adds_lineage_moves_the_run_to_the_union(store: Store) -> None:
    """START says out.a, COMPLETE says out.b: the run ends with both. The set of START alone
    stays while another run links to it, and goes when none does."""
    first, other = str(uuid.uuid4()), str(uuid.uuid4())
    ingest(store, run(first, A_ONLY, "START"), run(other, A_ONLY, at=1))
    assert lineage_counts(store) == {
        "lineage_sets": 1,
        "lineage_set_edges": 2,
        "lineage_links": 2,
    }
    ingest(store, run(first, B_ONLY, at=2))
    # {a} (2 edges: the field edge and src -> out) for `other`; {a, b} (3 edges) for `first`.
    assert lineage_counts(store) == {
        "lineage_sets": 2,
        "lineage_set_edges": 5,
        "lineage_links": 2,
    }
    ingest(store, run(other, B_ONLY, at=3))
    # Both runs now state {a, b}: the set of {a} alone is used by no run and is gone.
    assert lineage_counts(store) == {
        "lineage_sets": 1,
        "lineage_set_edges": 3,
        "lineage_links": 2,
    }


def test_precedence_between_origins_holds_per_run_and_output(store: Store) -> None:
    """The lineage facet outranks columnLineage for out1 only; out2 keeps its columnLineage;
    in either order of arrival, with the same rows."""
    run_id = str(uuid.uuid4())
    start = run_event(
        JOB,
        run_id=run_id,
        event_type="START",
        inputs=[ds("w", "src")],
        outputs=[
            ds("w", "out1", columnLineage=column_lineage({"a": [("w", "src", "y")]})),
            ds("w", "out2", columnLineage=column_lineage({"b": [("w", "src", "y")]})),
        ],
    )
    complete = run_event(
        JOB,
        run_id=run_id,
        time=BASE_TIME + hours(1),
        inputs=[ds("w", "src")],
        outputs=[ds("w", "out1"), ds("w", "out2")],
        job_facets=lineage_facet(
            dataset_entry("w", "out1", fields={"a": [dataset_input("w", "src", "x")]})
        ),
    )
    rows = []
    for order in ([start, complete], [complete, start]):
        ingest(store, *order)
        assert edges(store) == {("w/src#x", "w/out1#a"), ("w/src#y", "w/out2#b")}
        by_target = {(r["target_field"], r["origin"]) for r in edge_rows(store) if not r["implied"]}
        assert by_target == {("a", "lineage_facet"), ("b", "column_lineage")}
        rows.append(stored_rows(store))
        forget_everything(store)
    assert rows[0] == rows[1]


def test_any_delivery_order_leaves_the_same_rows(store: Store) -> None:
    """Four runs, each with a START and a COMPLETE that state different parts of their
    lineage, delivered in three shuffled orders."""
    run_ids = [str(uuid.UUID(int=n)) for n in range(1, 5)]
    facets = [(A_ONLY, B_ONLY), (AB, AB), (A_ONLY, A_ONLY), (B_ONLY, AB)]
    events = [
        event
        for i, (run_id, (first, second)) in enumerate(zip(run_ids, facets, strict=True))
        for event in (run(run_id, first, "START", at=i), run(run_id, second, at=i + 0.5))
    ]
    seen = []
    for seed in range(3):
        shuffled = events[:]
        random.Random(seed).shuffle(shuffled)
        ingest(store, *shuffled)
        seen.append(stored_rows(store))
        forget_everything(store)
    assert seen[0] == seen[1] == seen[2]
    # Runs 1, 2 and 4 end with {a, b}, run 3 with {a}: two sets, four links.
    assert [len(seen[0][name]) for name in ("lineage_sets", "lineage_links")] == [2, 4]


def test_a_replaced_declaration_leaves_no_set_behind(store: Store) -> None:
    def declared(field: str, at: float) -> dict[str, Any]:
        return job_event(
            JOB,
            time=BASE_TIME + hours(at),
            job_facets=lineage_facet(
                dataset_entry("w", "out", fields={field: [dataset_input("w", "src", "x")]})
            ),
        )

    ingest(store, declared("a", 0), declared("b", 1))
    assert edges(store) == {("w/src#x", "w/out#b")}
    assert counts(store)["lineage_sets"] == 1
    assert counts(store)["lineage_links"] == 1


def test_prune_removes_the_links_of_pruned_runs_and_the_sets_no_run_uses(
    store: Store,
) -> None:
    old, kept = str(uuid.uuid4()), str(uuid.uuid4())
    ingest(store, run(old, A_ONLY), run(kept, AB, at=48))
    cutoff = (BASE_TIME + hours(24)).astimezone(UTC)
    assert cutoff < datetime.now(UTC)
    report = store.write(lambda conn: prune(conn, cutoff, keep_events=False, dry_run=False))
    assert report.removed["lineage_links"] == 1
    assert report.removed["lineage_sets"] == 1
    assert report.removed["lineage_set_edges"] == 2
    assert lineage_counts(store) == {
        "lineage_sets": 1,
        "lineage_set_edges": 3,
        "lineage_links": 1,
    }
