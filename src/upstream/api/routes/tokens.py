"""`/v3/tokens`: issue, list and revoke access tokens scoped to namespaces (design §5).
Admin only; the secret of a token is in the answer that creates it, and nowhere after."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, cast

from fastapi import APIRouter, Body, Depends, Path, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from upstream.api.audit import token_created, token_revoked
from upstream.api.body import check_content_type
from upstream.api.deps import AccessDep, SettingsDep, StoreDep
from upstream.api.errors import documented
from upstream.api.services import change
from upstream.model.access import parse_scopes
from upstream.model.errors import Forbidden, InvalidInput, NotFound
from upstream.query.answers import TokenAnswer, TokensAnswer
from upstream.store.access_tokens import create_token, list_tokens, revoke_token

router = APIRouter(prefix="/v3/tokens", tags=["access tokens"])


class NewToken(BaseModel):
    """The body of `POST /v3/tokens`."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Who or what uses the token (a team, a pipeline)")
    scopes: list[str] = Field(
        description="read:<namespace pattern>, write:<namespace pattern> (implies read) or "
        "admin; a pattern is a namespace, or a prefix ending in *"
    )
    expiresAt: datetime | None = Field(
        None, description="When the token stops working (ISO-8601; UTC when no offset)"
    )


async def _admin(access: AccessDep, settings: SettingsDep) -> None:
    """Only an admin manages tokens, and only on a server that checks them."""
    if not settings.tokens:
        raise Forbidden(
            "this server checks no token (UPSTREAM_TOKENS is empty), so an issued token "
            "would limit nothing: configure an admin token first"
        )
    access.require_admin()


AdminDep = Depends(_admin)


@router.post(
    "",
    status_code=201,
    summary="Issue a token scoped to namespaces (admin)",
    dependencies=[AdminDep, Depends(check_content_type)],
    response_model=None,
    responses={201: {"model": TokenAnswer}, **documented(InvalidInput, Forbidden)},
)
def post_token(
    request: Request,
    access: AccessDep,
    store: StoreDep,
    response: Response,
    body: Annotated[NewToken, Body()],
) -> TokenAnswer:
    """A new token: its secret is in this answer only (the server keeps a digest)."""
    scopes = parse_scopes(body.scopes)
    expires = body.expiresAt
    if expires is not None and expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    token, secret = change(store, response, create_token, body.name, scopes, expires)
    token_created(request, access, token)
    return cast(TokenAnswer, {**token.doc(), "token": secret})


@router.get(
    "",
    summary="Issued tokens, never their secrets (admin)",
    dependencies=[AdminDep],
    response_model=None,
    responses={200: {"model": TokensAnswer}, **documented(Forbidden)},
)
def get_tokens(store: StoreDep) -> TokensAnswer:
    """Every issued token, revoked and expired ones too, oldest first."""
    with store.read() as conn:
        tokens = list_tokens(conn)
    return {"tokens": [cast(TokenAnswer, token.doc()) for token in tokens]}


@router.delete(
    "/{token_id}",
    summary="Revoke a token at once, in every server process (admin)",
    dependencies=[AdminDep],
    response_model=None,
    responses={200: {"model": TokenAnswer}, **documented(NotFound, Forbidden)},
)
def delete_token(
    token_id: Annotated[str, Path(description="The token's id, as `GET /v3/tokens` lists it")],
    request: Request,
    access: AccessDep,
    store: StoreDep,
    response: Response,
) -> TokenAnswer:
    """Revoke a token: every request with it is refused from now on (401)."""
    token = change(store, response, revoke_token, token_id)
    token_revoked(request, access, token)
    return cast(TokenAnswer, token.doc())
