"""Bearer-token access control for every route (design §5).

One ASGI middleware decides by method and path, so routes added later are covered without
asking: `/health` and `/ready` are open (load balancers probe them); GET, HEAD and OPTIONS
need a `read` token; every other method needs `write`. `write` implies `read`, `admin`
implies both. With no token configured the server is open. Tokens arrive as
`Authorization: Bearer <token>` (what the OpenLineage client's `api_key` sends) or as the
password of HTTP Basic (so a browser can open the web UI after its login prompt); they are
compared by SHA-256 digest, in constant time, against every configured digest.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from starlette.types import ASGIApp, Receive, Scope, Send

from upstream.settings import HASHED, TOKEN_ROLES

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


class AuthMiddleware:
    """Answers 401 (no token, or one nobody configured) or 403 (a token whose role is too
    low) before the request reaches any route; passes everything else through."""

    def __init__(self, app: ASGIApp, tokens: TokenTable) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.tokens.enabled:
            await self.app(scope, receive, send)
            return
        method = scope.get("method", "GET")
        needed = required_role(method, scope["path"])
        denial = None if needed is None else self._denial(scope, method, needed)
        if denial is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": denial[1]})
        else:
            await _send_error(send, *denial)

    def _denial(self, scope: Scope, method: str, needed: Role) -> tuple[int, str] | None:
        headers = dict(scope["headers"])
        header = headers.get(b"authorization", b"").decode("utf-8", "replace")
        if not header:
            return 401, "authentication required: send the header Authorization: Bearer <token>"
        token = presented_token(header)
        if token is None:
            return 401, "the Authorization header must be Bearer <token>"
        role = self.tokens.role_of(token)
        if role is None:
            return 401, "the token is not valid on this server"
        if role < needed:
            return 403, (
                f"a {role.name.lower()} token may not {method} {scope['path']}: "
                f"that needs a {needed.name.lower()} token"
            )
        return None


async def _send_error(send: Send, status: int, message: str) -> None:
    """The API's error shape, `{"code", "message"}`, with the challenge on a 401."""
    body = json.dumps({"code": status, "message": message}).encode("utf-8")
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode("ascii")),
    ]
    if status == 401:
        headers += CHALLENGE
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
