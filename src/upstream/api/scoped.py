"""What a route does with the token's scopes before its service runs (design §5), as a
dependency every router takes: `NamespaceInPath`. A route naming a namespace in its path
(`/namespaces/{namespace}/…`) answers a reader who may not see it exactly as it answers for
a namespace never stored (404 `namespace '…' not found`); a write to it needs a `write`
scope on it (403 naming it). Every read answer is filtered by its service, given the
reader's `Visibility`; no route refuses a reader for being limited to some namespaces.
Subscriptions are made and managed only with a token that reads everything:
`EveryNamespace`.
"""

from __future__ import annotations

from fastapi import Depends, Request

from upstream.api.auth import READ_METHODS
from upstream.api.deps import AccessDep, get_access
from upstream.model.errors import NotFound


async def namespace_in_path(request: Request) -> None:
    namespace = request.path_params.get("namespace")
    if not isinstance(namespace, str):
        return
    access = await get_access(request)  # not a dependency: every route pays for one
    if not access.read.shows(namespace):
        raise NotFound(f"namespace {namespace!r} not found")
    if request.method.upper() not in READ_METHODS:
        access.require_write(namespace)


NamespaceInPath = Depends(namespace_in_path)


async def reads_every_namespace(access: AccessDep) -> None:
    """A subscription sends its notifications as they are made, naming whatever the watched
    lineage reaches, whoever receives them: making or managing one needs a token that may
    read every namespace (403 otherwise)."""
    access.require_read_everything("watching lineage")


EveryNamespace = Depends(reads_every_namespace)
