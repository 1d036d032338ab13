"""The condition that chooses the verbatim documents a reader may see (design §5,
`store.visibility.shown_documents`), over random JSON on both stores: a document is shown
exactly when every object in it, at any depth, whose `namespace` is a string names a
namespace the reader may read, whatever shape holds it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from upstream.model.access import Visibility
from upstream.model.json_text import dumps
from upstream.model.named_namespaces import namespaces_in_text, namespaces_named, namespaces_text
from upstream.store.engine import Store
from upstream.store.visibility import shown_documents, shown_listed

NAMESPACES = ["finance/a", "finance", "hr", "a%b", "a_b", "Hr"]
PATTERNS = ["finance/*", "hr", "a%*", "a_b", "*"]
KEYS = ["namespace", "name", "job", "facets", "inputs", "Namespace"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(NAMESPACES))
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=12,
)
documents = st.dictionaries(st.sampled_from(KEYS), values, max_size=4)


def named(value: Any) -> Iterator[str]:
    """Every namespace `value` names: the string `namespace` of each object in it."""
    if isinstance(value, dict):
        if isinstance(value.get("namespace"), str):
            yield value["namespace"]
        for member in value.values():
            yield from named(member)
    elif isinstance(value, list):
        for item in value:
            yield from named(item)


@examples(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    batch=st.lists(documents, min_size=1, max_size=12), patterns=st.sets(st.sampled_from(PATTERNS))
)
def test_a_document_is_shown_when_every_namespace_it_names_is_readable(
    store: Store, batch: list[dict[str, Any]], patterns: set[str]
) -> None:
    visibility = Visibility(tuple(sorted(patterns)))
    rows = sa.union_all(
        *(
            sa.select(
                sa.literal(index).label("i"),
                sa.literal(json.dumps(document)).label("doc"),
                sa.literal(namespaces_text(document)).label("listed"),
            )
            for index, document in enumerate(batch)
        )
    ).subquery()
    with store.read() as conn:
        query = sa.select(rows.c.i).where(shown_documents(conn, rows.c.doc, visibility))
        shown = set(conn.execute(query).scalars())
        query = sa.select(rows.c.i).where(shown_listed(conn, rows.c.listed, visibility))
        shown_by_list = set(conn.execute(query).scalars())
    expected = {
        index
        for index, document in enumerate(batch)
        if all(visibility.shows(namespace) for namespace in named(document))
    }
    assert shown == expected
    # The list worked out when an event is accepted decides as the walk of its payload does.
    assert shown_by_list == expected
    assert all(namespaces_named(document) == sorted(set(named(document))) for document in batch)
    # Read off the compact text an accepted event is kept as, the list is the same.
    assert all(namespaces_in_text(dumps(d)) == namespaces_text(d) for d in batch)
