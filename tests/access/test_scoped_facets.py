"""Facets that name a job or dataset of another namespace (design §5), on the estate of
`estate.py` plus finance's `reconcile`, which read finance's invoices and wrote finance's
ledger (field `total`) and whose facets name `vault`, a namespace no scoped reader here may
read, in every shape OpenLineage names one: a `jobDependencies` run facet's upstream job, a
`symlinks` identifier, a `columnLineage` input field, a `lineage` job facet's input and a
`lineage` dataset facet's input, and a producer's own facet nesting a reference deep down.

An event is returned verbatim or not at all, so an event naming `vault` anywhere is left out
of a finance reader's lists and counts; every other answer a finance reader may get names
no `vault` object, whatever route gives it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import FIN_DS, FIN_JOBS, READ_ALL, WRITE_ALL, bearer, issue, symlinks
from tests.access.test_scoped_events import get, run_ids
from tests.builders import BASE_TIME, PRODUCER, ds, hours, run_event
from upstream.api.deps import current_time
from upstream.client.http import segment

VAULT = "vault"
RECONCILE_RUN = "00000000-0000-4000-8000-0000000000b1"
TIDY_RUN = "00000000-0000-4000-8000-0000000000b2"


def _facet(**body: Any) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": "https://example.com/facet.json", **body}


def waited_for(namespace: str) -> dict[str, Any]:
    """A `jobDependencies` run facet: the run waited for `namespace`'s secret_job."""
    upstream = {"job": {"namespace": namespace, "name": "secret_job"}, "run": {"runId": TIDY_RUN}}
    return {"run_facets": {"jobDependencies": _facet(upstream=[upstream])}}


def aliased(namespace: str) -> dict[str, Any]:
    """The ledger is also `namespace`'s secret_alias."""
    return {"output_facets": {"symlinks": symlinks(namespace, "secret_alias")}}


def column_from(namespace: str) -> dict[str, Any]:
    """The ledger's total is computed from `namespace`'s secret_table.amount."""
    source = {"namespace": namespace, "name": "secret_table", "field": "amount"}
    fields = {"total": {"inputFields": [source]}}
    return {"output_facets": {"columnLineage": _facet(fields=fields)}}


def job_lineage_from(namespace: str) -> dict[str, Any]:
    """The job's `lineage` facet: the ledger is fed by `namespace`'s secret_table."""
    source = {"type": "DATASET", "namespace": namespace, "name": "secret_table"}
    entry = {"type": "DATASET", "namespace": FIN_DS, "name": "ledger", "inputs": [source]}
    return {"job_facets": {"lineage": _facet(entries=[entry])}}


def dataset_lineage_from(namespace: str) -> dict[str, Any]:
    """The ledger's own `lineage` facet: fed by `namespace`'s secret_table."""
    source = {"type": "DATASET", "namespace": namespace, "name": "secret_table"}
    return {"output_facets": {"lineage": _facet(inputs=[source])}}


def nested_deep(namespace: str) -> dict[str, Any]:
    """A producer's own facet, holding a reference three levels down in a list."""
    deep = {"steps": [{"reads": {"namespace": namespace, "name": "secret_table"}}]}
    return {"run_facets": {"acme_plan": _facet(plan=deep)}}


SHAPES: dict[str, Callable[[str], dict[str, Any]]] = {
    "jobDependencies": waited_for,
    "symlinks": aliased,
    "columnLineage": column_from,
    "lineage job facet": job_lineage_from,
    "lineage dataset facet": dataset_lineage_from,
    "a facet of its own": nested_deep,
}


def reconcile(run_id: str, naming: dict[str, Any]) -> dict[str, Any]:
    """reconcile's COMPLETE event (an hour after the estate's), with the facets `naming`
    gives (`run_facets`, `job_facets`, `output_facets`)."""
    ledger = ds(FIN_DS, "ledger", **naming.get("output_facets", {}))
    facets = ledger.setdefault("facets", {})
    facets["schema"] = _facet(fields=[{"name": "total", "type": "int"}])
    facets["tags"] = _facet(tags=[{"key": "PII", "value": "true", "field": "total"}])
    return run_event(
        (FIN_JOBS, "reconcile"),
        run_id=run_id,
        time=BASE_TIME + hours(1),
        inputs=[ds(FIN_DS, "invoices")],
        outputs=[ledger],
        run_facets=naming.get("run_facets"),
        job_facets=naming.get("job_facets"),
    )


def post(client: TestClient, *events: dict[str, Any]) -> None:
    response = client.post("/api/v1/lineage", json=list(events), headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text


@pytest.fixture
def clock(estate: TestClient) -> Iterator[TestClient]:
    """The estate, the clock three hours after its events."""
    app: Any = estate.app
    app.dependency_overrides[current_time] = lambda: BASE_TIME + hours(3)
    yield estate
    app.dependency_overrides.clear()


@pytest.mark.parametrize("shape", SHAPES)
def test_an_event_whose_facet_names_a_hidden_namespace_is_not_listed(
    clock: TestClient, shape: str
) -> None:
    """Two runs of reconcile: one whose facet names finance's own namespace, one whose facet
    names vault. Of the estate's events a finance reader sees none (each names crm or hr);
    of these, the first only, counted alone; a reader of finance and vault both."""
    shown_run, hidden_run = RECONCILE_RUN, "00000000-0000-4000-8000-0000000000b3"
    post(clock, reconcile(shown_run, SHAPES[shape](FIN_DS)))
    post(clock, reconcile(hidden_run, SHAPES[shape](VAULT)))
    finance = issue(clock, "read:finance/*")["token"]
    answer = get(clock, "/api/v1/events/lineage", finance)
    assert run_ids(answer["events"]) == [shown_run]
    assert answer["totalCount"] == 1
    full = get(clock, "/api/v1/events/lineage", READ_ALL)
    assert answer["events"][0] == next(e for e in full["events"] if e["run"]["runId"] == shown_run)
    assert run_ids(get(clock, "/api/v1/events", finance)["events"]) == [shown_run]
    of_ledger = get(clock, f"/api/v1/events/{segment(FIN_DS)}", finance)["events"]
    assert run_ids(of_ledger) == [shown_run]
    counts = get(clock, "/api/v1/stats/lineage-events", finance, period="DAY")
    assert sum(c["complete"] for c in counts) == 1
    both = issue(clock, "read:finance/*", f"read:{VAULT}", name="both")["token"]
    assert set(run_ids(get(clock, "/api/v1/events", both)["events"])) == {shown_run, hidden_run}


def every_shape(namespace: str) -> dict[str, Any]:
    """Every shape of `SHAPES` at once, naming `namespace`."""
    merged: dict[str, dict[str, Any]] = {}
    for shape in SHAPES.values():
        for place, facets in shape(namespace).items():
            merged.setdefault(place, {}).update(facets)
    return merged


#: What each path parameter is, for the sweep: finance's reconcile, its run and its ledger.
PATH_VALUES = {
    "dataset": "ledger",
    "job": "reconcile",
    "field": "total",
    "run_id": RECONCILE_RUN,
    "runId": RECONCILE_RUN,
    "asset": "datasets",
    "tag": "PII",
    "source": FIN_DS,
}
#: The query parameters a sweep sends to the paths that need them.
QUERIES: dict[str, list[dict[str, str]]] = {
    "/api/v1/lineage": [
        {"nodeId": f"dataset:{FIN_DS}:ledger"},
        {"nodeId": f"job:{FIN_JOBS}:reconcile"},
    ],
    "/api/v1/column-lineage": [
        {"nodeId": f"dataset:{FIN_DS}:ledger", "withDownstream": "true"},
        {"nodeId": f"job:{FIN_JOBS}:reconcile"},
    ],
    "/api/v1/search": [{"q": "e"}],
    "/api/v2beta/search/jobs": [{"q": "e"}],
    "/api/v2beta/search/datasets": [{"q": "e"}],
    "/api/v1/stats/lineage-events": [{"period": "DAY"}],
    "/api/v1/stats/{asset}": [{"period": "DAY"}],
    "/v3/namespaces/{namespace}/datasets/{dataset}/lineage/diff": [
        {"from": "0..1", "to": "0..now"}
    ],
}


def swept_paths(client: TestClient, subscription: str) -> Iterator[tuple[str, dict[str, str]]]:
    """Every GET route of the API, its path filled in (`subscription` for a subscription),
    with each set of query parameters it is swept with (the lineage window all time)."""
    versions = get(
        client, f"/api/v1/namespaces/{segment(FIN_DS)}/datasets/ledger/versions", READ_ALL
    )
    job_versions = get(
        client, f"/api/v1/namespaces/{segment(FIN_JOBS)}/jobs/reconcile/versions", READ_ALL
    )
    routes = get(client, "/openapi.json", READ_ALL)["paths"]
    for route, operations in routes.items():
        if "get" not in operations:
            continue
        jobs = "/jobs/{job}" in route
        values = {
            **PATH_VALUES,
            "subscription": subscription,
            "namespace": segment(FIN_JOBS if jobs else FIN_DS),
            "version": (job_versions if jobs else versions)["versions"][0]["version"],
        }
        path = route.format(**{k: segment(v) if k != "namespace" else v for k, v in values.items()})
        lineage = route.startswith("/v3/namespaces/") and not route.endswith("/diff")
        window = {"start": "0", "end": "now"} if lineage else {}
        for query in QUERIES.get(route, [{}]):
            yield path, {**window, **query}


def leaks(client: TestClient, token: str, subscription: str) -> list[str]:
    """The swept paths whose answer (body or headers) names vault, with their status."""
    found = []
    for path, query in swept_paths(client, subscription):
        response = client.get(path, params=query, headers=bearer(token))
        said = response.text + repr(response.headers.items())
        if VAULT in said or "secret_" in said:
            found.append(f"{response.status_code} {path} {query}")
    return found


def test_no_answer_names_an_object_a_facet_names_in_a_hidden_namespace(
    clock: TestClient,
) -> None:
    """The sweep finds vault in the full reader's answers (the events, the ledger's and the
    run's documents), and in none of a finance reader's."""
    post(clock, reconcile(RECONCILE_RUN, every_shape(VAULT)))
    watch = {
        "watch": {"namespace": VAULT},
        "changes": ["relation_added"],
        "deliver": {"kafka": {"topic": "lineage"}},
    }
    watched = clock.post("/v3/subscriptions", json=watch, headers=bearer(WRITE_ALL))
    assert watched.status_code == 201, watched.text
    subscription = watched.json()["id"]
    finance = issue(clock, "read:finance/*")["token"]
    assert leaks(clock, finance, subscription) == []
    assert "200 /api/v1/events {}" in leaks(clock, READ_ALL, subscription)
