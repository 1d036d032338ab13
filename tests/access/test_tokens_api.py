"""Issued tokens (design §5): created by an admin and shown once, listed without secrets,
revoked and expired tokens refused at once in every server process, bad input refused with
nothing stored, every creation, revocation and refusal in the audit log and the metrics."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.access.estate import ADMIN, READ_ALL, SETTINGS_TOKENS, WRITE_ALL, bearer, issue
from upstream.api.app import create_app
from upstream.settings import Settings
from upstream.store import schema as t
from upstream.store.access_tokens import digest_of


def stored_tokens(db_url: str) -> list[sa.Row[tuple[object, ...]]]:
    engine = sa.create_engine(db_url)
    with engine.connect() as conn:
        rows = list(conn.execute(sa.select(t.access_tokens)))
    engine.dispose()
    return rows


def test_a_created_token_is_shown_once_and_stored_as_a_digest(
    server: TestClient, db_url: str
) -> None:
    created = issue(server, "read:finance/*", "write:postgres://wh:5432", name="finance team")
    assert set(created) == {
        "id",
        "name",
        "token",
        "prefix",
        "scopes",
        "createdAt",
        "expiresAt",
        "revokedAt",
    }
    assert created["name"] == "finance team"
    assert created["scopes"] == ["read:finance/*", "write:postgres://wh:5432"]
    assert created["token"].startswith("upt_")
    assert created["prefix"] == created["token"][:12]
    assert created["expiresAt"] is None
    assert created["revokedAt"] is None
    (row,) = stored_tokens(db_url)
    assert row.digest == digest_of(created["token"]) != created["token"]
    listed = server.get("/v3/tokens", headers=bearer(ADMIN))
    assert listed.status_code == 200
    (entry,) = listed.json()["tokens"]
    assert entry == {k: v for k, v in created.items() if k != "token"}
    assert created["token"] not in listed.text


def test_an_issued_token_reads_and_a_revoked_one_is_refused_at_once_by_every_process(
    server: TestClient, db_url: str
) -> None:
    token = issue(server, "read:*")
    settings = Settings(db_url=db_url, tokens=SETTINGS_TOKENS)  # type: ignore[arg-type]
    with TestClient(create_app(settings, migrate=False)) as other_process:
        for client in (server, other_process):
            assert (
                client.get("/api/v1/namespaces", headers=bearer(token["token"])).status_code == 200
            )
        revoked = server.delete(f"/v3/tokens/{token['id']}", headers=bearer(ADMIN))
        assert revoked.status_code == 200
        assert revoked.json()["revokedAt"] is not None
        for client in (server, other_process):
            answer = client.get("/api/v1/namespaces", headers=bearer(token["token"]))
            assert answer.status_code == 401
            assert answer.json()["message"] == "the token was revoked"


def test_an_expired_token_is_refused(server: TestClient, db_url: str) -> None:
    soon = datetime.now(UTC) + timedelta(hours=1)
    token = issue(server, "read:*", expiresAt=soon.isoformat())
    assert server.get("/api/v1/namespaces", headers=bearer(token["token"])).status_code == 200
    engine = sa.create_engine(db_url)
    with engine.begin() as conn:  # the clock moves on: the expiry is now in the past
        conn.execute(t.access_tokens.update().values(expires_at=datetime.now(UTC) - timedelta(1)))
    engine.dispose()
    answer = server.get("/api/v1/namespaces", headers=bearer(token["token"]))
    assert answer.status_code == 401
    assert answer.json()["message"] == "the token has expired"


def test_an_unknown_issued_token_is_refused(server: TestClient) -> None:
    answer = server.get("/api/v1/namespaces", headers=bearer("upt_not-a-token-anyone-made"))
    assert answer.status_code == 401
    assert answer.json()["message"] == "the token is not valid on this server"


@pytest.mark.parametrize(
    ("scopes", "path", "message"),
    [
        (["read:fin*ance"], "scopes[0]", "a namespace pattern may hold `*` only as its last"),
        (["read:"], "scopes[0]", "the namespace pattern is empty"),
        (["admin", "delete:hr"], "scopes[1]", "'delete:hr' is no scope"),
        (["finance"], "scopes[0]", "'finance' is no scope"),
        ([], "scopes", "a token needs at least one scope"),
    ],
)
def test_malformed_scopes_are_refused_naming_the_scope_and_nothing_is_stored(
    server: TestClient, db_url: str, scopes: list[str], path: str, message: str
) -> None:
    answer = server.post("/v3/tokens", json={"name": "x", "scopes": scopes}, headers=bearer(ADMIN))
    assert answer.status_code == 422, answer.text
    (error,) = answer.json()["errors"]
    assert error["path"] == path
    assert error["message"].startswith(message)
    assert stored_tokens(db_url) == []


def test_an_expiry_in_the_past_is_refused_and_nothing_is_stored(
    server: TestClient, db_url: str
) -> None:
    body = {"name": "x", "scopes": ["read:*"], "expiresAt": "2020-01-01T00:00:00Z"}
    answer = server.post("/v3/tokens", json=body, headers=bearer(ADMIN))
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["path"] == "expiresAt"
    assert stored_tokens(db_url) == []


def test_a_scope_naming_a_namespace_nothing_wrote_yet_is_allowed(server: TestClient) -> None:
    assert issue(server, "read:not-there-yet")["scopes"] == ["read:not-there-yet"]


@pytest.mark.parametrize("who", [READ_ALL, WRITE_ALL, "issued"])
def test_only_an_admin_manages_tokens(server: TestClient, db_url: str, who: str) -> None:
    issued = issue(server, "write:*")
    token = issued["token"] if who == "issued" else who
    body = {"name": "x", "scopes": ["read:*"]}
    created = server.post("/v3/tokens", json=body, headers=bearer(token))
    assert created.status_code == 403
    assert len(stored_tokens(db_url)) == 1
    assert server.get("/v3/tokens", headers=bearer(token)).status_code == 403
    assert server.delete(f"/v3/tokens/{issued['id']}", headers=bearer(token)).status_code == 403
    assert all(row.revoked_at is None for row in stored_tokens(db_url))


def test_an_issued_admin_token_manages_tokens(server: TestClient) -> None:
    admin = issue(server, "admin")["token"]
    answer = server.post(
        "/v3/tokens", json={"name": "y", "scopes": ["read:hr"]}, headers=bearer(admin)
    )
    assert answer.status_code == 201


def test_revoking_an_unknown_token_is_404(server: TestClient) -> None:
    missing = "00000000-0000-4000-8000-00000000abcd"
    assert server.delete(f"/v3/tokens/{missing}", headers=bearer(ADMIN)).status_code == 404
    assert server.delete("/v3/tokens/not-an-id", headers=bearer(ADMIN)).status_code == 404


def test_a_server_without_tokens_issues_none(client: TestClient, db_url: str) -> None:
    answer = client.post("/v3/tokens", json={"name": "x", "scopes": ["read:*"]})
    assert answer.status_code == 403
    assert "UPSTREAM_TOKENS" in answer.json()["message"]
    assert stored_tokens(db_url) == []


def test_creations_revocations_and_refusals_are_audited_and_counted(
    server: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="upstream.audit")
    token = issue(server, "read:hr")
    server.delete(f"/v3/tokens/{token['id']}", headers=bearer(ADMIN))
    server.get("/api/v1/namespaces", headers=bearer(token["token"]))
    server.post("/v3/tokens", json={"name": "x", "scopes": ["admin"]}, headers=bearer(READ_ALL))
    lines = [r for r in caplog.records if r.name == "upstream.audit"]
    assert [r.getMessage().split(":")[0] for r in lines] == [
        "token created",
        "token revoked",
        f"refused GET /api/v1/namespaces with {token['prefix']}",
        "refused POST /v3/tokens with a settings token",
    ]
    assert lines[0].token_id == token["id"]
    assert lines[0].token_prefix == token["prefix"]
    assert lines[2].token_id is None
    assert lines[2].status == 401
    assert all(token["token"] not in r.getMessage() for r in lines)
    metrics = server.get("/metrics", headers=bearer(READ_ALL)).text
    assert 'upstream_tokens_changed_total{action="created"} 1.0' in metrics
    assert 'upstream_tokens_changed_total{action="revoked"} 1.0' in metrics
    assert 'upstream_access_refused_total{status="401"} 1.0' in metrics
    assert 'upstream_access_refused_total{status="403"} 1.0' in metrics
