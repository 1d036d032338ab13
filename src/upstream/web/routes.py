"""Serve the web UI (design §5): `index.html` at `/` and its content-hashed assets.

The bundle is built from `frontend/` by `scripts/build-web` and shipped in the package, so a
user never needs Node.js. Asset names carry a content hash, so they are cached for good while
`index.html` is always revalidated and names the current ones.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse

from upstream.model.errors import NotFound

STATIC_DIR = Path(__file__).resolve().parent / "static"
ASSETS_DIR = STATIC_DIR / "assets"

#: The page runs only its own script; data is never turned into markup, and this makes sure.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
MEDIA_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}

router = APIRouter(include_in_schema=False)


@router.get("/")
def index() -> FileResponse:
    """The single page; views live in the URL's hash, so this is the only HTML route."""
    return FileResponse(
        STATIC_DIR / "index.html",
        media_type="text/html; charset=utf-8",
        headers={
            "Cache-Control": "no-cache",
            "Content-Security-Policy": CONTENT_SECURITY_POLICY,
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.get("/assets/{name}")
def asset(name: str) -> FileResponse:
    """A bundled script or stylesheet, by its exact file name (no sub-paths)."""
    path = ASSETS_DIR / name
    media_type = MEDIA_TYPES.get(path.suffix)
    if media_type is None or name.startswith(".") or "\\" in name or not path.is_file():
        raise NotFound(f"name: no asset called {name!r}")
    return FileResponse(
        path,
        media_type=media_type,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "X-Content-Type-Options": "nosniff",
        },
    )
