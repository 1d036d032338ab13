"""Access control (design §5): tokens from the environment or the config file, roles read <
write < admin, 401 for no or unknown token, 403 for a role too low, health probes open."""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests
from fastapi import FastAPI
from fastapi.testclient import TestClient
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.transport.http import (
    ApiKeyTokenProvider,
    HttpCompression,
    HttpConfig,
    HttpTransport,
)
from starlette.routing import Mount, Route

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from tests.readback import counts
from upstream.api.app import create_app
from upstream.api.auth import Role, TokenTable, presented_token, required_role
from upstream.settings import Settings, SettingsError, load_settings
from upstream.store.engine import Store

READ, WRITE, ADMIN = "l00k-only-token", "s3cret-writer-token", "r00t-admin-token"
TOKENS = f"read:{READ},write:{WRITE},admin:{ADMIN}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# -- settings -------------------------------------------------------------------------------


def test_tokens_from_the_environment_are_kept_only_as_digests(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UPSTREAM_TOKENS", " write:s3cret , read:l00k ")
    settings = load_settings()
    assert settings.tokens == (
        "write:sha256:" + hashlib.sha256(b"s3cret").hexdigest(),
        "read:sha256:" + hashlib.sha256(b"l00k").hexdigest(),
    )
    assert "s3cret" not in repr(settings)
    assert "l00k" not in repr(settings)


def test_tokens_from_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = hashlib.sha256(b"from-a-vault").hexdigest()
    config = tmp_path / "upstream.toml"
    config.write_text(f'tokens = ["admin:r00t", "read:sha256:{hashed.upper()}"]\n')
    monkeypatch.setenv("UPSTREAM_CONFIG", str(config))
    monkeypatch.delenv("UPSTREAM_TOKENS", raising=False)
    table = TokenTable.from_settings(load_settings().tokens)
    assert table.role_of("r00t") is Role.ADMIN
    assert table.role_of("from-a-vault") is Role.READ
    assert table.role_of(f"sha256:{hashed}") is None


def test_no_tokens_means_an_open_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_TOKENS", "")
    assert load_settings().tokens == ()
    assert not TokenTable.from_settings(()).enabled


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("s3cret", "entry 1 is not a role:token pair"),
        ("write:ok,read:", "entry 2 is not a role:token pair"),
        ("writer:s3cret", "entry 1 has the unknown role 'writer' (use read, write, admin)"),
        ("read:sha256:abc", "entry 1: a hashed token is sha256: and 64 hex digits"),
        ("read:s3cret,write:s3cret", "entry 2 repeats the token of an earlier entry"),
    ],
)
def test_invalid_tokens_stop_the_start_naming_the_setting_not_the_secret(
    monkeypatch: pytest.MonkeyPatch, value: str, complaint: str
) -> None:
    monkeypatch.setenv("UPSTREAM_TOKENS", value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert str(caught.value) == f"invalid setting: UPSTREAM_TOKENS: Value error, {complaint}"
    assert "s3cret" not in str(caught.value)


# -- the rules ------------------------------------------------------------------------------


def test_roles_imply_the_weaker_ones() -> None:
    table = TokenTable.from_settings(Settings(tokens=TOKENS).tokens)
    assert [table.role_of(t) for t in (READ, WRITE, ADMIN, "nope", "")] == [
        Role.READ,
        Role.WRITE,
        Role.ADMIN,
        None,
        None,
    ]
    assert Role.READ < Role.WRITE < Role.ADMIN


@pytest.mark.parametrize(
    ("method", "path", "needed"),
    [
        ("GET", "/health", None),
        ("GET", "/ready", None),
        ("POST", "/health", None),
        ("GET", "/api/v1/namespaces", Role.READ),
        ("HEAD", "/", Role.READ),
        ("OPTIONS", "/api/v1/lineage", Role.READ),
        ("GET", "/health/", Role.READ),
        ("POST", "/api/v1/lineage", Role.WRITE),
        ("PUT", "/api/v1/namespaces/x", Role.WRITE),
        ("DELETE", "/api/v1/namespaces/x", Role.WRITE),
        ("PATCH", "/anything", Role.WRITE),
    ],
)
def test_required_role_by_method_and_path(method: str, path: str, needed: Role | None) -> None:
    assert required_role(method, path) == needed


@pytest.mark.parametrize(
    ("header", "token"),
    [
        ("Bearer abc", "abc"),
        ("bearer   abc ", "abc"),
        ("Basic " + base64.b64encode(b"anyone:abc").decode(), "abc"),
        ("Basic " + base64.b64encode(b"anyone:a:b").decode(), "a:b"),
        ("Basic " + base64.b64encode(b"no-colon").decode(), None),
        ("Basic !!!", None),
        ("Bearer", None),
        ("Token abc", None),
        ("abc", None),
    ],
)
def test_presented_token(header: str, token: str | None) -> None:
    assert presented_token(header) == token


# -- in-process -----------------------------------------------------------------------------


@pytest.fixture
def secured(db_url: str) -> Iterator[TestClient]:
    """The API with read, write and admin tokens configured."""
    app = create_app(Settings(db_url=db_url, tokens=TOKENS), migrate=False)
    with TestClient(app) as test_client:
        yield test_client


def test_posting_needs_a_write_token(secured: TestClient, store: Store) -> None:
    event = run_event(("auth", "job"), inputs=[ds("auth", "in")], outputs=[ds("auth", "out")])
    before = counts(store)

    missing = secured.post("/api/v1/lineage", json=event)
    assert missing.status_code == 401
    assert missing.json() == {
        "code": 401,
        "message": "authentication required: send the header Authorization: Bearer <token>",
    }
    assert missing.headers.get_list("www-authenticate") == [
        'Bearer realm="upstream"',
        'Basic realm="upstream", charset="UTF-8"',
    ]

    unknown = secured.post("/api/v1/lineage", json=event, headers=bearer("guess"))
    assert (unknown.status_code, unknown.json()["message"]) == (
        401,
        "the token is not valid on this server",
    )

    wrong_scheme = secured.post("/api/v1/lineage", json=event, headers={"Authorization": READ})
    assert (wrong_scheme.status_code, wrong_scheme.json()["message"]) == (
        401,
        "the Authorization header must be Bearer <token>",
    )

    read_only = secured.post("/api/v1/lineage", json=event, headers=bearer(READ))
    assert read_only.status_code == 403
    assert read_only.json() == {
        "code": 403,
        "message": "a read token may not POST /api/v1/lineage: that needs a write token",
    }
    assert "www-authenticate" not in read_only.headers
    assert counts(store) == before

    assert secured.post("/api/v1/lineage", json=event, headers=bearer(WRITE)).status_code == 201
    assert counts(store)["events"] == 1
    second = run_event(("auth", "job"), outputs=[ds("auth", "other")])
    assert secured.post("/api/v1/lineage", json=second, headers=bearer(ADMIN)).status_code == 201
    assert counts(store)["events"] == 2


def test_reading_needs_a_read_token(secured: TestClient) -> None:
    assert secured.get("/openapi.json").status_code == 401
    assert secured.get("/openapi.json", headers=bearer("guess")).status_code == 401
    for token in (READ, WRITE, ADMIN):
        assert secured.get("/openapi.json", headers=bearer(token)).status_code == 200
    basic = base64.b64encode(f"browser-user:{READ}".encode()).decode()
    assert (
        secured.get("/openapi.json", headers={"Authorization": f"Basic {basic}"}).json()["info"][
            "title"
        ]
        == "Upstream"
    )


def test_a_token_may_be_any_unicode(db_url: str) -> None:
    app = create_app(Settings(db_url=db_url, tokens="read:pässwörd-ключ"), migrate=False)
    with TestClient(app) as client:
        header = {"Authorization": "Bearer pässwörd-ключ".encode()}
        assert client.get("/openapi.json", headers=header).status_code == 200
        assert (
            client.get("/openapi.json", headers={"Authorization": b"Bearer p"}).status_code == 401
        )


def test_health_probes_stay_open(secured: TestClient) -> None:
    assert secured.get("/health").status_code == 200
    assert secured.get("/ready").json() == {"status": "ready"}


def test_unknown_paths_do_not_reveal_themselves_without_a_token(secured: TestClient) -> None:
    assert secured.get("/no/such/page").status_code == 401
    assert secured.get("/no/such/page", headers=bearer(READ)).status_code == 404


def test_every_route_is_covered(secured: TestClient) -> None:
    """Whatever routes the app has (other parts add theirs), none answers without a token:
    every operation of the OpenAPI document, and every route or mount outside it."""
    app = secured.app
    assert isinstance(app, FastAPI)
    probes = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    for route in app.routes:
        if isinstance(route, Mount):
            probes.add(("GET", route.path.rstrip("/") + "/index.html"))
        elif isinstance(route, Route):
            probes |= {(method, route.path) for method in route.methods or ()}
    assert ("POST", "/api/v1/lineage") in probes
    assert ("GET", "/docs") in probes
    for method, template in sorted(probes):
        if template in ("/health", "/ready"):
            continue
        path = template.replace(":path}", "}").replace("{", "x").replace("}", "x")
        response = secured.request(method, path)
        assert response.status_code == 401, (method, path, response.status_code)
        if method != "HEAD":
            assert response.json()["code"] == 401


def test_an_open_server_needs_no_token(client: TestClient) -> None:
    event = run_event(("open", "job"), outputs=[ds("open", "out")])
    assert client.post("/api/v1/lineage", json=event).status_code == 201
    assert client.get("/openapi.json").status_code == 200


# -- a live server and the real OpenLineage client -----------------------------------------


def ol_event(name: str) -> RunEvent:
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=str(uuid.uuid4())),
        job=Job(namespace="auth-client", name=name),
        inputs=[InputDataset(namespace="auth-client", name=f"{name}.in")],
        outputs=[OutputDataset(namespace="auth-client", name=f"{name}.out")],
        producer="https://github.com/upstream-lineage/upstream/tests",
    )


def ol_client(url: str, token: str | None, gzip: bool = False) -> OpenLineageClient:
    config = HttpConfig(
        url=url,
        auth=ApiKeyTokenProvider({"apiKey": token}) if token else HttpConfig(url=url).auth,
        compression=HttpCompression.GZIP if gzip else None,
        retry={"total": 0},
    )
    return OpenLineageClient(transport=HttpTransport(config))


def test_openlineage_client_api_key_against_a_live_server(
    db_url: str, tmp_path: Path, store: Store
) -> None:
    server = LiveServer(db_url, tmp_path, env={"UPSTREAM_TOKENS": TOKENS}).start()
    try:
        ol_client(server.url, WRITE).emit(ol_event("plain"))
        ol_client(server.url, ADMIN, gzip=True).emit(ol_event("gzipped"))
        refusals = {}
        for label, token in (("none", None), ("unknown", "guess"), ("read", READ)):
            with pytest.raises(requests.HTTPError) as caught:
                ol_client(server.url, token).emit(ol_event(label))
            refusals[label] = caught.value.response.status_code
        assert refusals == {"none": 401, "unknown": 401, "read": 403}
        assert requests.get(f"{server.url}/health", timeout=5).status_code == 200
        read = requests.get(f"{server.url}/openapi.json", headers=bearer(READ), timeout=5)
        assert read.status_code == 200
    finally:
        server.stop()
    assert counts(store)["events"] == 2
    assert "open: no tokens configured" not in server.log()


def test_an_open_live_server_says_so_at_start(tmp_path: Path) -> None:
    """The warning does not depend on the database, so one (SQLite) server shows it."""
    db_url = f"sqlite:///{tmp_path / 'open.db'}"
    server = LiveServer(db_url, tmp_path, env={"UPSTREAM_TOKENS": ""}).start()
    server.stop()
    assert "open: no tokens configured" in server.log()


def test_a_browser_reaches_the_web_ui_with_its_login_prompt(secured: TestClient) -> None:
    """The 401 offers Basic, so a browser prompts; the token typed as password opens the UI
    and, sent again by the browser, its API calls."""
    prompt = secured.get("/")
    assert prompt.status_code == 401
    assert 'Basic realm="upstream", charset="UTF-8"' in prompt.headers.get_list("www-authenticate")
    login = {"Authorization": "Basic " + base64.b64encode(f"me:{READ}".encode()).decode()}
    page = secured.get("/", headers=login)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert secured.get("/api/v1/namespaces", headers=login).status_code == 200
