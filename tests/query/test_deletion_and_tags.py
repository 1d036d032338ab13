"""Soft deletion and tags through the Marquez-compatible API (design §4.4, §4.5), on both
stores: what a DELETE answers, what leaves lists and search, what `includeDeleted` brings back,
how a later event revives an entity, and tags on datasets and fields. Expected values are
worked out by hand from the events each test posts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from marquez_client import MarquezClient
from typer.testing import CliRunner

from tests.builders import BASE_TIME, column_lineage, ds, hours, run_event, schema_facet
from tests.conftest import LiveServer, post
from tests.ingest.test_owners_and_tags import tags
from upstream.cli import app as cli_app
from upstream.ingest.rebuild import rebuild
from upstream.store.engine import Store

W = "postgresql://warehouse"
WE = quote(W, safe="")  # as clients send a namespace holding `/` in a path
ETL = "etl"


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return dict(response.json())


def load_orders(client: TestClient) -> None:
    """`etl.load_orders` reads `raw.orders` and writes `sales.orders` (fields id, email)."""
    post(
        client,
        run_event(
            (ETL, "load_orders"),
            inputs=[ds(W, "raw.orders")],
            outputs=[ds(W, "sales.orders", schema=schema_facet(("id", "int"), ("email", "text")))],
        ),
    )


def dataset_names(client: TestClient, **params: Any) -> list[str]:
    listed = ok(client.get(f"/api/v1/namespaces/{WE}/datasets", params=params))
    assert listed["totalCount"] == len(listed["datasets"])
    return [d["name"] for d in listed["datasets"]]


def test_deleting_a_dataset_answers_its_document_and_hides_it(client: TestClient) -> None:
    load_orders(client)
    deleted = ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/sales.orders"))
    assert deleted["id"] == {"namespace": W, "name": "sales.orders"}
    assert deleted["deleted"] is True
    assert dataset_names(client) == ["raw.orders"]
    assert dataset_names(client, includeDeleted="true") == ["raw.orders", "sales.orders"]
    missing = client.get(f"/api/v1/namespaces/{WE}/datasets/sales.orders")
    assert missing.status_code == 404
    assert "was deleted" in missing.json()["message"]
    flagged = ok(client.get(f"/api/v1/namespaces/{WE}/datasets/sales.orders?includeDeleted=true"))
    assert flagged["deleted"] is True
    # Deleting it again: it is not there any more, as Marquez answers.
    assert client.delete(f"/api/v1/namespaces/{WE}/datasets/sales.orders").status_code == 404


def test_deleted_entities_leave_search_unless_asked_for(client: TestClient) -> None:
    load_orders(client)
    ok(client.delete(f"/api/v1/namespaces/{ETL}/jobs/load_orders"))
    found = ok(client.get("/api/v1/search", params={"q": "orders"}))
    assert [(r["type"], r["name"]) for r in found["results"]] == [
        ("DATASET", "raw.orders"),
        ("DATASET", "sales.orders"),
    ]
    assert found["totalCount"] == 2
    everything = ok(client.get("/api/v1/search", params={"q": "orders", "includeDeleted": True}))
    assert [(r["type"], r["name"], r.get("deleted", False)) for r in everything["results"]] == [
        ("JOB", "load_orders", True),
        ("DATASET", "raw.orders", False),
        ("DATASET", "sales.orders", False),
    ]


def test_deleting_a_job_hides_it_from_its_namespace(client: TestClient) -> None:
    load_orders(client)
    job = ok(client.delete(f"/api/v1/namespaces/{ETL}/jobs/load_orders"))
    assert job["name"] == "load_orders"
    assert job["deleted"] is True
    jobs = ok(client.get(f"/api/v1/namespaces/{ETL}/jobs"))
    assert jobs == {"jobs": [], "totalCount": 0}
    assert client.get(f"/api/v1/namespaces/{ETL}/jobs/load_orders").status_code == 404
    assert client.delete(f"/api/v1/namespaces/{ETL}/jobs/nothing").status_code == 404


def test_deleting_a_namespace_deletes_what_it_holds(client: TestClient) -> None:
    load_orders(client)
    namespace = ok(client.delete(f"/api/v1/namespaces/{ETL}"))
    assert namespace["name"] == ETL
    assert namespace["isHidden"] is True
    names = [n["name"] for n in ok(client.get("/api/v1/namespaces"))["namespaces"]]
    assert names == [W]
    hidden = ok(client.get("/api/v1/namespaces", params={"includeDeleted": True}))
    assert [(n["name"], n["isHidden"]) for n in hidden["namespaces"]] == [
        (ETL, True),
        (W, False),
    ]
    assert client.get(f"/api/v1/namespaces/{ETL}/jobs").status_code == 404
    job = ok(client.get(f"/api/v1/namespaces/{ETL}/jobs/load_orders?includeDeleted=true"))
    assert job["deleted"] is True


def test_a_later_event_naming_a_deleted_entity_revives_it(client: TestClient) -> None:
    load_orders(client)
    ok(client.delete(f"/api/v1/namespaces/{ETL}"))
    ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/sales.orders"))
    post(
        client,
        run_event(
            (ETL, "load_orders"),
            time=BASE_TIME + hours(24),
            outputs=[ds(W, "sales.orders")],
        ),
    )
    assert ok(client.get(f"/api/v1/namespaces/{WE}/datasets/sales.orders"))["deleted"] is False
    assert ok(client.get(f"/api/v1/namespaces/{ETL}/jobs/load_orders"))["deleted"] is False
    assert ok(client.get(f"/api/v1/namespaces/{ETL}"))["isHidden"] is False
    # raw.orders was not named by the new event: it stays as it was (not deleted either).
    assert dataset_names(client) == ["raw.orders", "sales.orders"]


def test_reposting_a_stored_event_does_not_revive(client: TestClient) -> None:
    event = run_event((ETL, "load_orders"), outputs=[ds(W, "sales.orders")])
    post(client, event)
    ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/sales.orders"))
    post(client, event)  # the same event again: already stored, changes nothing
    assert dataset_names(client) == []


def test_tags_on_datasets_and_fields(client: TestClient) -> None:
    load_orders(client)
    created = ok(client.put("/api/v1/tags/PII", json={"description": "personal data"}))
    assert created == {"name": "PII", "description": "personal data"}
    tagged = ok(client.post(f"/api/v1/namespaces/{WE}/datasets/sales.orders/tags/gold"))
    assert tagged["tags"] == ["gold"]
    field = ok(client.post(f"/api/v1/namespaces/{WE}/datasets/sales.orders/fields/email/tags/PII"))
    assert [(f["name"], f["tags"]) for f in field["fields"]] == [("id", []), ("email", ["PII"])]
    tags = ok(client.get("/api/v1/tags"))
    assert tags == {
        "tags": [
            {"name": "PII", "description": "personal data"},
            {"name": "gold", "description": None},
        ]
    }
    got = ok(client.get(f"/api/v1/namespaces/{WE}/datasets/sales.orders"))
    assert got["tags"] == ["gold"]
    assert got["fields"][1]["tags"] == ["PII"]
    untagged = ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/sales.orders/tags/gold"))
    assert untagged["tags"] == []
    cleared = ok(
        client.delete(f"/api/v1/namespaces/{WE}/datasets/sales.orders/fields/email/tags/PII")
    )
    assert cleared["fields"][1]["tags"] == []
    # The tags themselves stay, as in Marquez.
    assert [t["name"] for t in ok(client.get("/api/v1/tags"))["tags"]] == ["PII", "gold"]


def test_put_tag_again_changes_its_description(client: TestClient) -> None:
    ok(client.put("/api/v1/tags/PII", json={"description": "old"}))
    assert ok(client.put("/api/v1/tags/PII", json={"description": "new"}))["description"] == "new"
    assert ok(client.put("/api/v1/tags/bare"))["description"] is None
    assert ok(client.get("/api/v1/tags", params={"limit": 1, "offset": 1}))["tags"] == [
        {"name": "bare", "description": None}
    ]


def test_tagging_refuses_what_is_not_there(client: TestClient) -> None:
    load_orders(client)
    base = f"/api/v1/namespaces/{WE}/datasets"
    missing_field = client.post(f"{base}/sales.orders/fields/nothing/tags/PII")
    assert missing_field.status_code == 404
    assert missing_field.json()["message"] == (
        f"field 'nothing' not found in dataset 'sales.orders' of namespace '{W}'"
    )
    assert client.post(f"{base}/nothing/tags/PII").status_code == 404
    blank = client.post(f"{base}/sales.orders/tags/%20")
    assert blank.status_code in (400, 422)
    assert "tag" in blank.text
    extra = client.put("/api/v1/tags/PII", json={"description": "x", "colour": "red"})
    assert extra.status_code == 400
    assert "colour" in extra.text
    # Nothing of the refused requests was stored.
    assert ok(client.get("/api/v1/tags")) == {"tags": []}
    assert ok(client.get(f"{base}/sales.orders"))["tags"] == []


@pytest.fixture(scope="module")
def shared_server(
    module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """One server for the module's tests that need a process of their own, on each store (a
    start costs about 2 s of imports). Sharing is safe: of them only the Marquez client's
    test makes tags (and reads the list of them), and each test posts the `etl.load_orders`
    it deletes or tags, which a later event revives, so what another left changes nothing
    it reads."""
    server = LiveServer(module_db_url, tmp_path_factory.mktemp("server")).start()
    yield server
    server.stop()


def test_the_marquez_python_client_tags(shared_server: LiveServer) -> None:
    """`create_tag`, `list_tags`, `tag_dataset` and `tag_dataset_field` of the real client."""
    event = run_event(
        (ETL, "load_orders"),
        outputs=[ds(W, "sales.orders", schema=schema_facet(("id", "int"), ("email", "text")))],
    )
    assert httpx.post(f"{shared_server.url}/api/v1/lineage", json=event).status_code == 201
    marquez = MarquezClient(shared_server.url)
    assert marquez.create_tag("PII", "personal data") == {
        "name": "PII",
        "description": "personal data",
    }
    assert marquez.tag_dataset(W, "sales.orders", "gold")["tags"] == ["gold"]
    field = marquez.tag_dataset_field(W, "sales.orders", "email", "PII")
    assert [f["tags"] for f in field["fields"]] == [[], ["PII"]]
    assert marquez.list_tags() == {
        "tags": [
            {"name": "PII", "description": "personal data"},
            {"name": "gold", "description": None},
        ]
    }


def test_the_delete_command_on_a_database(client: TestClient, db_url: str) -> None:
    load_orders(client)
    runner = CliRunner()
    done = runner.invoke(cli_app, ["delete", "dataset", W, "sales.orders", "--db", db_url])
    assert done.exit_code == 0, done.output
    assert done.output == (
        f"deleted dataset 'sales.orders' in namespace '{W}'; the next event naming it brings it"
        " back\n"
    )
    assert dataset_names(client) == ["raw.orders"]
    again = runner.invoke(cli_app, ["delete", "dataset", W, "sales.orders", "--db", db_url])
    assert again.exit_code == 1
    assert "was deleted" in again.output
    job = runner.invoke(cli_app, ["delete", "job", ETL, "load_orders", "--db", db_url])
    assert job.exit_code == 0, job.output
    namespace = runner.invoke(cli_app, ["delete", "namespace", W, "--db", db_url])
    assert namespace.exit_code == 0, namespace.output
    assert client.get(f"/api/v1/namespaces/{WE}/datasets").status_code == 404


def test_the_delete_command_on_a_server(shared_server: LiveServer) -> None:
    event = run_event((ETL, "load_orders"), outputs=[ds(W, "sales.orders")])
    assert httpx.post(f"{shared_server.url}/api/v1/lineage", json=event).status_code == 201
    runner = CliRunner()
    args = ["--url", shared_server.url]
    done = runner.invoke(cli_app, ["delete", "job", ETL, "load_orders", *args])
    assert done.exit_code == 0, done.output
    jobs = httpx.get(f"{shared_server.url}/api/v1/namespaces/{ETL}/jobs").json()
    assert jobs["totalCount"] == 0
    missing = runner.invoke(cli_app, ["delete", "dataset", W, "nothing", *args])
    assert missing.exit_code == 1
    assert f"dataset 'nothing' not found in namespace '{W}'" in missing.output


def pii_chain(client: TestClient) -> None:
    """raw.users.email -> stage.users.contact -> mart.contacts.contact_email (columnLineage),
    and stage.users.id from raw.users.id, which carries no tag."""
    stage = ds(
        W,
        "stage.users",
        schema=schema_facet(("id", "int"), ("contact", "text")),
        columnLineage=column_lineage(
            {"contact": [(W, "raw.users", "email")], "id": [(W, "raw.users", "id")]}
        ),
    )
    mart = ds(
        W,
        "mart.contacts",
        schema=schema_facet(("contact_email", "text")),
        columnLineage=column_lineage({"contact_email": [(W, "stage.users", "contact")]}),
    )
    raw = ds(W, "raw.users", schema=schema_facet(("id", "int"), ("email", "text")))
    post(
        client,
        run_event((ETL, "stage_users"), inputs=[raw], outputs=[stage]),
        run_event((ETL, "build_contacts"), inputs=[ds(W, "stage.users")], outputs=[mart]),
    )


def test_a_tags_reach_follows_field_lineage_downstream(client: TestClient) -> None:
    pii_chain(client)
    ok(client.post(f"/api/v1/namespaces/{WE}/datasets/raw.users/fields/email/tags/PII"))
    reach = ok(client.get("/v3/tags/PII/reach"))
    assert reach == {
        "tag": "PII",
        "levels": 10,
        "tagged": [{"dataset": {"namespace": W, "name": "raw.users"}, "fields": ["email"]}],
        "reach": [
            {
                "dataset": {"namespace": W, "name": "mart.contacts"},
                "fields": ["contact_email"],
                "origins": {"contact_email": ["columnLineage"]},
            },
            {
                "dataset": {"namespace": W, "name": "stage.users"},
                "fields": ["contact"],
                "origins": {"contact": ["columnLineage"]},
            },
        ],
    }
    near = ok(client.get("/v3/tags/PII/reach", params={"levels": 1}))
    assert near["reach"] == [
        {
            "dataset": {"namespace": W, "name": "stage.users"},
            "fields": ["contact"],
            "origins": {"contact": ["columnLineage"]},
        }
    ]


def test_a_tag_on_a_dataset_reaches_from_each_of_its_fields(client: TestClient) -> None:
    pii_chain(client)
    ok(client.post(f"/api/v1/namespaces/{WE}/datasets/raw.users/tags/restricted"))
    reach = ok(client.get("/v3/tags/restricted/reach"))
    assert reach["tagged"] == [
        {"dataset": {"namespace": W, "name": "raw.users"}, "fields": ["email", "id"]}
    ]
    assert [(r["dataset"]["name"], r["fields"]) for r in reach["reach"]] == [
        ("mart.contacts", ["contact_email"]),
        ("stage.users", ["contact", "id"]),
    ]


def tag_raw_users_by_facet(client: TestClient) -> None:
    """A later run reads raw.users with a `tags` facet (TagsDatasetFacet 2-0-3): `pii` on the
    email field, `domain:crm` on the whole dataset."""
    tagged = ds(
        W,
        "raw.users",
        tags=tags(
            "Dataset",
            {"key": "pii", "value": "true", "source": "DBT", "field": "email"},
            {"key": "domain", "value": "crm", "source": "USER"},
        ),
    )
    post(client, run_event((ETL, "audit_users"), inputs=[tagged], time=BASE_TIME + hours(1)))


def test_a_field_tag_from_a_facet_reaches_as_one_set_through_the_api(client: TestClient) -> None:
    pii_chain(client)
    tag_raw_users_by_facet(client)
    reach = ok(client.get("/v3/tags/pii/reach"))
    assert reach["tagged"] == [
        {"dataset": {"namespace": W, "name": "raw.users"}, "fields": ["email"]}
    ]
    assert [(r["dataset"]["name"], r["fields"]) for r in reach["reach"]] == [
        ("mart.contacts", ["contact_email"]),
        ("stage.users", ["contact"]),
    ]


def test_a_dataset_tag_from_a_facet_reaches_from_each_of_its_fields(client: TestClient) -> None:
    pii_chain(client)
    tag_raw_users_by_facet(client)
    reach = ok(client.get("/v3/tags/domain:crm/reach", params={"levels": 1}))
    assert reach["tagged"] == [
        {"dataset": {"namespace": W, "name": "raw.users"}, "fields": ["email", "id"]}
    ]
    assert [(r["dataset"]["name"], r["fields"]) for r in reach["reach"]] == [
        ("stage.users", ["contact", "id"]),
    ]
    # The facet's key alone is no tag of its own.
    assert client.get("/v3/tags/domain/reach").status_code == 404


def test_facet_tags_of_a_deleted_dataset_reach_nothing(client: TestClient) -> None:
    pii_chain(client)
    tag_raw_users_by_facet(client)
    ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/raw.users"))
    assert client.get("/v3/tags/pii/reach").status_code == 404


def test_the_reach_of_an_unknown_or_unused_tag(client: TestClient) -> None:
    pii_chain(client)
    missing = client.get("/v3/tags/nothing/reach")
    assert missing.status_code == 404
    assert missing.json()["message"] == "tag 'nothing' not found"
    ok(client.put("/api/v1/tags/unused"))
    assert ok(client.get("/v3/tags/unused/reach")) == {
        "tag": "unused",
        "levels": 10,
        "tagged": [],
        "reach": [],
    }
    assert client.get("/v3/tags/unused/reach", params={"levels": 0}).status_code == 400


def test_a_rebuild_keeps_deletions_and_tags(client: TestClient, store: Store) -> None:
    """People delete and tag, events do not: `upstream db rebuild`, which derives everything
    again from the raw events, keeps both, and replaying the events received before the
    deletion does not end it."""
    load_orders(client)
    ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/raw.orders"))
    ok(client.post(f"/api/v1/namespaces/{WE}/datasets/sales.orders/fields/email/tags/PII"))
    rebuild(store)
    assert dataset_names(client) == ["sales.orders"]
    got = ok(client.get(f"/api/v1/namespaces/{WE}/datasets/sales.orders"))
    assert got["fields"][1]["tags"] == ["PII"]
    post(
        client,
        run_event((ETL, "load_orders"), time=BASE_TIME + hours(1), inputs=[ds(W, "raw.orders")]),
    )
    assert dataset_names(client) == ["raw.orders", "sales.orders"]


def chain(client: TestClient) -> None:
    """raw -> load -> mid -> build -> out, in namespace W (jobs in ETL)."""
    post(
        client,
        run_event((ETL, "load"), inputs=[ds(W, "raw")], outputs=[ds(W, "mid")]),
        run_event((ETL, "build"), inputs=[ds(W, "mid")], outputs=[ds(W, "out")]),
    )


def upstream_of(client: TestClient, name: str) -> set[tuple[str, str, str]]:
    response = client.get(
        f"/v3/namespaces/{WE}/datasets/{name}/lineage",
        params={"direction": "upstream", "levels": 5, "start": "0", "collapse": "run"},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    return {
        (
            body["data"][r["data"]]["entityId"]["name"],
            body["programs"][r["program"]]["entityId"]["name"],
            access,
        )
        for r in body["relations"]
        for access in r["accesses"]
    }


def test_lineage_does_not_pass_through_a_deleted_dataset(client: TestClient) -> None:
    chain(client)
    assert upstream_of(client, "out") == {
        ("out", "build", "write"),
        ("mid", "build", "read"),
        ("mid", "load", "write"),
        ("raw", "load", "read"),
    }
    ok(client.delete(f"/api/v1/namespaces/{WE}/datasets/mid"))
    assert upstream_of(client, "out") == {("out", "build", "write")}
    graph = ok(client.get("/api/v1/lineage", params={"nodeId": f"dataset:{W}:out"}))
    assert sorted(node["id"] for node in graph["graph"]) == [f"dataset:{W}:out", f"job:{ETL}:build"]
    missing = client.get(f"/v3/namespaces/{WE}/datasets/mid/lineage")
    assert missing.status_code == 404
    assert "was deleted" in missing.json()["message"]
    # An event naming mid again brings the whole chain back.
    post(client, run_event((ETL, "load"), time=BASE_TIME + hours(2), outputs=[ds(W, "mid")]))
    assert ("raw", "load", "read") in upstream_of(client, "out")


def test_lineage_does_not_pass_through_a_deleted_job(client: TestClient) -> None:
    chain(client)
    ok(client.delete(f"/api/v1/namespaces/{ETL}/jobs/load"))
    assert upstream_of(client, "out") == {("out", "build", "write"), ("mid", "build", "read")}
    graph = ok(client.get("/api/v1/lineage", params={"nodeId": f"dataset:{W}:out"}))
    assert sorted(node["id"] for node in graph["graph"]) == [
        f"dataset:{W}:mid",
        f"dataset:{W}:out",
        f"job:{ETL}:build",
    ]
    exported = ok(client.get("/v3/lineage/graph"))
    assert [(f["source"], f["target"]) for f in exported["flows"]] == [
        (f"dataset.{W}.mid", f"dataset.{W}.out")
    ]
