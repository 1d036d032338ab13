"""`GET /v3/namespaces/{ns}/datasets/{ds}/lineage` (design §4.1, §4.2), on both databases.

Every graph is built by posting OpenLineage events; expected relations are worked out by hand
and written as (dataset, program key, access, run) — `None` for a declared (run-less) one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from tests.builders import (
    BASE_TIME,
    dataset_entry,
    dataset_input,
    ds,
    iso,
    job_entry,
    job_event,
    job_input,
    lineage_facet,
    run_event,
)
from tests.conftest import post
from upstream.api.app import create_app
from upstream.model.identity import DatasetRef
from upstream.settings import Settings

NS = "ns"
DAY = timedelta(days=1)
WINDOW = {"start": iso(BASE_TIME - DAY), "end": iso(BASE_TIME + DAY)}

Rel = tuple[str, str, str, str | None]


def get(client: TestClient, name: str, namespace: str = NS, **params: Any) -> Any:
    path = f"/v3/namespaces/{quote(namespace, safe='')}/datasets/{quote(name, safe='')}/lineage"
    return client.get(path, params={**WINDOW, **params})


def lineage(client: TestClient, name: str, **params: Any) -> dict[str, Any]:
    response = get(client, name, **params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def rels(body: dict[str, Any]) -> set[Rel]:
    """Uncollapsed relations as (dataset name, program key, access, run)."""
    found: set[Rel] = set()
    for r in body["relations"]:
        assert len(r["accesses"]) == 1
        assert len(r["runs"]) <= 1
        name = r["data"].removeprefix(f"dataset.{NS}.")
        found.add((name, r["program"], r["accesses"][0], r["runs"][0] if r["runs"] else None))
    assert len(found) == len(body["relations"])
    return found


def job(name: str) -> str:
    return f"job.{NS}.{name}"


def workflow(name: str) -> str:
    return f"workflow.{NS}.{name}"


def run(
    name: str,
    run_id: str,
    *,
    reads: Sequence[str] = (),
    writes: Sequence[str] = (),
    **kwargs: Any,
) -> dict[str, Any]:
    return run_event(
        (NS, name),
        run_id=run_id,
        inputs=[ds(NS, d) for d in reads],
        outputs=[ds(NS, d) for d in writes],
        **kwargs,
    )


def rid() -> str:
    return str(uuid.uuid4())


# -- seed scenarios -------------------------------------------------------------------------


def test_chain_levels(client: TestClient) -> None:
    r1, r2, r3 = rid(), rid(), rid()
    post(
        client,
        run("P1", r1, writes=["D1"], reads=["D2"]),
        run("P2", r2, writes=["D2"], reads=["D3"]),
        run("P3", r3, reads=["D1"]),
    )
    assert rels(lineage(client, "D1", levels=100)) == {
        ("D1", job("P1"), "write", r1),
        ("D2", job("P1"), "read", r1),
        ("D2", job("P2"), "write", r2),
        ("D3", job("P2"), "read", r2),
        ("D1", job("P3"), "read", r3),
    }
    assert rels(lineage(client, "D1", levels=1)) == {
        ("D1", job("P1"), "write", r1),
        ("D2", job("P1"), "read", r1),
        ("D1", job("P3"), "read", r3),
    }


def test_exact_response_shape(client: TestClient) -> None:
    r1, r3 = rid(), rid()
    post(client, run("P1", r1, writes=["D1"], reads=["D2"]), run("P3", r3, reads=["D1"]))
    response = get(client, "D1", levels=1)
    assert response.status_code == 200
    assert response.json() == {
        "start": int((BASE_TIME - DAY).timestamp()),
        "end": int((BASE_TIME + DAY).timestamp()),
        "relations": [
            {
                "data": "dataset.ns.D1",
                "program": "job.ns.P1",
                "accesses": ["write"],
                "runs": [r1],
                "components": [],
            },
            {
                "data": "dataset.ns.D1",
                "program": "job.ns.P3",
                "accesses": ["read"],
                "runs": [r3],
                "components": [],
            },
            {
                "data": "dataset.ns.D2",
                "program": "job.ns.P1",
                "accesses": ["read"],
                "runs": [r1],
                "components": [],
            },
        ],
        "data": {
            "dataset.ns.D1": {"entityId": {"type": "dataset", "namespace": NS, "name": "D1"}},
            "dataset.ns.D2": {"entityId": {"type": "dataset", "namespace": NS, "name": "D2"}},
        },
        "programs": {
            "job.ns.P1": {"entityId": {"type": "job", "namespace": NS, "name": "P1"}},
            "job.ns.P3": {"entityId": {"type": "job", "namespace": NS, "name": "P3"}},
        },
    }
    # Keys in order, so the bytes are the same every time.
    assert list(response.json()) == ["start", "end", "relations", "data", "programs"]
    assert get(client, "D1", levels=1).content == response.content


def test_cycle(client: TestClient) -> None:
    r1, r2, r3 = rid(), rid(), rid()
    post(
        client,
        run("P1", r1, reads=["D1"], writes=["D2"]),
        run("P2", r2, reads=["D2"], writes=["D1", "D3"]),
        run("P3", r3, reads=["D3"], writes=["D4"]),
    )
    p1_p2 = {
        ("D1", job("P1"), "read", r1),
        ("D2", job("P1"), "write", r1),
        ("D2", job("P2"), "read", r2),
        ("D1", job("P2"), "write", r2),
        ("D3", job("P2"), "write", r2),
    }
    assert rels(lineage(client, "D1", levels=1)) == p1_p2
    assert rels(lineage(client, "D1", levels=100)) == p1_p2 | {
        ("D3", job("P3"), "read", r3),
        ("D4", job("P3"), "write", r3),
    }
    # Along data flow the cycle ends too: upstream of D1 is P2 <- D2 <- P1 <- D1.
    assert rels(lineage(client, "D1", levels=100, direction="upstream")) == {
        ("D1", job("P2"), "write", r2),
        ("D2", job("P2"), "read", r2),
        ("D2", job("P1"), "write", r1),
        ("D1", job("P1"), "read", r1),
    }


def test_collapse_run_and_access(client: TestClient) -> None:
    r1, r2 = rid(), rid()
    post(
        client,
        run("s1", r1, reads=["d1"], writes=["d1"], time=BASE_TIME),
        run("s1", r2, reads=["d1"], time=BASE_TIME + timedelta(hours=1)),
    )
    base = {"data": "dataset.ns.d1", "program": job("s1"), "components": []}
    assert lineage(client, "d1", collapse="run")["relations"] == [
        {**base, "accesses": ["read"], "runs": [r2, r1]},  # newest first
        {**base, "accesses": ["write"], "runs": [r1]},
    ]
    by_access = lineage(client, "d1", collapse="access")["relations"]
    assert sorted(by_access, key=lambda r: r["runs"]) == sorted(
        [
            {**base, "accesses": ["read", "write"], "runs": [r1]},
            {**base, "accesses": ["read"], "runs": [r2]},
        ],
        key=lambda r: r["runs"],
    )
    assert lineage(client, "d1", collapse=["access", "run"])["relations"] == [
        {**base, "accesses": ["read", "write"], "runs": [r2, r1]}
    ]


def test_components_and_collapse_component(client: TestClient) -> None:
    r1 = rid()

    def read_by(component: str) -> dict[str, Any]:
        doc = ds(NS, "d1")
        doc["inputFacets"] = {"upstream_component": {"name": component}}
        return doc

    post(
        client,
        run_event((NS, "s1"), run_id=r1, event_type="START", inputs=[read_by("mapper")]),
        run_event((NS, "s1"), run_id=r1, inputs=[read_by("reducer")]),
    )
    base = {"data": "dataset.ns.d1", "program": job("s1"), "accesses": ["read"], "runs": [r1]}
    assert lineage(client, "d1")["relations"] == [
        {**base, "components": ["mapper"]},
        {**base, "components": ["reducer"]},
    ]
    assert lineage(client, "d1", collapse="component")["relations"] == [
        {**base, "components": ["mapper", "reducer"]}
    ]


def test_a_flow_shows_the_components_stored_on_its_far_end(client: TestClient) -> None:
    """Downstream from d0, the write of d1 is reached through the flow d0 -> d1: it shows
    every component stored on that write (one named on START, none on COMPLETE), and the
    read of d0, which names none, shows none."""
    r1 = rid()
    written_by_sink = ds(NS, "d1")
    written_by_sink["outputFacets"] = {"upstream_component": {"name": "sink"}}
    post(
        client,
        run_event(
            (NS, "s1"),
            run_id=r1,
            event_type="START",
            inputs=[ds(NS, "d0")],
            outputs=[written_by_sink],
        ),
        run_event((NS, "s1"), run_id=r1, inputs=[ds(NS, "d0")], outputs=[ds(NS, "d1")]),
    )
    read = {"data": "dataset.ns.d0", "program": job("s1"), "accesses": ["read"], "runs": [r1]}
    write = {"data": "dataset.ns.d1", "program": job("s1"), "accesses": ["write"], "runs": [r1]}
    assert lineage(client, "d0", direction="downstream")["relations"] == [
        {**read, "components": []},
        {**write, "components": []},
        {**write, "components": ["sink"]},
    ]
    assert lineage(client, "d1", direction="upstream")["relations"] == [
        {**read, "components": []},
        {**write, "components": []},
        {**write, "components": ["sink"]},
    ]


# -- direction ------------------------------------------------------------------------------

WH = "postgresql://warehouse"


def build_summaries(client: TestClient) -> str:
    """Seed 003: one job reads customers and orders, writes two summaries, each from one."""
    run_id = rid()
    post(
        client,
        run_event(
            ("https://example.com/jobs", "build_summaries"),
            run_id=run_id,
            inputs=[ds(WH, "raw.customers"), ds(WH, "raw.orders")],
            outputs=[ds(WH, "analytics.customer_summary"), ds(WH, "analytics.order_summary")],
            job_facets=lineage_facet(
                dataset_entry(
                    WH, "analytics.customer_summary", [dataset_input(WH, "raw.customers")]
                ),
                dataset_entry(WH, "analytics.order_summary", [dataset_input(WH, "raw.orders")]),
            ),
        ),
    )
    return run_id


def short(body: dict[str, Any]) -> set[tuple[str, str]]:
    return {(r["data"].removeprefix(f"dataset.{WH}."), r["accesses"][0]) for r in body["relations"]}


def test_upstream_follows_the_lineage_facet(client: TestClient) -> None:
    build_summaries(client)
    up = get(client, "analytics.customer_summary", namespace=WH, direction="upstream").json()
    assert short(up) == {("analytics.customer_summary", "write"), ("raw.customers", "read")}
    assert list(up["data"]) == [
        f"dataset.{WH}.analytics.customer_summary",
        f"dataset.{WH}.raw.customers",
    ]
    down = get(client, "raw.orders", namespace=WH, direction="downstream").json()
    assert short(down) == {("raw.orders", "read"), ("analytics.order_summary", "write")}
    # Nothing flows out of a summary.
    assert (
        get(client, "analytics.customer_summary", namespace=WH, direction="downstream").json()[
            "relations"
        ]
        == []
    )
    # CDAP's walk ignores direction: every relation of the job.
    both = get(client, "analytics.customer_summary", namespace=WH).json()
    assert short(both) == {
        ("analytics.customer_summary", "write"),
        ("analytics.order_summary", "write"),
        ("raw.customers", "read"),
        ("raw.orders", "read"),
    }


def test_upstream_infers_inputs_times_outputs_without_explicit_lineage(client: TestClient) -> None:
    r1, r2 = rid(), rid()
    post(
        client,
        run("P1", r1, reads=["A", "B"], writes=["C", "X"]),
        run("P2", r2, reads=["C"], writes=["E"]),
    )
    assert rels(lineage(client, "E", direction="upstream", levels=100)) == {
        ("E", job("P2"), "write", r2),
        ("C", job("P2"), "read", r2),
        ("C", job("P1"), "write", r1),
        ("A", job("P1"), "read", r1),
        ("B", job("P1"), "read", r1),
    }
    assert rels(lineage(client, "E", direction="upstream", levels=1)) == {
        ("E", job("P2"), "write", r2),
        ("C", job("P2"), "read", r2),
    }
    assert rels(lineage(client, "A", direction="downstream", levels=100)) == {
        ("A", job("P1"), "read", r1),
        ("C", job("P1"), "write", r1),
        ("X", job("P1"), "write", r1),
        ("C", job("P2"), "read", r2),
        ("E", job("P2"), "write", r2),
    }


def test_job_edges_carry_the_walk_through_jobs(client: TestClient) -> None:
    """J's lineage facet says T <- job K2 <- job K1 <- S0: upstream of T reaches K2 at level
    1 and, through the job -> job edge, K1 and S0 at level 2."""
    post(
        client,
        run_event(
            (NS, "J"),
            run_id=rid(),
            job_facets=lineage_facet(
                dataset_entry(NS, "T", [job_input(NS, "K2")]),
                job_entry(NS, "K2", [job_input(NS, "K1")]),
                job_entry(NS, "K1", [dataset_input(NS, "S0")]),
            ),
        ),
    )
    assert rels(lineage(client, "T", direction="upstream", levels=1)) == {
        ("T", job("K2"), "write", None)
    }
    assert rels(lineage(client, "T", direction="upstream", levels=2)) == {
        ("T", job("K2"), "write", None),
        ("S0", job("K1"), "read", None),
    }
    assert rels(lineage(client, "S0", direction="downstream", levels=2)) == {
        ("S0", job("K1"), "read", None),
        ("T", job("K2"), "write", None),
    }


def test_a_job_fed_by_a_dataset_passes_it_on(client: TestClient) -> None:
    """Own-job JOB entries: S feeds J, J feeds T (no dataset -> dataset edge at all)."""
    run_id = rid()
    post(
        client,
        run_event(
            (NS, "J"),
            run_id=run_id,
            inputs=[ds(NS, "S")],
            outputs=[ds(NS, "T")],
            job_facets=lineage_facet(
                dataset_entry(NS, "T", [job_input()]),
                job_entry(inputs=[dataset_input(NS, "S")]),
            ),
        ),
    )
    assert rels(lineage(client, "T", direction="upstream")) == {
        ("T", job("J"), "write", run_id),
        ("S", job("J"), "read", run_id),
    }
    assert rels(lineage(client, "S", direction="downstream")) == {
        ("S", job("J"), "read", run_id),
        ("T", job("J"), "write", run_id),
    }


def test_declared_lineage_is_always_in_the_window(client: TestClient) -> None:
    post(
        client,
        job_event((NS, "Declared"), inputs=[ds(NS, "A")], outputs=[ds(NS, "B")]),
    )
    far = {"start": "0", "end": "1"}
    assert rels(lineage(client, "B", direction="upstream", **far)) == {
        ("B", job("Declared"), "write", None),
        ("A", job("Declared"), "read", None),
    }
    assert rels(lineage(client, "B", **far)) == {
        ("B", job("Declared"), "write", None),
        ("A", job("Declared"), "read", None),
    }


# -- time windows ---------------------------------------------------------------------------


def test_runs_count_when_they_overlap_the_window(client: TestClient) -> None:
    start, end = BASE_TIME - DAY, BASE_TIME + DAY
    old, inside, straddling, running, at_end, ends_at_start = (rid() for _ in range(6))
    post(
        client,
        run("Old", old, reads=["D"], time=start - DAY),
        run("Inside", inside, reads=["D"], time=BASE_TIME),
        run("Straddling", straddling, reads=["D"], event_type="START", time=start - DAY),
        run("Straddling", straddling, reads=["D"], time=start + timedelta(hours=1)),
        run("Running", running, reads=["D"], event_type="START", time=start - 2 * DAY),
        run("AtEnd", at_end, reads=["D"], time=end),
        run("EndsAtStart", ends_at_start, reads=["D"], event_type="START", time=start - DAY),
        run("EndsAtStart", ends_at_start, reads=["D"], time=start),
    )
    assert rels(lineage(client, "D", start=iso(start), end=iso(end))) == {
        ("D", job("Inside"), "read", inside),
        ("D", job("Straddling"), "read", straddling),
        ("D", job("Running"), "read", running),
        ("D", job("EndsAtStart"), "read", ends_at_start),
    }
    wide = lineage(client, "D", start=str(int((start - 3 * DAY).timestamp())), end=iso(end + DAY))
    assert {r[1] for r in rels(wide)} == {
        job(n) for n in ("Old", "Inside", "Straddling", "Running", "AtEnd", "EndsAtStart")
    }


def test_relative_times(client: TestClient) -> None:
    now = datetime.now(UTC)
    recent, old = rid(), rid()
    post(
        client,
        run("Recent", recent, reads=["D"], time=now - timedelta(hours=1)),
        run("Old", old, reads=["D"], time=now - 30 * DAY),
    )
    path = f"/v3/namespaces/{NS}/datasets/D/lineage"
    default = client.get(path).json()  # now-7d .. now
    assert rels(default) == {("D", job("Recent"), "read", recent)}
    assert default["end"] - default["start"] == 7 * 24 * 3600
    assert rels(client.get(path, params={"start": "now-31d"}).json()) == {
        ("D", job("Recent"), "read", recent),
        ("D", job("Old"), "read", old),
    }
    # now-1d+4h is 20 hours ago: the recent run started after it.
    assert rels(client.get(path, params={"start": "now-40d", "end": "now-1d+4h"}).json()) == {
        ("D", job("Old"), "read", old)
    }
    # `+` arrives as a space when not percent-encoded; it still means plus.
    response = client.get(f"{path}?start=now-31d&end=now-1d+4h")
    assert rels(response.json()) == {("D", job("Old"), "read", old)}


# -- errors, limits, names ------------------------------------------------------------------


def test_unknown_namespace_and_dataset_are_404(client: TestClient) -> None:
    post(client, run("P", rid(), reads=["D"]))
    missing_ns = get(client, "D", namespace="nowhere")
    assert missing_ns.status_code == 404
    assert missing_ns.json() == {"code": 404, "message": "namespace 'nowhere' not found"}
    missing = get(client, "E")
    assert missing.status_code == 404
    assert missing.json()["message"] == "dataset 'E' not found in namespace 'ns'"


BAD_PARAMETERS: list[tuple[dict[str, str], str]] = [
    ({"start": "yesterday"}, "start"),
    ({"start": "-5"}, "start"),
    ({"start": "now-7x"}, "start"),
    ({"end": "2026-13-45"}, "end"),
    ({"end": "-1476321533"}, "end"),
    ({"start": "now", "end": "now-1d"}, "start"),
    ({"levels": "0"}, "levels"),
    ({"levels": "-3"}, "levels"),
    ({"levels": "ten"}, "levels"),
    ({"levels": "1_0"}, "levels"),
    ({"levels": "2.5"}, "levels"),
    ({"levels": "101"}, "levels"),
    ({"collapse": "program"}, "collapse"),
    ({"rollup": "application"}, "rollup"),
    ({"direction": "sideways"}, "direction"),
]


def test_bad_parameters_are_400_naming_them(client: TestClient) -> None:
    """Parameters are checked before the dataset is looked up. One app for all cases."""
    for params, parameter in BAD_PARAMETERS:
        response = get(client, "D", **params)
        assert response.status_code == 400, (params, response.text)
        body = response.json()
        assert body["code"] == 400
        assert body["message"].startswith(f"{parameter}: "), (params, body)
        assert [e["path"] for e in body["errors"]] == [parameter], (params, body)


def test_levels_cap_is_the_setting(db_url: str) -> None:
    settings = Settings(db_url=db_url, max_levels=3)
    with TestClient(create_app(settings, migrate=False)) as client:
        post(client, run("P", rid(), reads=["D"]))
        assert get(client, "D", levels=3).status_code == 200
        response = get(client, "D", levels=4)
        assert response.status_code == 400
        assert "levels: must be at most 3" in response.json()["message"]
        # The default (10) is lowered to the cap rather than refused.
        assert get(client, "D").status_code == 200


@pytest.fixture
def capped(db_url: str) -> Iterator[TestClient]:
    settings = Settings(db_url=db_url, max_lineage_nodes=4)
    with TestClient(create_app(settings, migrate=False)) as client:
        yield client


def test_node_cap_cuts_the_deepest_levels(capped: TestClient) -> None:
    r1, r2, r3 = rid(), rid(), rid()
    post(
        capped,
        run("P1", r1, writes=["D1"], reads=["D2"]),
        run("P2", r2, writes=["D2"], reads=["D3"]),
        run("P3", r3, reads=["D1"]),
    )
    # Six nodes in all (D1, D2, D3, P1, P2, P3); level 1 has four.
    body = lineage(capped, "D1", levels=100)
    assert body["truncated"] is True
    assert rels(body) == {
        ("D1", job("P1"), "write", r1),
        ("D2", job("P1"), "read", r1),
        ("D1", job("P3"), "read", r3),
    }
    assert len(body["data"]) + len(body["programs"]) == 4
    # Level 2 found (D2, P2, write) and (D3, P2, read): P2 and D3 were left out.
    assert (body["omittedNodes"], body["omittedRelations"]) == (2, 2)
    assert "truncated" not in lineage(capped, "D1", levels=1)


def test_relation_cap_keeps_the_nearest_levels(db_url: str) -> None:
    settings = Settings(db_url=db_url, max_lineage_relations=2)
    with TestClient(create_app(settings, migrate=False)) as capped:
        r1, r2 = rid(), rid()
        post(
            capped,
            run("P1", r1, writes=["D1"], reads=["D2"]),
            run("P2", r2, writes=["D2"], reads=["D3"]),
        )
        body = lineage(capped, "D1", levels=5, direction="upstream")
        # Level 1 is D2 -P1-> D1 (two relations); level 2, D3 -P2-> D2, is left out.
        assert rels(body) == {("D1", job("P1"), "write", r1), ("D2", job("P1"), "read", r1)}
        assert body["truncated"] is True
        assert (body["omittedNodes"], body["omittedRelations"]) == (2, 2)
        assert "truncated" not in lineage(capped, "D1", levels=1, direction="upstream")


def test_a_relation_cap_inside_a_level_keeps_its_first_relations_in_id_order(
    db_url: str,
) -> None:
    """Level 1 fits whole; of level 2's two relations the one whose dataset id orders first
    is kept, whatever order the walk found them in."""
    settings = Settings(db_url=db_url, max_lineage_relations=3)
    with TestClient(create_app(settings, migrate=False)) as capped:
        r1, r2 = rid(), rid()
        post(
            capped,
            run("P1", r1, writes=["D1"], reads=["D2"]),
            run("P2", r2, writes=["D2"], reads=["D3"]),
        )
        body = lineage(capped, "D1", levels=5, direction="upstream")
        level_2 = {"D2": ("D2", job("P2"), "write", r2), "D3": ("D3", job("P2"), "read", r2)}
        first = min(level_2, key=lambda name: DatasetRef(NS, name).id.int)
        assert rels(body) == {
            ("D1", job("P1"), "write", r1),
            ("D2", job("P1"), "read", r1),
            level_2[first],
        }
        assert body["truncated"] is True
        # The kept relation names P2 either way; D3 is left out when it is D2's.
        assert (body["omittedNodes"], body["omittedRelations"]) == (int(first == "D2"), 1)


def test_names_with_slashes_and_unicode(client: TestClient) -> None:
    namespace, name = "s3://bucket/ünï", "dir/100%2F file.csv"
    run_id = rid()
    post(client, run_event((NS, "P"), run_id=run_id, inputs=[ds(namespace, name)]))
    body = lineage(client, name, namespace=namespace)
    assert body["relations"] == [
        {
            "data": f"dataset.{namespace}.{name}",
            "program": job("P"),
            "accesses": ["read"],
            "runs": [run_id],
            "components": [],
        }
    ]
    assert body["data"][f"dataset.{namespace}.{name}"]["entityId"] == {
        "type": "dataset",
        "namespace": namespace,
        "name": name,
    }


def test_a_dataset_without_relations_is_alone(client: TestClient) -> None:
    post(client, run("P", rid(), reads=["D"], time=BASE_TIME - 10 * DAY))
    assert lineage(client, "D") == {
        "start": int((BASE_TIME - DAY).timestamp()),
        "end": int((BASE_TIME + DAY).timestamp()),
        "relations": [],
        "data": {"dataset.ns.D": {"entityId": {"type": "dataset", "namespace": NS, "name": "D"}}},
        "programs": {},
        # Its only run started ten days before BASE_TIME, outside the window: the answer says so.
        "latestRunOutsideWindow": "2026-10-22T12:00:00+00:00",
    }
