"""What the Marquez routes share: pages and the depth cap."""

from __future__ import annotations

from upstream.api.params import Limit, Offset
from upstream.model.errors import InvalidParameter
from upstream.query.marquez.common import Page
from upstream.settings import Settings


async def page(limit: Limit = 100, offset: Offset = 0) -> Page:
    """Marquez's `limit`/`offset` query parameters."""
    return Page(limit=limit, offset=offset)


def checked_depth(depth: int, settings: Settings) -> int:
    """`depth` within the configured cap, else 400 naming the parameter."""
    if depth > settings.max_levels:
        raise InvalidParameter.at("depth", f"must be at most {settings.max_levels}, not {depth}")
    return depth
