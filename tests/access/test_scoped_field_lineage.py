"""Field summaries filtered by the token's namespaces (design §5), on the estate of
`estate.py` with each job's output stating its columns' lineage (columnLineage):

    crm:raw_customers.id -> crm:customers.id                                   (extract)
    crm:customers.id, finance/warehouse:orders.customer_id
        -> finance/warehouse:invoices.customer_id;  orders.amount -> invoices.amount
                                                                         (build_invoices)
    hr:employees.salary -> hr:salaries.amount                                  (payroll)
    hr:salaries.amount, invoices.amount -> finance/warehouse:costs.total;
        invoices.customer_id -> costs.customer_id                              (costs)
    costs.total, costs.customer_id -> crm:churn_scores.score;
        costs.customer_id -> crm:churn_scores.customer_id                      (churn)

Each expected answer is worked out by hand from these edges, beside the full reader's.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.access.estate import (
    CRM,
    FIN_DS,
    FIN_JOBS,
    HR,
    READ_ALL,
    WINDOW,
    WRITE_ALL,
    bearer,
    estate_events,
    issue,
    symlinks,
)
from tests.builders import column_lineage, ds, run_event, schema_facet
from tests.ingest.test_owners_and_tags import tags
from upstream.client.http import segment

F = segment(FIN_DS)
#: Per output dataset (namespace, name): output field -> its input fields.
COLUMNS: dict[tuple[str, str], dict[str, list[tuple[str, str, str]]]] = {
    (CRM, "customers"): {"id": [(CRM, "raw_customers", "id")]},
    (FIN_DS, "invoices"): {
        "customer_id": [(CRM, "customers", "id"), (FIN_DS, "orders", "customer_id")],
        "amount": [(FIN_DS, "orders", "amount")],
    },
    (HR, "salaries"): {"amount": [(HR, "employees", "salary")]},
    (FIN_DS, "costs"): {
        "total": [(HR, "salaries", "amount"), (FIN_DS, "invoices", "amount")],
        "customer_id": [(FIN_DS, "invoices", "customer_id")],
    },
    (CRM, "churn_scores"): {
        "score": [(FIN_DS, "costs", "total"), (FIN_DS, "costs", "customer_id")],
        "customer_id": [(FIN_DS, "costs", "customer_id")],
    },
}


@pytest.fixture
def fields(server: TestClient) -> TestClient:
    """`server` holding the estate, each dataset with its schema (the fields the column
    lineage names), each output with its column lineage."""
    schemas: dict[tuple[str, str], set[str]] = {}
    for (namespace, name), columns in COLUMNS.items():
        schemas.setdefault((namespace, name), set()).update(columns)
        for ins in columns.values():
            for in_namespace, in_name, field in ins:
                schemas.setdefault((in_namespace, in_name), set()).add(field)
    events = estate_events()
    for event in events:
        for dataset in event["inputs"]:
            key = (dataset["namespace"], dataset["name"])
            fields_of = sorted(schemas[key])
            dataset["facets"] = {"schema": schema_facet(*((f, "string") for f in fields_of))}
        for output in event["outputs"]:
            key = (output["namespace"], output["name"])
            output["facets"] = {
                "schema": schema_facet(*((f, "string") for f in sorted(schemas[key]))),
                "columnLineage": column_lineage(COLUMNS[key]),
            }
            if output["name"] == "salaries":
                # Also finance's `salaries_view`: an alias a finance reader may name.
                output["facets"]["symlinks"] = symlinks(FIN_DS, "salaries_view")
    response = server.post("/api/v1/lineage", json=events, headers=bearer(WRITE_ALL))
    assert response.status_code == 201, response.text
    return server


def summary(client: TestClient, token: str, path: str, **params: str) -> dict[str, Any]:
    response = client.get(
        f"/v3/namespaces/{path}", params={**WINDOW, "levels": "5", **params}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def reached(side: list[dict[str, Any]]) -> set[str]:
    """The fields of one side of a summary as `namespace:dataset.field`."""
    return {
        f"{entry['dataset']['namespace']}:{entry['dataset']['name']}.{name}"
        for entry in side
        for name in entry["fields"]
    }


def test_a_finance_reader_sees_the_finance_fields_of_costs_total(fields: TestClient) -> None:
    finance = issue(fields, "read:finance/*")["token"]
    path = f"{F}/datasets/costs/lineage/fields/total"
    answer = summary(fields, finance, path)
    # Upstream: invoices.amount, then orders.amount; hr's salaries.amount is met and not
    # passed (so employees.salary is neither shown nor counted). Downstream: crm's
    # churn_scores.score is met. Two hidden fields, one edge to each.
    assert answer["incoming"] == [
        {
            "dataset": {"namespace": FIN_DS, "name": "invoices"},
            "fields": ["amount"],
            "origins": {"amount": ["columnLineage"]},
        },
        {
            "dataset": {"namespace": FIN_DS, "name": "orders"},
            "fields": ["amount"],
            "origins": {"amount": ["columnLineage"]},
        },
    ]
    assert answer["outgoing"] == []
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)
    assert "salar" not in repr(answer)
    assert "churn" not in repr(answer)
    full = summary(fields, READ_ALL, path)
    assert reached(full["incoming"]) == {
        f"{FIN_DS}:invoices.amount",
        f"{FIN_DS}:orders.amount",
        f"{HR}:salaries.amount",
        f"{HR}:employees.salary",
    }
    assert reached(full["outgoing"]) == {f"{CRM}:churn_scores.score"}
    assert "hiddenNodes" not in full
    assert "hiddenRelations" not in full


def test_a_walk_does_not_pass_through_a_hidden_field(fields: TestClient) -> None:
    """crm's churn_scores.customer_id comes from crm's customers.id and raw_customers.id, but
    only through finance: a crm reader sees none of them, one hidden field met."""
    crm = issue(fields, "read:crm")["token"]
    path = f"{CRM}/datasets/churn_scores/lineage/fields/customer_id"
    answer = summary(fields, crm, path, direction="incoming")
    assert answer == {"incoming": [], "hiddenNodes": 1, "hiddenRelations": 1}
    full = summary(fields, READ_ALL, path, direction="incoming")
    assert reached(full["incoming"]) == {
        f"{FIN_DS}:costs.customer_id",
        f"{FIN_DS}:invoices.customer_id",
        f"{FIN_DS}:orders.customer_id",
        f"{CRM}:customers.id",
        f"{CRM}:raw_customers.id",
    }


def test_hidden_fields_and_edges_are_counted_once_each(fields: TestClient) -> None:
    """Downstream of orders.customer_id a finance reader reaches invoices.customer_id, then
    costs.customer_id, which feeds crm's churn_scores.customer_id and .score: two hidden
    fields, two edges. A token reading finance and crm sees them, nothing hidden."""
    finance = issue(fields, "read:finance/*")["token"]
    path = f"{F}/datasets/orders/lineage/fields/customer_id"
    answer = summary(fields, finance, path, direction="outgoing")
    assert reached(answer["outgoing"]) == {
        f"{FIN_DS}:invoices.customer_id",
        f"{FIN_DS}:costs.customer_id",
    }
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)
    both = issue(fields, "read:finance/*", f"read:{CRM}")["token"]
    wider = summary(fields, both, path, direction="outgoing")
    assert reached(wider["outgoing"]) == reached(answer["outgoing"]) | {
        f"{CRM}:churn_scores.customer_id",
        f"{CRM}:churn_scores.score",
    }
    assert (wider["hiddenNodes"], wider["hiddenRelations"]) == (0, 0)


def test_levels_bound_what_is_met(fields: TestClient) -> None:
    """At one hop from costs.total upstream, a finance reader sees invoices.amount and meets
    salaries.amount; orders.amount, two hops away, is not reached."""
    finance = issue(fields, "read:finance/*")["token"]
    path = f"{F}/datasets/costs/lineage/fields/total"
    answer = summary(fields, finance, path, direction="incoming", levels="1")
    assert reached(answer["incoming"]) == {f"{FIN_DS}:invoices.amount"}
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (1, 1)


@pytest.mark.parametrize(
    ("hidden_path", "missing_path", "missing_name"),
    [
        # A dataset of hr, against a name hr does not hold and a namespace never stored.
        (f"{HR}/datasets/salaries", f"{HR}/datasets/no_such", b""),
        (f"{HR}/datasets/salaries", "nowhere/datasets/salaries", b"nowhere"),
        # finance's alias of hr's salaries, against a name finance does not hold.
        (f"{F}/datasets/salaries_view", f"{F}/datasets/no_such", b"no_such"),
    ],
)
def test_a_field_of_a_hidden_dataset_is_404_like_a_missing_one(
    fields: TestClient, hidden_path: str, missing_path: str, missing_name: bytes
) -> None:
    finance = issue(fields, "read:finance/*")["token"]
    tail = "/lineage/fields/amount"

    def get(path: str, token: str) -> Any:
        return fields.get(f"/v3/namespaces/{path}{tail}", params=WINDOW, headers=bearer(token))

    hidden, missing = get(hidden_path, finance), get(missing_path, finance)
    assert hidden.status_code == missing.status_code == 404
    # The missing answer names what was asked; in its place, the hidden one's name.
    asked = hidden_path.split("/")[0 if missing_name == b"nowhere" else -1]
    expected = missing.content.replace(missing_name, asked.encode()) if missing_name else None
    assert hidden.content == (missing.content if expected is None else expected)
    if hidden_path.startswith(F):
        assert b"hr" not in hidden.content
        assert b"salaries'" not in hidden.content
    assert get(hidden_path, READ_ALL).status_code == 200


def column_graph(
    client: TestClient, token: str, node_id: str, **params: str
) -> tuple[set[str], dict[str, Any]]:
    """The field node ids of Marquez's column lineage around `node_id`, and the answer."""
    response = client.get(
        "/api/v1/column-lineage", params={"nodeId": node_id, **params}, headers=bearer(token)
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return {node["id"] for node in answer["graph"]}, answer


def test_marquez_column_lineage_walks_only_readable_fields(fields: TestClient) -> None:
    """Around costs.total both ways, as the summary: invoices.amount and orders.amount
    upstream; hr's salaries.amount and crm's churn_scores.score met, one edge each."""
    finance = issue(fields, "read:finance/*")["token"]
    node = f"datasetField:{FIN_DS}:costs:total"
    nodes, answer = column_graph(fields, finance, node, withDownstream="true")
    assert nodes == {
        f"datasetField:{FIN_DS}:costs:total",
        f"datasetField:{FIN_DS}:invoices:amount",
        f"datasetField:{FIN_DS}:orders:amount",
    }
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)
    assert "salar" not in repr(answer)
    assert "churn" not in repr(answer)
    full_nodes, full = column_graph(fields, READ_ALL, node, withDownstream="true")
    assert full_nodes == nodes | {
        f"datasetField:{HR}:salaries:amount",
        f"datasetField:{HR}:employees:salary",
        f"datasetField:{CRM}:churn_scores:score",
    }
    assert "hiddenNodes" not in full


def test_column_lineage_of_a_job_counts_its_hidden_outputs(fields: TestClient) -> None:
    """finance's costs job also wrote hr's cost_report. From costs' fields upstream a
    finance reader reaches invoices' amount and customer_id and orders' amount and
    customer_id, meeting hr's salaries.amount and crm's customers.id; the hidden output
    is one more node and relation."""
    event = run_event((FIN_JOBS, "costs"), outputs=[ds(HR, "cost_report")])
    posted = fields.post("/api/v1/lineage", json=[event], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(fields, "read:finance/*")["token"]
    nodes, answer = column_graph(fields, finance, f"job:{FIN_JOBS}:costs")
    assert nodes == {
        f"datasetField:{FIN_DS}:{name}"
        for name in (
            "costs:total",
            "costs:customer_id",
            "invoices:amount",
            "invoices:customer_id",
            "orders:amount",
            "orders:customer_id",
        )
    }
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (3, 3)
    assert "cost_report" not in repr(answer)


def test_a_hidden_column_lineage_node_is_404_like_a_missing_one(fields: TestClient) -> None:
    finance = issue(fields, "read:finance/*")["token"]

    def answer(node: str) -> Any:
        return fields.get(
            "/api/v1/column-lineage", params={"nodeId": node}, headers=bearer(finance)
        )

    hidden, missing = answer(f"dataset:{FIN_DS}:salaries_view"), answer(f"dataset:{FIN_DS}:no_such")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"salaries_view")
    assert (
        fields.get(
            "/api/v1/column-lineage",
            params={"nodeId": f"dataset:{FIN_DS}:salaries_view"},
            headers=bearer(READ_ALL),
        ).status_code
        == 200
    )


def impact(client: TestClient, token: str, path: str, **params: str) -> dict[str, Any]:
    response = client.get(
        f"/v3/namespaces/{path}/impact",
        params={**WINDOW, "levels": "5", **params},
        headers=bearer(token),
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def rows(answer: dict[str, Any]) -> list[tuple[str, str, str | None, int | None, list[str]]]:
    return [
        (r["namespace"], r["name"], r["field"], r["hops"], [j["name"] for j in r["jobs"]])
        for r in answer["rows"]
    ]


def test_the_impact_of_a_dataset_shows_only_what_the_reader_may_see(fields: TestClient) -> None:
    """Downstream of orders: invoices (build_invoices), costs (costs), and their fields.
    hr's audit read orders and wrote invoices: the dataset walk meets both its relations
    (one node), and audit is no job of the invoices rows; crm's churn reading costs is met
    (one node, one relation). The field walk meets churn_scores' score and customer_id (two
    fields) by three edges (from costs.total and costs.customer_id)."""
    audit = run_event(
        (HR, "audit"), inputs=[ds(FIN_DS, "orders")], outputs=[ds(FIN_DS, "invoices")]
    )
    posted = fields.post("/api/v1/lineage", json=[audit], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(fields, "read:finance/*")["token"]
    answer = impact(fields, finance, f"{F}/datasets/orders")
    assert rows(answer) == [
        (FIN_DS, "invoices", None, 1, ["build_invoices"]),
        (FIN_DS, "invoices", "amount", 1, ["build_invoices"]),
        (FIN_DS, "invoices", "customer_id", 1, ["build_invoices"]),
        (FIN_DS, "costs", None, 2, ["costs"]),
        (FIN_DS, "costs", "customer_id", 2, ["costs"]),
        (FIN_DS, "costs", "total", 2, ["costs"]),
    ]
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2 + 2, 3 + 3)
    assert "audit" not in repr(answer)
    assert "churn" not in repr(answer)
    full = impact(fields, READ_ALL, f"{F}/datasets/orders")
    assert (FIN_DS, "invoices", None, 1, ["build_invoices", "audit"]) in rows(full)
    assert {(r[0], r[1], r[2]) for r in rows(full)} >= {
        (CRM, "churn_scores", None),
        (CRM, "churn_scores", "score"),
        (CRM, "churn_scores", "customer_id"),
    }
    assert "hiddenNodes" not in full


def test_the_impact_of_a_field_stops_at_hidden_fields(fields: TestClient) -> None:
    """Downstream of orders.customer_id: invoices.customer_id, costs.customer_id; crm's
    churn_scores.score and .customer_id are met, by one edge each from costs.customer_id."""
    finance = issue(fields, "read:finance/*")["token"]
    answer = impact(fields, finance, f"{F}/datasets/orders/fields/customer_id")
    assert [(r[1], r[2], r[3]) for r in rows(answer)] == [
        ("invoices", None, 1),
        ("invoices", "customer_id", 1),
        ("costs", None, 2),
        ("costs", "customer_id", 2),
    ]
    assert (answer["hiddenNodes"], answer["hiddenRelations"]) == (2, 2)
    full = impact(fields, READ_ALL, f"{F}/datasets/orders/fields/customer_id")
    assert (CRM, "churn_scores", "customer_id") in {(r[0], r[1], r[2]) for r in rows(full)}


@pytest.mark.parametrize("tail", ["/impact", "/fields/amount/impact"])
def test_the_impact_of_a_hidden_dataset_is_404_like_a_missing_one(
    fields: TestClient, tail: str
) -> None:
    finance = issue(fields, "read:finance/*")["token"]

    def answer(name: str) -> Any:
        return fields.get(
            f"/v3/namespaces/{F}/datasets/{name}{tail}", params=WINDOW, headers=bearer(finance)
        )

    hidden, missing = answer("salaries_view"), answer("no_such")
    assert hidden.status_code == missing.status_code == 404
    assert hidden.content == missing.content.replace(b"no_such", b"salaries_view")


@pytest.fixture
def tagged(fields: TestClient) -> TestClient:
    """`fields` with `pii` on hr's employees.salary, crm's raw_customers.id and finance's
    orders.customer_id."""
    put = fields.put("/api/v1/tags/pii", headers=bearer(WRITE_ALL))
    assert put.status_code == 200, put.text
    for namespace, dataset, field in (
        (HR, "employees", "salary"),
        (CRM, "raw_customers", "id"),
        (F, "orders", "customer_id"),
    ):
        path = f"/api/v1/namespaces/{namespace}/datasets/{dataset}/fields/{field}/tags/pii"
        response = fields.post(path, headers=bearer(WRITE_ALL))
        assert response.status_code == 200, response.text
    return fields


def tag_reach(client: TestClient, token: str) -> dict[str, Any]:
    response = client.get("/v3/tags/pii/reach", headers=bearer(token))
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def test_tag_reach_shows_each_reader_its_own_fields(tagged: TestClient) -> None:
    """Full: from salary, salaries.amount, costs.total, churn_scores.score; from
    raw_customers.id, customers.id, invoices.customer_id, costs.customer_id and both
    churn_scores fields; orders.customer_id adds nothing new. A finance reader starts from
    orders.customer_id only, reaches invoices' and costs' customer_id and meets the two
    churn_scores fields; a crm reader starts from raw_customers.id, reaches customers.id and
    meets invoices.customer_id."""
    full = tag_reach(tagged, READ_ALL)
    assert reached(full["tagged"]) == {
        f"{HR}:employees.salary",
        f"{CRM}:raw_customers.id",
        f"{FIN_DS}:orders.customer_id",
    }
    assert reached(full["reach"]) == {
        f"{HR}:salaries.amount",
        f"{CRM}:customers.id",
        f"{FIN_DS}:invoices.customer_id",
        f"{FIN_DS}:costs.customer_id",
        f"{FIN_DS}:costs.total",
        f"{CRM}:churn_scores.score",
        f"{CRM}:churn_scores.customer_id",
    }
    assert "hiddenNodes" not in full
    finance = tag_reach(tagged, issue(tagged, "read:finance/*")["token"])
    assert reached(finance["tagged"]) == {f"{FIN_DS}:orders.customer_id"}
    assert reached(finance["reach"]) == {
        f"{FIN_DS}:invoices.customer_id",
        f"{FIN_DS}:costs.customer_id",
    }
    assert (finance["hiddenNodes"], finance["hiddenRelations"]) == (2, 2)
    crm = tag_reach(tagged, issue(tagged, f"read:{CRM}")["token"])
    assert reached(crm["tagged"]) == {f"{CRM}:raw_customers.id"}
    assert reached(crm["reach"]) == {f"{CRM}:customers.id"}
    assert (crm["hiddenNodes"], crm["hiddenRelations"]) == (1, 1)
    assert "finance" not in repr(crm)
    assert "hr" not in repr(crm)


def test_a_tag_only_hidden_datasets_name_is_404_like_an_unknown_one(fields: TestClient) -> None:
    """`salary_band` is named only by the `tags` facet of hr's employees: a finance reader
    gets the bytes an unknown tag gets, the full reader its reach."""
    facet = tags("Dataset", {"key": "salary_band", "value": "true", "field": "salary"})
    event = run_event((HR, "payroll"), inputs=[ds(HR, "employees", tags=facet)])
    posted = fields.post("/api/v1/lineage", json=[event], headers=bearer(WRITE_ALL))
    assert posted.status_code == 201, posted.text
    finance = issue(fields, "read:finance/*")["token"]
    hidden = fields.get("/v3/tags/salary_band/reach", headers=bearer(finance))
    unknown = fields.get("/v3/tags/no_such/reach", headers=bearer(finance))
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.content == unknown.content.replace(b"no_such", b"salary_band")
    full = fields.get("/v3/tags/salary_band/reach", headers=bearer(READ_ALL))
    assert full.status_code == 200
    assert reached(full.json()["tagged"]) == {f"{HR}:employees.salary"}
