"""What a route does with the token's scopes before its service runs (design §5), as
dependencies a router or a route takes:

- `NamespaceInPath`: a route naming a namespace in its path (`/namespaces/{namespace}/…`)
  answers a reader who may not see it exactly as it answers for a namespace never stored
  (404 `namespace '…' not found`); a write to it needs a `write` scope on it (403 naming it).
- `EveryNamespace`: a route whose answer is not yet filtered by namespace answers only a
  token that may read every namespace; a token limited to some is refused (403) rather
  than shown what it may not see.
"""

from __future__ import annotations

from fastapi import Depends, Request

from upstream.api.auth import READ_METHODS
from upstream.api.deps import AccessDep
from upstream.model.errors import Forbidden, NotFound


async def namespace_in_path(request: Request, access: AccessDep) -> None:
    namespace = request.path_params.get("namespace")
    if not isinstance(namespace, str):
        return
    if not access.read.shows(namespace):
        raise NotFound(f"namespace {namespace!r} not found")
    if request.method.upper() not in READ_METHODS:
        access.require_write(namespace)


async def every_namespace(access: AccessDep) -> None:
    if not access.read.everything:
        raise Forbidden(
            "this answer is not filtered by namespace yet: it needs a token that may read "
            "every namespace (read:*)"
        )


NamespaceInPath = Depends(namespace_in_path)
EveryNamespace = Depends(every_namespace)
