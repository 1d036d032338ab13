"""The namespaces a stored document names (design §5): the rule a scoped reader's view of a
verbatim document follows, worked out once when the document is accepted."""

from __future__ import annotations

import re
from typing import Any

import orjson

#: A `namespace` key with a string value, in compact JSON text: the string's content (its
#: escapes still written) is the group.
_NAMED = re.compile(r'"namespace":"([^"\\]*(?:\\.[^"\\]*)*)"')


def namespaces_named(document: Any) -> list[str]:
    """Every namespace `document` names, distinct and sorted: the string `namespace` of each
    object in it, at any depth, in arrays too — the shape every OpenLineage reference to a
    job or dataset has (the event's job and datasets, parent and root jobs,
    `jobDependencies`, `symlinks`, `columnLineage` and `lineage` entries, facets to come).
    `store.visibility.shown_documents` applies the same rule in SQL to documents stored
    without this list."""
    found: set[str] = set()
    pending = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            named = value.get("namespace")
            if isinstance(named, str):
                found.add(named)
            pending.extend(member for member in value.values() if isinstance(member, dict | list))
        elif isinstance(value, list):
            pending.extend(item for item in value if isinstance(item, dict | list))
    return sorted(found)


def namespaces_text(document: Any) -> str:
    """`namespaces_named` as the JSON array the events table keeps (`events.namespaces`)."""
    return orjson.dumps(namespaces_named(document)).decode()


def namespaces_in_text(text: str) -> str:
    """`namespaces_text` of the document whose compact JSON text (`json_text.dumps`) is `text`,
    read off the text: five times cheaper than walking the document, for the same list.

    In compact text `"namespace":"` is always a key of an object and the start of its string
    value: inside a string every quote is escaped (`\\"`), and a string's closing quote is
    followed by `,` `:` `}` or `]`, never by a letter. Text with spaces between its tokens
    would hide keys, so only the compact text an event is kept as may be read so. The
    strings are collected in C (`findall`), and only those written with escapes read."""
    found = set(_NAMED.findall(text))
    escaped = {written for written in found if "\\" in written}
    if escaped:
        found = (found - escaped) | {orjson.loads(f'"{written}"') for written in escaped}
    return orjson.dumps(sorted(found)).decode()


def io_namespaces_text(document: Any) -> str | None:
    """The namespaces of the datasets `document` lists as `inputs` and `outputs`, distinct
    and sorted, as the JSON array the events table keeps (`events.io_namespaces`); None
    when it lists none. Marquez's events of a namespace are found by it
    (`query.marquez.events.recent_events`) without reading the stored event."""
    found = {
        listed["namespace"]
        for side in ("inputs", "outputs")
        if isinstance(document.get(side), list)
        for listed in document[side]
        if isinstance(listed, dict) and isinstance(listed.get("namespace"), str)
    }
    return orjson.dumps(sorted(found)).decode() if found else None
