"""Bearer-token access control for every route (design §5).

One ASGI middleware decides by method and path, so routes added later are covered without
asking: `/health` and `/ready` are open (load balancers probe them); GET, HEAD and OPTIONS
need a `read` token; every other method needs `write`. `write` implies `read`, `admin`
implies both. With no token configured the server is open. Tokens arrive as
`Authorization: Bearer <token>` (what the OpenLineage client's `api_key` sends) or as the
password of HTTP Basic (so a browser can open the web UI after its login prompt); they are
compared by SHA-256 digest, in constant time, against every configured digest.

Issued tokens (`upt_…`, made by an admin through `/v3/tokens`) are looked up in the store
on every request, so an expiry or a revocation holds at once in every process; their scopes
open namespaces (`upstream.model.access`). Whatever the token, the request goes on with its
`Access` in `scope["state"]["access"]`, which routes read through `api.deps.AccessDep`; an
open server gives every request full access.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum

from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from upstream.model.access import Access
from upstream.model.errors import StoreUnavailable
from upstream.settings import HASHED, TOKEN_ROLES
from upstream.store.access_tokens import (
    PREFIX_LENGTH,
    TOKEN_MARK,
    IssuedToken,
    token_presented,
)
from upstream.store.engine import Store
from upstream.store.outage import RETRY_AFTER_SECONDS

OPEN_PATHS = frozenset({"/health", "/ready"})
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CHALLENGE = [
    (b"www-authenticate", b'Bearer realm="upstream"'),
    (b"www-authenticate", b'Basic realm="upstream", charset="UTF-8"'),
]


class Role(IntEnum):
    """A token's role; a higher role implies every lower one."""

    READ = 1
    WRITE = 2
    ADMIN = 3

    @classmethod
    def named(cls, name: str) -> Role:
        return cls(TOKEN_ROLES.index(name) + 1)

    @property
    def access(self) -> Access:
        """What a settings token of this role may do: every namespace."""
        return Access.full(write=self >= Role.WRITE, admin=self is Role.ADMIN)


@dataclass(frozen=True)
class TokenTable:
    """The configured tokens, as (SHA-256 digest, role); never the tokens themselves."""

    grants: tuple[tuple[bytes, Role], ...]

    @classmethod
    def from_settings(cls, tokens: Iterable[str]) -> TokenTable:
        """Read the `role:sha256:<hex>` entries that `Settings.tokens` holds."""
        grants = []
        for entry in tokens:
            role, _, digest = entry.partition(":")
            grants.append((bytes.fromhex(digest.removeprefix(HASHED)), Role.named(role)))
        return cls(tuple(grants))

    @property
    def enabled(self) -> bool:
        return bool(self.grants)

    def role_of(self, token: str) -> Role | None:
        """The role of `token`, or None. Every digest is compared, each in constant time, so
        the answer's timing says nothing about which token nearly matched."""
        digest = hashlib.sha256(token.encode("utf-8")).digest()
        found: Role | None = None
        for stored, role in self.grants:
            if hmac.compare_digest(stored, digest):
                found = role
        return found


def required_role(method: str, path: str) -> Role | None:
    """What a request needs: nothing for the health probes, `read` to look, `write` to change."""
    if path in OPEN_PATHS:
        return None
    return Role.READ if method.upper() in READ_METHODS else Role.WRITE


def presented_token(authorization: str) -> str | None:
    """The token of an `Authorization` header: `Bearer <token>`, or the password of
    `Basic base64(user:token)`; None for anything else."""
    scheme, _, credentials = authorization.strip().partition(" ")
    credentials = credentials.strip()
    if not credentials:
        return None
    if scheme.lower() == "bearer":
        return credentials
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return None
        _, sep, password = decoded.partition(":")
        return password if sep and password else None
    return None


#: A refusal: the status and the message.
Denial = tuple[int, str]


class AuthMiddleware:
    """Answers 401 (no token, or one nobody configured or issued, or one expired or revoked)
    or 403 (a token whose role is too low, or an issued token without the scope a method
    needs anywhere) before the request reaches any route; passes everything else through
    with its `Access`."""

    def __init__(self, app: ASGIApp, tokens: TokenTable) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        if not self.tokens.enabled:
            state["access"] = Access.full()
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        needed = required_role(method, scope["path"])
        if needed is None:
            state["access"] = Access.full(write=False, admin=False)
            await self.app(scope, receive, send)
            return
        try:
            found = await self._access(scope, method, needed)
        except StoreUnavailable as exc:
            await _send_error(send, 503, exc.message)
            return
        if isinstance(found, Access):
            state["access"] = found
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": found[1]})
        else:
            await _send_error(send, *found)

    async def _access(self, scope: Scope, method: str, needed: Role) -> Access | Denial:
        headers = dict(scope["headers"])
        header = headers.get(b"authorization", b"").decode("utf-8", "replace")
        if not header:
            return 401, "authentication required: send the header Authorization: Bearer <token>"
        token = presented_token(header)
        if token is None:
            return 401, "the Authorization header must be Bearer <token>"
        role = self.tokens.role_of(token)
        if role is None and token.startswith(TOKEN_MARK):
            scope["state"]["token_prefix"] = token[:PREFIX_LENGTH]
            return await self._issued(
                scope["state"], scope["app"].state.store, token, method, needed
            )
        if role is None:
            return 401, "the token is not valid on this server"
        if role < needed:
            scope["state"]["access"] = role.access  # known, for the audit line
            return 403, (
                f"a {role.name.lower()} token may not {method} {scope['path']}: "
                f"that needs a {needed.name.lower()} token"
            )
        return role.access

    async def _issued(
        self, state: dict[str, object], store: Store, token: str, method: str, needed: Role
    ) -> Access | Denial:
        """The access of an issued token, read from the store now (never from a copy), so
        a revocation or an expiry holds at once."""

        def look_up() -> IssuedToken | None:
            with store.read() as conn:
                return token_presented(conn, token)

        issued = await run_in_threadpool(look_up)
        if issued is None:
            return 401, "the token is not valid on this server"
        if issued.revoked_at is not None:
            return 401, "the token was revoked"
        if not issued.active(datetime.now(UTC)):
            return 401, "the token has expired"
        access = Access.of_scopes(issued.scopes, token_id=str(issued.id), prefix=issued.prefix)
        if needed is Role.WRITE and not access.may_write_anything:
            state["access"] = access  # known, for the audit line
            return 403, f"this token has no write scope: it may not {method} anything"
        return access


async def _send_error(send: Send, status: int, message: str) -> None:
    """The API's error shape, `{"code", "message"}`, with the challenge on a 401."""
    body = json.dumps({"code": status, "message": message}).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    if status == 401:
        headers += CHALLENGE
    if status == 503:
        headers.append((b"retry-after", str(RETRY_AFTER_SECONDS).encode("ascii")))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
