"""The `sql` job facet's text -> the column lineage of each of its statements (design §3.3).

Two parsers read each statement. openlineage-sql, the parser the OpenLineage integrations use,
says which table columns feed which result column; sqlglot's syntax tree (`sql_statements`)
says, in addition, which target column each result fills (an `INSERT` column list, `MERGE`
and `UPDATE` assignments), how (the transformation), which columns decide the rows (JOIN,
FILTER, GROUP BY…), and expands `*` from the tables' schemas. A statement is taken from
sqlglot with openlineage-sql's column lineage added where sqlglot traced nothing for a column;
from openlineage-sql alone where sqlglot cannot read it; and counts as not parsed when neither
yields lineage (openlineage-sql reads some broken text without error, but then finds none).

Nothing is cached here: the caller caches what a facet gives (`sql_lineage`), so a job's
repeated runs parse once per process. Each statement's syntax tree is made for one analysis
and changed by it in place (qualifying a copy would cost a quarter of the parse again), then
dropped: the trees of a facet take tens of kilobytes, which a cache of thousands of facets
would hold in every server process, and which the collector would walk on every full pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import openlineage_sql
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from upstream.ingest.sql_statements import (
    SourceColumn,
    StatementLineage,
    TableName,
    TargetColumn,
    UnparsableSql,
    split,
    statement_lineage,
    tables_named,
)

#: Longer facet text is not parsed (counted as one unparsed statement): parsing runs inside
#: the write, and a generated statement of megabytes would hold every writer up.
MAX_SQL_CHARS = 100_000
#: openlineage-sql reports a column it found, not how: a direct dependency of unknown subtype.
DIRECT_UNKNOWN = ("DIRECT", "")


@dataclass(frozen=True)
class ParsedSql:
    """The lineage of every statement that could be read, and why the others could not."""

    statements: tuple[StatementLineage, ...]
    failures: tuple[str, ...]


#: The columns of the tables a facet names, where known: `*` is expanded with them.
SchemaOf = Callable[[frozenset[TableName]], Mapping[TableName, Sequence[str]]]


def parse(sql: str, dialect: str | None, schema_of: SchemaOf) -> ParsedSql:
    """The lineage of `sql`'s statements; `schema_of` is asked once, with every table the
    statements name, for the columns it knows of them."""
    if len(sql) > MAX_SQL_CHARS:
        return ParsedSql((), (f"longer than {MAX_SQL_CHARS:,} characters: not parsed",))
    statements = split(sql, dialect)
    named = frozenset(t for s in statements if s.tree is not None for t in tables_named(s.tree))
    lookup = schema_of(named)
    found: list[StatementLineage] = []
    failures: list[str] = []
    for statement in statements:
        try:
            if statement.tree is None:
                raise UnparsableSql(statement.error or "not SQL")
            lineage = statement_lineage(statement, dialect, lookup)
        except Exception as exc:  # any failure of a parser on the producer's text, not ours
            exc = exc if isinstance(exc, UnparsableSql) else UnparsableSql(_reason(exc))
            alone = _openlineage_only(statement.text, dialect)
            if alone is None:
                failures.append(str(exc))
            else:
                found.append(alone)
            continue
        if lineage is not None:
            _add_openlineage_columns(lineage, statement.text, dialect)
            found.append(lineage)
    return ParsedSql(tuple(found), tuple(failures))


def _reason(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# -- openlineage-sql -------------------------------------------------------------------------


def _openlineage(sql: str, dialect: str | None) -> openlineage_sql.SqlMeta | None:
    try:
        meta = openlineage_sql.parse([sql], dialect=dialect or "generic")
    except Exception:  # the Rust extension raises its own types; any failure is "no lineage"
        return None
    return None if meta.errors else meta


def _openlineage_only(sql: str, dialect: str | None) -> StatementLineage | None:
    """The statement as openlineage-sql alone reads it: one target (or none, for a query) and
    its column lineage. None when it finds no column lineage or several targets (it does not
    say which target a column belongs to)."""
    meta = _openlineage(sql, dialect)
    if meta is None or not meta.column_lineage or len(meta.out_tables) > 1:
        return None
    target = _table(meta.out_tables[0], dialect) if meta.out_tables else None
    result = StatementLineage(target=target, tables={_table(t, dialect) for t in meta.in_tables})
    columns: dict[str, TargetColumn] = {}
    for lineage in meta.column_lineage:
        name = _fold(lineage.descendant.name, False, dialect)
        column = columns.setdefault(name, TargetColumn(name, name))
        for source in _sources(lineage, dialect):
            column.sources.setdefault(source, set()).add(DIRECT_UNKNOWN)
    result.columns = [columns[name] for name in sorted(columns)]
    return result


def _add_openlineage_columns(lineage: StatementLineage, sql: str, dialect: str | None) -> None:
    """Fill the columns sqlglot traced to nothing (an unqualified column of a join, with no
    schema to place it) with the sources openlineage-sql found for the same result column."""
    empty = {c.projection.casefold(): c for c in lineage.columns if c.projection and not c.sources}
    if not empty:
        return
    meta = _openlineage(sql, dialect)
    if meta is None:
        return
    for found in meta.column_lineage:
        column = empty.get(found.descendant.name.casefold())
        if column is not None:
            for source in _sources(found, dialect):
                column.sources.setdefault(source, set()).add(DIRECT_UNKNOWN)


def _sources(lineage: openlineage_sql.ColumnLineage, dialect: str | None) -> list[SourceColumn]:
    return [
        SourceColumn(_table(meta.origin, dialect), _fold(meta.name, False, dialect))
        for meta in lineage.lineage
        if meta.origin is not None
    ]


def _table(meta: openlineage_sql.DbTableMeta, dialect: str | None) -> TableName:
    style = meta.quote_style
    parts = [
        (meta.database, bool(style and style.database)),
        (meta.schema, bool(style and style.schema)),
        (meta.name, bool(style and style.name)),
    ]
    present = [(part, quoted) for part, quoted in parts if part]
    return TableName(
        tuple(_fold(part, quoted, dialect) for part, quoted in present),
        tuple(quoted for _, quoted in present),
    )


def _fold(name: str, quoted: bool, dialect: str | None) -> str:
    """An identifier as the dialect stores it: unquoted ones folded to its case."""
    identifier = exp.to_identifier(name, quoted=quoted)
    return Dialect.get_or_raise(dialect).normalize_identifier(identifier).name
