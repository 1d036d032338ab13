"""`upstream token create|list|revoke`: issue, list and revoke access tokens scoped to
namespaces, on a server (`/v3/tokens`, with an admin token) or directly in a database (to
make the first tokens before any server runs)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from upstream.commands.database import database
from upstream.commands.target import Target
from upstream.model.access import parse_scopes
from upstream.model.errors import InvalidParameter
from upstream.model.timeexpr import parse_time_expression
from upstream.store.access_tokens import create_token, list_tokens, revoke_token


def issue(target: Target, name: str, scopes: list[str], expires: str | None) -> dict[str, Any]:
    """A new token's document, with its secret (`token`). `expires` is a time expression
    (`now+90d`, ISO-8601)."""
    now = datetime.now(UTC)
    try:
        expires_at = None if expires is None else parse_time_expression(expires, now)
    except ValueError as exc:
        raise InvalidParameter.at("--expires", str(exc)) from None
    if target.db is None:
        with target.client() as client:
            iso = None if expires_at is None else expires_at.isoformat()
            return dict(client.create_token(name, scopes, iso))
    checked = parse_scopes(scopes)
    with database(target.db, migrate=True) as store:
        token, secret = store.write(lambda conn: create_token(conn, name, checked, expires_at, now))
    return {**token.doc(), "token": secret}


def listed(target: Target) -> list[dict[str, Any]]:
    """Every issued token, without its secret."""
    if target.db is None:
        with target.client() as client:
            return list(client.list_tokens()["tokens"])
    with database(target.db, migrate=False) as store, store.read() as conn:
        return [token.doc() for token in list_tokens(conn)]


def revoked(target: Target, token_id: str) -> dict[str, Any]:
    """Revoke one token; its document."""
    if target.db is None:
        with target.client() as client:
            return dict(client.revoke_token(token_id))
    now = datetime.now(UTC)
    with database(target.db, migrate=True) as store:
        return store.write(lambda conn: revoke_token(conn, token_id, now)).doc()
