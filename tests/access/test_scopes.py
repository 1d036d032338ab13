"""The rules of scopes (design §5), without a server: parsing, matching, what a token's
scopes grant, and what a writer of some namespaces may post."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from upstream.model.access import EVERYTHING, Access, Visibility, matches, parse_scopes
from upstream.model.errors import Forbidden, InvalidInput
from upstream.model.write_scope import writable_events
from upstream.store.visibility import shown_namespaces


@pytest.mark.parametrize(
    ("pattern", "namespace", "expected"),
    [
        ("finance/*", "finance/warehouse", True),
        ("finance/*", "finance/", True),
        ("finance/*", "finance", False),
        ("finance/*", "Finance/warehouse", False),
        ("postgres://wh:5432", "postgres://wh:5432", True),
        ("postgres://wh:5432", "postgres://wh:54321", False),
        ("postgres://wh*", "postgres://wh:54321", True),
        ("*", "anything at all", True),
        ("a%_", "abc", False),
    ],
)
def test_a_pattern_matches_exactly_or_by_its_prefix(
    pattern: str, namespace: str, expected: bool
) -> None:
    assert matches(pattern, namespace) is expected


def test_scopes_are_kept_in_order_without_repeats() -> None:
    assert parse_scopes(["read:hr", "admin", "read:hr", "write:crm"]) == (
        "read:hr",
        "admin",
        "write:crm",
    )


def test_every_malformed_scope_is_named() -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_scopes(["read:a*b", "write: crm", "own:hr", 7])
    assert [(p.path, p.message) for p in refused.value.problems] == [
        ("scopes[0]", "a namespace pattern may hold `*` only as its last character"),
        ("scopes[1]", "the namespace pattern starts or ends with a space"),
        (
            "scopes[2]",
            "'own:hr' is no scope: use read:<namespace pattern>, write:<namespace pattern> "
            "or admin",
        ),
        ("scopes[3]", "a scope is a string"),
    ]


def test_write_implies_read_and_admin_everything() -> None:
    access = Access.of_scopes(("read:hr", "write:finance/*"))
    assert access.read.shows("hr")
    assert access.read.shows("finance/x")
    assert not access.read.shows("crm")
    assert access.write.shows("finance/x")
    assert not access.write.shows("hr")
    assert not access.admin
    admin = Access.of_scopes(("admin",))
    assert admin.admin
    assert admin.read.everything
    assert admin.write.everything


def test_a_writer_may_post_only_for_jobs_it_may_write() -> None:
    access = Access.of_scopes(("write:finance/*",))
    with pytest.raises(Forbidden, match="namespace 'hr'"):
        writable_events([{"job": {"namespace": "hr", "name": "x"}}], access)


def test_facets_of_datasets_a_writer_may_not_write_are_dropped_but_lineage_kept() -> None:
    access = Access.of_scopes(("write:finance/*",))
    foreign: dict[str, Any] = {
        "namespace": "crm",
        "name": "customers",
        "facets": {"schema": {}, "columnLineage": {"fields": {}}, "ownership": {}},
        "inputFacets": {"dataQualityMetrics": {}},
    }
    own = {"namespace": "finance/wh", "name": "x", "facets": {"schema": {}}}
    event = {"job": {"namespace": "finance/jobs", "name": "j"}, "inputs": [foreign, own]}
    (scoped,), changed = writable_events([event], access)
    assert changed
    assert scoped["inputs"] == [
        {**foreign, "facets": {"columnLineage": {"fields": {}}}},
        own,
    ]
    assert event["inputs"][0] is foreign  # the posted document is not changed in place


def test_a_writer_of_everything_changes_nothing() -> None:
    event = {"job": {"namespace": "hr", "name": "x"}, "inputs": [{"namespace": "crm"}]}
    documents, changed = writable_events([event], Access.full())
    assert documents == [event]
    assert not changed


NAMESPACES = ["finance", "finance/a", "finance/b", "Finance/c", "hr", "a%b", "a_b", "axb"]


@pytest.mark.parametrize(
    "patterns",
    [("finance/*",), ("hr", "a%*"), ("a_*",), ("*",), (), ("finance",)],
)
def test_the_sql_condition_shows_what_the_rule_shows(patterns: tuple[str, ...]) -> None:
    """The statement lists and searches use agrees with `Visibility.shows`, case and `%`
    and `_` included (SQLite's LIKE would fold case and read them as wildcards)."""
    visibility = Visibility(patterns)
    engine = sa.create_engine("sqlite://")
    table = sa.Table("t", sa.MetaData(), sa.Column("namespace", sa.Text))
    with engine.begin() as conn:
        table.create(conn)
        conn.execute(table.insert(), [{"namespace": n} for n in NAMESPACES])
        query = sa.select(table.c.namespace).where(shown_namespaces(table.c.namespace, visibility))
        found = set(conn.execute(query).scalars())
    assert found == {n for n in NAMESPACES if visibility.shows(n)}
    assert EVERYTHING.everything
