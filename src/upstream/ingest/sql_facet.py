"""The `sql` job facet's query and dialect, read without the SQL parser: most events carry no
query, and a process that never meets one (a worker serving reads) never loads the parsers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def sql_facet_text(job_facets: Mapping[str, Any]) -> tuple[str, object] | None:
    """(query, declared dialect) of the `sql` facet, when it carries a query."""
    facet = job_facets.get("sql")
    if not isinstance(facet, dict):
        return None
    query = facet.get("query")
    if not isinstance(query, str) or not query.strip():
        return None
    return query, facet.get("dialect")
