"""`/v3/subscriptions` on both stores: create, list, get, delete, and bad input refused with
422 naming the field, nothing stored."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.conftest import post
from tests.watch.test_notifications import NS, app, job_run
from tests.watch_support import SECRET

__all__ = ["app"]

HOOK = "https://hooks.example.com/lineage"


def asked(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "watch": {"dataset": {"namespace": NS, "name": "orders"}},
        "direction": "upstream",
        "levels": 3,
        "changes": ["relation_added", "relation_removed"],
        "deliver": {"webhook": {"url": HOOK, "secret": SECRET}},
    }
    body.update(changes)
    return body


def test_create_list_get_delete(app: TestClient) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    created = app.post("/v3/subscriptions", json=asked())
    assert created.status_code == 201, created.text
    answer = created.json()
    subscription = answer.pop("id")
    created_at = answer.pop("createdAt")
    assert answer == {
        "watch": {"dataset": {"namespace": NS, "name": "orders"}},
        "direction": "upstream",
        "levels": 3,
        "changes": ["relation_removed", "relation_added"],
        "activeDays": 30,
        "digest": None,
        "deliver": {"webhook": {"url": HOOK, "secret": SECRET}},
    }
    shown = app.get(f"/v3/subscriptions/{subscription}").json()
    assert shown["deliver"] == {"webhook": {"url": HOOK}}  # the secret is shown once
    assert shown["createdAt"] == created_at
    assert [s["id"] for s in app.get("/v3/subscriptions").json()["subscriptions"]] == [subscription]
    assert app.delete(f"/v3/subscriptions/{subscription}").status_code == 204
    assert app.get(f"/v3/subscriptions/{subscription}").status_code == 404
    assert app.delete(f"/v3/subscriptions/{subscription}").status_code == 404
    assert app.get("/v3/subscriptions").json() == {"subscriptions": []}


def test_a_secret_is_made_when_none_is_given(app: TestClient) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    body = asked(deliver={"webhook": {"url": HOOK}})
    secret = app.post("/v3/subscriptions", json=body).json()["deliver"]["webhook"]["secret"]
    assert len(secret) >= 32


def test_a_kafka_subscription(app: TestClient) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    created = app.post("/v3/subscriptions", json=asked(deliver={"kafka": {"topic": "lineage"}}))
    assert created.status_code == 201, created.text
    assert created.json()["deliver"] == {"kafka": {"topic": "lineage"}}


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"watch": {"dataset": {"namespace": NS, "name": "nope"}}}, "watch.dataset", "not found"),
        ({"deliver": {"webhook": {"url": "ftp://example.com/x"}}}, "deliver.webhook.url", "http"),
        ({"levels": 101}, "levels", "between 1 and 100"),
        ({"levels": 0}, "levels", "between 1 and 100"),
        ({"direction": "sideways"}, "direction", "one of"),
        ({"changes": ["relation_added", "moved"]}, "changes[1]", "not a kind"),
        (
            {"watch": {"tag": "PII"}, "changes": ["schema_break", "relation_added"]},
            "changes[1]",
            "relation_added is not told for a tag watch",
        ),
        ({"watch": {"tag": "PII"}, "changes": ["schema_break"]}, "watch.tag", "not found"),
        ({"watch": {"tag": " "}}, "watch.tag", "not blank"),
        ({"watch": {"namespace": "nowhere"}}, "watch.namespace", "not found"),
        (
            {
                "watch": {"field": {"namespace": NS, "name": "nope", "field": "id"}},
                "changes": ["schema_break"],
            },
            "watch.field",
            "not found",
        ),
        (
            {
                "watch": {"field": {"namespace": NS, "name": "orders", "field": "nope"}},
                "changes": ["schema_break"],
            },
            "watch.field.field",
            "not a field of dataset",
        ),
        (
            {"watch": {"field": {"namespace": NS, "name": "orders"}}},
            "watch.field.field",
            "required",
        ),
        ({"watch": {"table": "orders"}}, "watch", "must name one thing to watch"),
        ({"digest": 30}, "digest", "between 60 seconds"),
        ({"digest": "P8D"}, "digest", "between 60 seconds"),
        ({"digest": "hourly"}, "digest", "ISO 8601 duration"),
        ({"digest": "PT"}, "digest", "ISO 8601 duration"),
        ({"digest": True}, "digest", "ISO 8601 duration"),
        ({"deliver": {"email": "a@b"}}, "deliver", "webhook"),
        (
            {"deliver": {"webhook": {"url": HOOK, "secret": "short"}}},
            "deliver.webhook.secret",
            "16",
        ),
        ({"deliver": {"kafka": {"topic": ""}}}, "deliver.kafka.topic", "required"),
        ({"colour": "red"}, "colour", "not a field"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_nothing_is_stored(
    app: TestClient, change: dict[str, Any], field: str, says: str
) -> None:
    post(app, job_run("etl", ["raw"], ["orders"]))
    response = app.post("/v3/subscriptions", json=asked(**change))
    assert response.status_code == 422, response.text
    assert field in response.text
    assert says in response.text
    assert app.get("/v3/subscriptions").json() == {"subscriptions": []}


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/x", "http://10.1.2.3/x", "http://169.254.169.254/", "http://localhost/x"],
)
def test_a_webhook_on_a_private_address_is_refused_by_default(client: TestClient, url: str) -> None:
    """The `client` app has the default settings: allow_private_webhooks off."""
    post(client, job_run("etl", ["raw"], ["orders"]))
    response = client.post("/v3/subscriptions", json=asked(deliver={"webhook": {"url": url}}))
    assert response.status_code == 422, response.text
    assert "deliver.webhook.url" in response.text
    assert "private address" in response.text
    assert client.get("/v3/subscriptions").json() == {"subscriptions": []}


def test_a_body_that_is_not_an_object_is_refused(app: TestClient) -> None:
    response = app.post("/v3/subscriptions", json=["watch"])
    assert response.status_code == 422
    assert "a subscription is a JSON object" in response.text
