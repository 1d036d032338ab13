"""Issued tokens: create, list, revoke, and find the one a request presents (design §5).

Only the SHA-256 digest of a token is stored, with its first characters (`prefix`) so people
tell tokens apart in lists and logs; the secret is shown once, when it is made. A presented
token is looked up by its digest on every request, in the database every server process
shares, so an expiry or a revocation holds at once everywhere: no process keeps a copy.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.errors import InvalidInput, NotFound, shown
from upstream.store import schema as t

#: Every issued token starts so: a reader of a log or a leaked file recognises one, and the
#: server tells an issued token from one of the settings before any lookup.
TOKEN_MARK = "upt_"
#: How many characters of a token its prefix keeps: the mark and 8 of the secret.
PREFIX_LENGTH = len(TOKEN_MARK) + 8


@dataclass(frozen=True)
class IssuedToken:
    """A stored token, without its secret."""

    id: uuid.UUID
    name: str
    prefix: str
    scopes: tuple[str, ...]
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    def active(self, now: datetime) -> bool:
        """Neither revoked nor expired at `now`."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def doc(self) -> dict[str, Any]:
        """The token as `GET /v3/tokens` lists it: never its secret."""
        return {
            "id": str(self.id),
            "name": self.name,
            "prefix": self.prefix,
            "scopes": list(self.scopes),
            "createdAt": self.created_at.isoformat(),
            "expiresAt": None if self.expires_at is None else self.expires_at.isoformat(),
            "revokedAt": None if self.revoked_at is None else self.revoked_at.isoformat(),
        }


def digest_of(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(
    conn: Connection,
    name: str,
    scopes: tuple[str, ...],
    expires_at: datetime | None,
    now: datetime,
) -> tuple[IssuedToken, str]:
    """Store a new token with `scopes` (already checked) and return it with its secret,
    which nothing keeps. InvalidInput for a blank name or an expiry not after `now`."""
    if not name.strip():
        raise InvalidInput.at("name", "a token needs a name (who or what uses it)")
    if expires_at is not None and expires_at <= now:
        raise InvalidInput.at("expiresAt", f"{shown(expires_at.isoformat())} is not in the future")
    secret = TOKEN_MARK + secrets.token_urlsafe(32)
    token = IssuedToken(
        uuid.uuid4(), name.strip(), secret[:PREFIX_LENGTH], scopes, now, expires_at, None
    )
    conn.execute(
        t.access_tokens.insert().values(
            id=token.id,
            name=token.name,
            prefix=token.prefix,
            digest=digest_of(secret),
            scopes=list(scopes),
            created_at=now,
            expires_at=expires_at,
        )
    )
    return token, secret


def _token(row: Any) -> IssuedToken:
    return IssuedToken(
        row.id,
        row.name,
        row.prefix,
        tuple(row.scopes),
        row.created_at,
        row.expires_at,
        row.revoked_at,
    )


_COLUMNS = [c for c in t.access_tokens.c if c.name != "digest"]


def list_tokens(conn: Connection) -> list[IssuedToken]:
    """Every issued token, revoked and expired ones too, oldest first."""
    query = sa.select(*_COLUMNS).order_by(t.access_tokens.c.created_at, t.access_tokens.c.id)
    return [_token(row) for row in conn.execute(query)]


def revoke_token(conn: Connection, token_id: str, now: datetime) -> IssuedToken:
    """Revoke a token from `now` on (revoking it again changes nothing); NotFound for an id
    no token has."""
    try:
        wanted = uuid.UUID(token_id)
    except ValueError:
        raise NotFound(f"token {shown(token_id)} not found") from None
    c = t.access_tokens.c
    conn.execute(
        t.access_tokens.update()
        .where(c.id == wanted, c.revoked_at.is_(None))
        .values(revoked_at=now)
    )
    row = conn.execute(sa.select(*_COLUMNS).where(c.id == wanted)).first()
    if row is None:
        raise NotFound(f"token {shown(token_id)} not found")
    return _token(row)


def token_presented(conn: Connection, secret: str) -> IssuedToken | None:
    """The stored token whose secret is `secret`, active or not; None when none is. The
    lookup is by digest, through the unique index, so its time says nothing of near
    matches."""
    query = sa.select(*_COLUMNS).where(t.access_tokens.c.digest == digest_of(secret))
    row = conn.execute(query).first()
    return None if row is None else _token(row)
