"""Column lineage from the `sql` job facet (design §3.3), without a database.

Each statement's expected edges are worked out by hand from the SQL: `target#field <- source#
field` with the transformation subtypes, dataset-wide dependencies written `target <- source#
field`, and dataset edges `target <- source` for tables read without a column.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot.schema import MappingSchema

from upstream.ingest import sql_lineage as sql_lineage_module
from upstream.ingest import sql_statements
from upstream.ingest.context import Owner
from upstream.ingest.sql_facet import sql_facet_text
from upstream.ingest.sql_lineage import SqlLineage, clear_cache, sql_lineage
from upstream.ingest.sql_names import dialect_for
from upstream.ingest.sql_parse import ParsedSql, SchemaOf, parse
from upstream.ingest.sql_statements import TableName
from upstream.model.facts import DatasetNode
from upstream.model.identity import DatasetRef, JobRef

PG = "postgres://db.example.com:5432"
OWNER = Owner(JobRef(PG, "job"), uuid.uuid4(), "run", datetime(2026, 11, 1, tzinfo=UTC))


def run(
    sql: str,
    *,
    inputs: tuple[str, ...] = (),
    outputs: tuple[str, ...] = ("shop.public.out",),
    pending: tuple[str, ...] | None = None,
    fields: dict[str, list[str]] | None = None,
    dialect: object = None,
    namespace: str = PG,
) -> SqlLineage:
    refs = {name: DatasetRef(namespace, name) for name in (*inputs, *outputs)}
    return sql_lineage(
        sql,
        dialect,
        [refs[n] for n in (outputs if pending is None else pending)],
        [refs[n] for n in inputs],
        [refs[n] for n in outputs],
        {refs[n]: f for n, f in (fields or {}).items()},
        OWNER,
    )


def _label(node: object) -> str:
    assert isinstance(node, DatasetNode)
    ref = node.dataset
    name = ref.name if ref.namespace == PG else f"{ref.namespace}/{ref.name}"
    return name if node.field is None else f"{name}#{node.field}"


def edges(found: SqlLineage) -> set[tuple[str, str, str]]:
    """(target, source, subtypes) of every stored edge but the implied ones."""
    result = set()
    for edge in found.edges:
        assert edge.origin == "sql"
        if edge.implied:
            continue
        how = ",".join(t.get("subtype", t["type"]) for t in edge.transformations)
        result.add((_label(edge.target), _label(edge.source), how))
    return result


def implied(found: SqlLineage) -> set[tuple[str, str]]:
    return {(_label(e.target), _label(e.source)) for e in found.edges if e.implied}


SHOP = ("shop.public.orders", "shop.public.customers")


def test_insert_select_with_aliases_and_expressions() -> None:
    found = run(
        """INSERT INTO public.out (id, full_name, total, label)
           SELECT o.id, c.first_name || ' ' || c.last_name AS full_name, o.amount * 2, 'x'
           FROM public.orders AS o JOIN public.customers c ON c.id = o.customer_id""",
        inputs=SHOP,
    )
    assert edges(found) == {
        ("shop.public.out#id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out#full_name", "shop.public.customers#first_name", "TRANSFORMATION"),
        ("shop.public.out#full_name", "shop.public.customers#last_name", "TRANSFORMATION"),
        ("shop.public.out#total", "shop.public.orders#amount", "TRANSFORMATION"),
        ("shop.public.out", "shop.public.customers#id", "JOIN"),
        ("shop.public.out", "shop.public.orders#customer_id", "JOIN"),
    }
    assert implied(found) == {
        ("shop.public.out", "shop.public.orders"),
        ("shop.public.out", "shop.public.customers"),
    }
    assert found.sources == {DatasetRef(PG, n) for n in SHOP}
    assert found.parsed == 1
    assert found.failures == []


def test_create_table_as_with_aggregate_filter_and_group_by() -> None:
    found = run(
        """CREATE TABLE public.out AS
           SELECT customer_id, sum(amount) AS total, count(*) AS n FROM public.orders
           WHERE status = 'paid' GROUP BY customer_id HAVING sum(amount) > 10
           ORDER BY total DESC""",
        inputs=SHOP,
    )
    assert edges(found) == {
        ("shop.public.out#customer_id", "shop.public.orders#customer_id", "IDENTITY"),
        ("shop.public.out#total", "shop.public.orders#amount", "AGGREGATION"),
        ("shop.public.out", "shop.public.orders#status", "FILTER"),
        ("shop.public.out", "shop.public.orders#customer_id", "GROUP_BY"),
        ("shop.public.out", "shop.public.orders#amount", "FILTER,SORT"),
    }


def test_ctes_and_subqueries_are_traced_to_the_tables() -> None:
    found = run(
        """WITH paid AS (SELECT id, amount * 1.2 AS gross FROM orders WHERE paid)
           INSERT INTO out (order_id, gross, name)
           SELECT p.id, p.gross, s.name
           FROM paid p JOIN (SELECT id, upper(last_name) AS name FROM customers) s
             ON s.id = p.id""",
        inputs=SHOP,
    )
    assert edges(found) == {
        ("shop.public.out#order_id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out#gross", "shop.public.orders#amount", "TRANSFORMATION"),
        ("shop.public.out#name", "shop.public.customers#last_name", "TRANSFORMATION"),
        ("shop.public.out", "shop.public.orders#paid", "FILTER"),
        ("shop.public.out", "shop.public.customers#id", "JOIN"),
        ("shop.public.out", "shop.public.orders#id", "JOIN"),
    }


def test_union_all_feeds_each_column_from_every_branch() -> None:
    found = run(
        """INSERT INTO out SELECT id, email FROM customers
           UNION ALL SELECT customer_id, lower(contact) FROM orders""",
        inputs=SHOP,
    )
    assert edges(found) == {
        ("shop.public.out#id", "shop.public.customers#id", "IDENTITY"),
        ("shop.public.out#id", "shop.public.orders#customer_id", "IDENTITY"),
        ("shop.public.out#email", "shop.public.customers#email", "IDENTITY"),
        ("shop.public.out#email", "shop.public.orders#contact", "TRANSFORMATION"),
    }


def test_join_using_takes_the_key_from_both_sides() -> None:
    found = run(
        "INSERT INTO out SELECT id, o.amount, c.email FROM orders o JOIN customers c USING (id)",
        inputs=SHOP,
    )
    assert edges(found) == {
        ("shop.public.out#id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out#id", "shop.public.customers#id", "IDENTITY"),
        ("shop.public.out#amount", "shop.public.orders#amount", "IDENTITY"),
        ("shop.public.out#email", "shop.public.customers#email", "IDENTITY"),
        ("shop.public.out", "shop.public.orders#id", "JOIN"),
        ("shop.public.out", "shop.public.customers#id", "JOIN"),
    }


def test_window_and_case_columns_are_indirect_for_their_column() -> None:
    found = run(
        """INSERT INTO out (running, size)
           SELECT sum(amount) OVER (PARTITION BY customer_id ORDER BY placed_at),
                  CASE WHEN amount > 100 THEN 'big' ELSE category END
           FROM orders""",
        inputs=SHOP,
    )
    assert edges(found) == {
        ("shop.public.out#running", "shop.public.orders#amount", "AGGREGATION"),
        ("shop.public.out#running", "shop.public.orders#customer_id", "WINDOW"),
        ("shop.public.out#running", "shop.public.orders#placed_at", "WINDOW"),
        ("shop.public.out#size", "shop.public.orders#amount", "CONDITIONAL"),
        ("shop.public.out#size", "shop.public.orders#category", "TRANSFORMATION"),
    }


def test_merge_feeds_assigned_columns_and_joins_on_its_condition() -> None:
    found = run(
        """MERGE INTO public.out t USING public.orders s ON t.id = s.id
           WHEN MATCHED AND s.deleted THEN DELETE
           WHEN MATCHED THEN UPDATE SET total = t.total + s.amount
           WHEN NOT MATCHED THEN INSERT (id, total) VALUES (s.id, s.amount)""",
        inputs=("shop.public.orders",),
    )
    # The target's reads of itself (t.total, t.id) are not edges.
    assert edges(found) == {
        ("shop.public.out#total", "shop.public.orders#amount", "IDENTITY,TRANSFORMATION"),
        ("shop.public.out#id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out", "shop.public.orders#id", "JOIN"),
        ("shop.public.out", "shop.public.orders#deleted", "FILTER"),
    }


def test_select_star_expands_with_the_inputs_schema() -> None:
    found = run(
        "INSERT INTO out SELECT * FROM orders",
        inputs=("shop.public.orders",),
        fields={"shop.public.orders": ["id", "amount"]},
    )
    assert edges(found) == {
        ("shop.public.out#id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out#amount", "shop.public.orders#amount", "IDENTITY"),
    }


def test_select_star_without_a_schema_is_a_dataset_edge() -> None:
    found = run("INSERT INTO out SELECT * FROM orders", inputs=("shop.public.orders",))
    assert edges(found) == {("shop.public.out", "shop.public.orders", "")}
    assert implied(found) == set()


def test_insert_without_column_list_fills_the_output_schema_by_position() -> None:
    found = run(
        "INSERT INTO out SELECT id AS ignored, amount * 2 FROM orders",
        inputs=("shop.public.orders",),
        fields={"shop.public.out": ["order_id", "doubled"]},
    )
    assert edges(found) == {
        ("shop.public.out#order_id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out#doubled", "shop.public.orders#amount", "TRANSFORMATION"),
    }


def test_several_statements_each_feed_their_own_output() -> None:
    found = run(
        """CREATE TEMP TABLE scratch AS SELECT 1 AS one;
           INSERT INTO a (x) SELECT id FROM orders;
           INSERT INTO b (y) SELECT email FROM customers WHERE EXISTS (SELECT 1 FROM orders);
           SELECT count(*) FROM customers;""",
        inputs=SHOP,
        outputs=("shop.public.a", "shop.public.b"),
    )
    assert edges(found) == {
        ("shop.public.a#x", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.b#y", "shop.public.customers#email", "IDENTITY"),
        ("shop.public.b", "shop.public.orders", ""),
    }
    assert found.parsed == 4


def test_only_pending_outputs_get_sql_edges() -> None:
    found = run(
        "INSERT INTO a (x) SELECT id FROM orders; INSERT INTO b (y) SELECT id FROM orders",
        inputs=("shop.public.orders",),
        outputs=("shop.public.a", "shop.public.b"),
        pending=("shop.public.b",),
    )
    assert edges(found) == {("shop.public.b#y", "shop.public.orders#id", "IDENTITY")}


def test_quoted_and_mixed_case_identifiers_fold_as_the_dialect_does() -> None:
    found = run(
        'INSERT INTO Public.Out ("Id", Name) SELECT "Id", Name FROM "Sales"."Orders"',
        inputs=("Sales.Orders",),
        outputs=("public.out",),
    )
    # Postgres folds unquoted names to lower case and keeps quoted ones.
    assert edges(found) == {
        ("public.out#Id", "Sales.Orders#Id", "IDENTITY"),
        ("public.out#name", "Sales.Orders#name", "IDENTITY"),
    }


def test_a_quoted_name_of_another_case_is_another_table() -> None:
    found = run('INSERT INTO out (id) SELECT id FROM "ORDERS"', inputs=("shop.public.orders",))
    # "ORDERS" is not orders in Postgres: it names a dataset of the output's namespace.
    assert edges(found) == {("shop.public.out#id", "ORDERS#id", "IDENTITY")}


def test_snowflake_names_match_case_insensitively() -> None:
    found = run(
        "INSERT INTO analytics.out SELECT o.id FROM raw.orders o",
        inputs=("DB.RAW.ORDERS",),
        outputs=("DB.ANALYTICS.OUT",),
        fields={"DB.ANALYTICS.OUT": ["ID"]},
        namespace="snowflake://acme-eu",
    )
    assert {(t, s, how) for t, s, how in edges(found)} == {
        (
            "snowflake://acme-eu/DB.ANALYTICS.OUT#ID",
            "snowflake://acme-eu/DB.RAW.ORDERS#ID",
            "IDENTITY",
        )
    }


def test_bigquery_table_names_keep_their_case() -> None:
    found = run(
        "INSERT INTO sales.Out (id) SELECT id FROM sales.Orders",
        inputs=("proj.sales.orders", "proj.sales.Orders"),
        outputs=("proj.sales.Out",),
        namespace="bigquery",
    )
    assert edges(found) == {
        ("bigquery/proj.sales.Out#id", "bigquery/proj.sales.Orders#id", "IDENTITY")
    }


def test_a_table_the_event_does_not_list_is_in_the_outputs_namespace() -> None:
    found = run("INSERT INTO out (id) SELECT id FROM staging.raw_orders")
    assert edges(found) == {("shop.public.out#id", "staging.raw_orders#id", "IDENTITY")}
    assert found.sources == {DatasetRef(PG, "staging.raw_orders")}


def test_an_ambiguous_short_name_is_not_guessed() -> None:
    found = run(
        "INSERT INTO out (id) SELECT id FROM orders",
        inputs=("shop.public.orders", "shop.archive.orders"),
    )
    assert edges(found) == {("shop.public.out#id", "orders#id", "IDENTITY")}


def test_a_bare_query_describes_the_only_output() -> None:
    found = run("SELECT id, amount FROM orders WHERE amount > 0", inputs=("shop.public.orders",))
    assert edges(found) == {
        ("shop.public.out#id", "shop.public.orders#id", "IDENTITY"),
        ("shop.public.out#amount", "shop.public.orders#amount", "IDENTITY"),
        ("shop.public.out", "shop.public.orders#amount", "FILTER"),
    }


def test_a_bare_query_with_two_outputs_describes_neither() -> None:
    found = run(
        "SELECT id FROM orders",
        inputs=("shop.public.orders",),
        outputs=("shop.public.a", "shop.public.b"),
    )
    assert found.edges == []


def test_a_statement_that_does_not_parse_gives_nothing_and_is_reported() -> None:
    found = run("INSERT INTO out SELECT FROM WHERE", inputs=("shop.public.orders",))
    assert found.edges == []
    assert found.parsed == 0
    assert len(found.failures) == 1


def test_a_broken_statement_does_not_spoil_the_others() -> None:
    found = run(
        "INSERT INTO out (id) SELECT ';' || id FROM orders; SELEC oops FROM;",
        inputs=("shop.public.orders",),
    )
    assert edges(found) == {("shop.public.out#id", "shop.public.orders#id", "TRANSFORMATION")}
    assert found.parsed == 1
    assert len(found.failures) == 1


def test_openlineage_sql_fills_columns_sqlglot_cannot_place() -> None:
    # Without schemas, sqlglot cannot tell which joined table `email` belongs to;
    # openlineage-sql's answer (the first table) is taken, as a DIRECT of unknown subtype.
    found = run(
        "INSERT INTO out (id, email) SELECT o.id, email FROM orders o JOIN customers c "
        "ON c.id = o.customer_id",
        inputs=SHOP,
    )
    assert ("shop.public.out#email", "shop.public.orders#email", "DIRECT") in edges(found)


def test_the_schema_places_unqualified_columns_of_a_join() -> None:
    found = run(
        "INSERT INTO out (id, email) SELECT o.id, email FROM orders o JOIN customers c "
        "ON c.id = o.customer_id",
        inputs=SHOP,
        fields={
            "shop.public.customers": ["id", "email"],
            "shop.public.orders": ["id", "customer_id"],
        },
    )
    assert ("shop.public.out#email", "shop.public.customers#email", "IDENTITY") in edges(found)
    assert ("shop.public.out#email", "shop.public.orders#email", "DIRECT") not in edges(found)


@pytest.mark.parametrize(
    ("declared", "namespaces", "expected"),
    [
        ("snowflake", [PG], "snowflake"),
        ("PostgreSQL", [], "postgres"),
        ("mssql", [], "tsql"),
        (None, ["postgres://h:5432"], "postgres"),
        (None, ["snowflake://acct"], "snowflake"),
        (None, ["bigquery"], "bigquery"),
        (None, ["redshift://cluster.eu:5439"], "redshift"),
        (None, ["mysql://h:3306"], "mysql"),
        (None, ["trino://h:8080"], "trino"),
        ("no-such-dialect", ["s3://bucket"], None),
        (None, ["s3://bucket", "postgres://h"], "postgres"),
    ],
)
def test_dialect_from_the_facet_else_the_namespace(
    declared: object, namespaces: list[str], expected: str | None
) -> None:
    assert dialect_for(declared, namespaces) == expected


def test_the_facet_needs_a_query_string() -> None:
    assert sql_facet_text({"sql": {"query": "SELECT 1", "dialect": "postgres"}}) == (
        "SELECT 1",
        "postgres",
    )
    assert sql_facet_text({"sql": {"query": 42}}) is None
    assert sql_facet_text({"sql": {"query": "  "}}) is None
    assert sql_facet_text({"sql": "SELECT 1"}) is None
    assert sql_facet_text({}) is None


def test_a_facet_is_parsed_once_per_setting_of_datasets(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_cache()
    parsed: list[str] = []

    def counting(sql: str, dialect: str | None, schema_of: SchemaOf) -> ParsedSql:
        parsed.append(sql)
        return parse(sql, dialect, schema_of)

    monkeypatch.setattr(sql_lineage_module, "parse", counting)
    sql = "INSERT INTO out (id) SELECT id FROM orders"
    first = run(sql, inputs=("shop.public.orders",))
    again = run(sql, inputs=("shop.public.orders",))
    assert len(parsed) == 1
    assert (
        edges(again)
        == edges(first)
        == {("shop.public.out#id", "shop.public.orders#id", "IDENTITY")}
    )
    # Another dialect or other datasets are another parse.
    run(sql, inputs=("shop.public.orders",), dialect="snowflake")
    run(sql, inputs=("shop.public.orders", "shop.public.customers"))
    assert len(parsed) == 3


def test_the_same_text_is_analysed_afresh_with_each_schema() -> None:
    sql = "SELECT * FROM Orders"
    orders = TableName(("orders",), (False,))
    unexpanded = parse(sql, "postgres", lambda tables: {})
    expanded = parse(
        sql, "postgres", lambda tables: {orders: ["id", "amount"]} if orders in tables else {}
    )
    assert [c.name for c in unexpanded.statements[0].columns] == [None]
    assert [c.name for c in expanded.statements[0].columns] == ["id", "amount"]


@pytest.mark.parametrize("dialect", [None, "postgres", "snowflake", "bigquery", "tsql"])
def test_the_schema_is_the_one_sqlglot_makes_of_the_same_names(dialect: str | None) -> None:
    # Names as a producer's fields give them: mixed case, quotes, a space, a repeat; two
    # tables that one dialect folds to the same name; a shorter name left out.
    schema = {
        TableName(("Shop", "Orders"), (False, True)): ["Id", '"Amount"', "a b", "id"],
        TableName(("shop", "orders"), (False, False)): ["Extra", "ID"],
        TableName(("x",), (False,)): ["y"],
        TableName(("shop", "empty"), (False, False)): [],
    }
    nested = {
        "Shop": {"Orders": dict.fromkeys(["Id", '"Amount"', "a b", "id"], "unknown")},
        "shop": {"orders": dict.fromkeys(["Extra", "ID"], "unknown")},
    }
    made = sql_statements._sqlglot_schema(schema, dialect)
    expected = MappingSchema(nested, dialect=dialect)
    assert made.mapping == expected.mapping
    assert made.normalize
    assert made.dialect == expected.dialect
    assert sql_statements._sqlglot_schema({}, dialect).mapping == MappingSchema({}).mapping


def test_a_name_in_the_schema_is_normalized_once_per_process() -> None:
    sql_statements._normalized.cache_clear()
    orders = TableName(("orders",), (False,))

    def schema_of(tables: frozenset[TableName]) -> dict[TableName, list[str]]:
        return {orders: ["id", "amount"]}

    first = parse("INSERT INTO out SELECT * FROM orders", "postgres", schema_of)
    names = sql_statements._normalized.cache_info().misses
    again = parse("INSERT INTO out SELECT id, amount FROM orders", "postgres", schema_of)
    assert names == 3  # orders, id, amount
    assert sql_statements._normalized.cache_info().misses == names
    assert [c.name for c in first.statements[0].columns] == ["id", "amount"]
    assert [c.name for c in again.statements[0].columns] == ["id", "amount"]


def test_a_schema_the_statement_contradicts_is_not_used() -> None:
    # `missing` is not among the columns the schema gives orders: the statement is analysed
    # again, from its text, without the schema.
    found = run(
        "INSERT INTO out (a) SELECT o.missing FROM orders o",
        inputs=("shop.public.orders",),
        fields={"shop.public.orders": ["id"]},
    )
    assert edges(found) == {("shop.public.out#a", "shop.public.orders#missing", "IDENTITY")}


_SQL_WORDS = st.sampled_from(
    ["SELECT", "INSERT", "INTO", "FROM", "WHERE", "JOIN", "ON", "(", ")", ",", ";", "*", "a",
     "b.c", '"Q"', "'s'", "1", "=", "AS", "WITH", "UNION", "MERGE", "USING", "CASE", "WHEN"]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(_SQL_WORDS, max_size=30).map(" ".join) | st.text(max_size=80))
def test_no_text_makes_sql_lineage_fail(text: str) -> None:
    """Whatever a producer sends as its query, reading it never raises: each statement is
    either read or reported."""
    found = run(text, inputs=("shop.public.orders",))
    assert found.parsed >= 0
    assert all(isinstance(f, str) for f in found.failures)
    assert all(e.origin == "sql" for e in found.edges)


def test_very_long_sql_is_not_parsed() -> None:
    long = "INSERT INTO out (id) SELECT id FROM orders WHERE " + " OR ".join(
        f"id = {i}" for i in range(12_000)
    )
    found = run(long, inputs=("shop.public.orders",))
    assert found.edges == []
    assert found.failures == ["longer than 100,000 characters: not parsed"]


#: Imports the server and the translation of events, then says whether a SQL parser loaded.
_PARSER_LOADED = """
import sys
import upstream.api.app, upstream.ingest.translate
print("sqlglot" in sys.modules or "openlineage_sql" in sys.modules)
"""


def test_a_server_loads_no_sql_parser_until_an_event_carries_a_query() -> None:
    """The parsers weigh 33 MB of a worker's memory, and a worker that only reads never needs
    them (what they make of a query once one arrives is what the tests above check)."""
    done = subprocess.run(
        [sys.executable, "-c", _PARSER_LOADED], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
