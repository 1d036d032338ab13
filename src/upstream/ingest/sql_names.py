"""Which SQL dialect a `sql` facet is written in, and which dataset a table name means.

Pure. The dialect is the facet's own `dialect` (spec 1-1-0), else the one the namespace's
scheme implies (`postgres://…`, `snowflake://…`, `bigquery`…), else a generic one. A table name
resolves to one of the event's datasets whose name equals it or ends with it (`orders` and
`public.orders` both mean `shop.public.orders`), or that it ends with, comparing unquoted parts
case-insensitively where the dialect folds case; else it names a dataset of the output's
namespace. A name two datasets match equally well is not guessed at.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from sqlglot.dialects.dialect import Dialect, NormalizationStrategy

from upstream.ingest.sql_statements import TableName
from upstream.model.identity import DatasetRef

#: The name a producer gives a dialect -> sqlglot's name for it.
_DIALECT_ALIASES = {
    "postgresql": "postgres",
    "psql": "postgres",
    "sqlserver": "tsql",
    "mssql": "tsql",
    "azuresql": "tsql",
    "sparksql": "spark",
    "spark_sql": "spark",
    "awsathena": "athena",
    "bq": "bigquery",
    "memsql": "singlestore",
}
#: Namespace schemes (OpenLineage's naming spec) -> dialect.
_SCHEME_DIALECTS = {
    "postgres": "postgres",
    "postgresql": "postgres",
    "redshift": "redshift",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "mysql": "mysql",
    "mariadb": "mysql",
    "trino": "trino",
    "presto": "presto",
    "hive": "hive",
    "spark": "spark",
    "databricks": "databricks",
    "sqlserver": "tsql",
    "mssql": "tsql",
    "oracle": "oracle",
    "teradata": "teradata",
    "clickhouse": "clickhouse",
    "duckdb": "duckdb",
    "sqlite": "sqlite",
    "awsathena": "athena",
    "athena": "athena",
    "dremio": "dremio",
}


def dialect_for(declared: object, namespaces: Iterable[str]) -> str | None:
    """sqlglot's name of the dialect (None: generic)."""
    if isinstance(declared, str) and declared.strip():
        name = declared.strip().lower()
        name = _DIALECT_ALIASES.get(name, name)
        if _known(name):
            return name
    for namespace in namespaces:
        scheme = namespace.split("://", 1)[0].lower() if "://" in namespace else namespace.lower()
        dialect = _SCHEME_DIALECTS.get(scheme)
        if dialect is not None:
            return dialect
    return None


def _known(name: str) -> bool:
    try:
        Dialect.get_or_raise(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class Resolver:
    """Table names of one statement -> the event's datasets."""

    datasets: Collection[DatasetRef]
    home: str
    dialect: str | None

    def resolve(self, table: TableName) -> DatasetRef:
        """The dataset `table` means (see the module's doc)."""
        for candidates in (
            [d for d in self.datasets if d.namespace == self.home],
            list(self.datasets),
        ):
            found = self._best(table, candidates)
            if found is not None:
                return found
        return DatasetRef(self.home, table.text)

    def _best(self, table: TableName, candidates: list[DatasetRef]) -> DatasetRef | None:
        scored: dict[DatasetRef, int] = {}
        for dataset in candidates:
            score = self._score(table, dataset.name)
            if score:
                scored[dataset] = score
        if not scored:
            return None
        best = max(scored.values())
        winners = [d for d, s in scored.items() if s == best]
        return winners[0] if len(winners) == 1 else None

    def _score(self, table: TableName, name: str) -> int:
        """How well `name` matches `table`: 0 not at all; a full match outranks matching by
        the last parts, and more matching parts outrank fewer."""
        if self._equal(table.text, name, all(not q for q in table.quoted)):
            return 10
        parts = name.split(".")
        shorter = min(len(parts), len(table.parts))
        if shorter > 3:
            return 0
        tail = list(zip(table.parts[-shorter:], table.quoted[-shorter:], strict=True))
        if all(
            self._equal(part, other, not quoted)
            for (part, quoted), other in zip(tail, parts[-shorter:], strict=True)
        ):
            return shorter
        return 0

    def _equal(self, sql_part: str, name_part: str, unquoted: bool) -> bool:
        if sql_part == name_part:
            return True
        same = sql_part.casefold() == name_part.casefold()
        return unquoted and same and _folds_case(self.dialect)


#: Dialects whose table names are case-sensitive though their column names are not.
_CASE_SENSITIVE_TABLES = frozenset({"bigquery"})


def _folds_case(dialect: str | None) -> bool:
    """Whether unquoted table names are case-insensitive in `dialect`."""
    if dialect in _CASE_SENSITIVE_TABLES:
        return False
    strategy = Dialect.get_or_raise(dialect).normalization_strategy
    return strategy is not NormalizationStrategy.CASE_SENSITIVE
