"""The audit trail of access (design §5): every token created or revoked, and every request
refused for its token, as one log line of the `upstream.audit` logger naming the token by
its id and prefix, never its secret. The counts are in the metrics."""

from __future__ import annotations

import logging

from fastapi import Request
from starlette.types import Scope

from upstream.model.access import Access
from upstream.store.access_tokens import IssuedToken

audit_log = logging.getLogger("upstream.audit")


def _actor(access: Access) -> dict[str, str | None]:
    """Who did it: an issued token by id and prefix, else a token of the settings."""
    if access.token_id is None:
        return {"by_token_id": None, "by_token_prefix": "settings"}
    return {"by_token_id": access.token_id, "by_token_prefix": access.prefix}


def token_created(request: Request, access: Access, token: IssuedToken) -> None:
    request.app.state.metrics.tokens_changed.labels("created").inc()
    audit_log.info(
        "token created: %s (%s) with scopes %s",
        token.prefix,
        token.id,
        " ".join(token.scopes),
        extra={"token_id": str(token.id), "token_prefix": token.prefix, **_actor(access)},
    )


def token_revoked(request: Request, access: Access, token: IssuedToken) -> None:
    request.app.state.metrics.tokens_changed.labels("revoked").inc()
    audit_log.info(
        "token revoked: %s (%s)",
        token.prefix,
        token.id,
        extra={"token_id": str(token.id), "token_prefix": token.prefix, **_actor(access)},
    )


def request_refused(scope: Scope, status: int) -> None:
    """A request answered 401 or 403: the method, the path and the token it came with (its
    id when it is an issued one the server knows, its prefix when it looks issued)."""
    state = scope.get("state", {})
    access: Access | None = state.get("access")
    prefix = access.prefix if access is not None else state.get("token_prefix")
    token_id = access.token_id if access is not None else None
    if prefix is not None:
        token = prefix
    else:
        token = "a settings token" if access is not None else "no valid token"
    audit_log.warning(
        "refused %s %s with %s: %s",
        scope.get("method", "GET"),
        scope.get("path", ""),
        token,
        status,
        extra={"status": status, "token_id": token_id, "token_prefix": prefix},
    )
