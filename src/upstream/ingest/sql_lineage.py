"""The `sql` job facet as field edges of origin `sql` (design §3.3).

For the outputs that have neither a lineage facet entry nor `columnLineage`, the job's
statements are parsed (`sql_parse`), their table names resolved to the event's datasets
(`sql_names`), and each statement that writes one of those outputs gives its field edges with
their transformations, its dataset-wide dependencies (join keys, filters…), an implied dataset
edge per source of field edges, and a dataset edge from each table it reads without naming a
column (`SELECT *` with no schema, an `EXISTS` gate). A bare query (a `SELECT` that writes
nothing itself) describes the event's output when it is the only one and no statement names a
target. A table's reads of itself (`MERGE`, `UPDATE`) are not edges.

Pure: no database. Statements that cannot be parsed change nothing; they are reported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from upstream.ingest.context import Owner
from upstream.ingest.sql_names import Resolver, dialect_for
from upstream.ingest.sql_parse import parse
from upstream.ingest.sql_statements import StatementLineage, TableName, Transformation
from upstream.model.facts import DatasetNode, EdgeFact
from upstream.model.identity import DatasetRef
from upstream.model.lineage_sets import EdgePart

#: Distinct facets, each in one setting of datasets, kept parsed per process.
CACHE_SIZE = 4096
#: (source, target, transformations, implied) of one edge, before it has an owner.
PlannedEdge = tuple[DatasetNode, DatasetNode, tuple[dict[str, Any], ...], bool]


@dataclass
class SqlLineage:
    """What the facet gave: edges, the datasets they read, and the statements not parsed."""

    edges: list[EdgeFact] = field(default_factory=list)
    sources: set[DatasetRef] = field(default_factory=set)
    parsed: int = 0
    failures: list[str] = field(default_factory=list)


def sql_lineage(
    query: str,
    declared_dialect: object,
    pending: Sequence[DatasetRef],
    inputs: Sequence[DatasetRef],
    outputs: Sequence[DatasetRef],
    fields: Mapping[DatasetRef, Sequence[str]],
    owner: Owner,
) -> SqlLineage:
    """Edges for the `pending` outputs (those with no other field lineage) from the
    statements of `query`; `fields` are the event's datasets' schema field names."""
    if not pending:
        return SqlLineage()
    known = set(inputs) | set(outputs)
    plan = _plan(
        query,
        declared_dialect if isinstance(declared_dialect, str) else None,
        tuple(pending),
        # Sorted: the same datasets in another order (as a run's earlier events list them)
        # are the same setting, and should hit the cache.
        tuple(sorted(set(inputs))),
        tuple(outputs),
        tuple(sorted((ref, tuple(names)) for ref, names in fields.items() if ref in known)),
    )
    edges = [
        owner.edge(
            "sql", source, target, list(how), implied=implied, part=plan.parts[target.dataset]
        )
        for source, target, how, implied in plan.edges
    ]
    return SqlLineage(edges, set(plan.sources), plan.parsed, list(plan.failures))


@dataclass(frozen=True)
class _Plan:
    """What one facet gives in one setting of datasets, whichever run sends it."""

    edges: tuple[PlannedEdge, ...]
    sources: frozenset[DatasetRef]
    parsed: int
    failures: tuple[str, ...]
    #: The edges into each output, as a lineage set holds them: its set is made once.
    parts: Mapping[DatasetRef, EdgePart]


@lru_cache(maxsize=CACHE_SIZE)
def _plan(
    query: str,
    declared_dialect: str | None,
    pending: tuple[DatasetRef, ...],
    inputs: tuple[DatasetRef, ...],
    outputs: tuple[DatasetRef, ...],
    fields: tuple[tuple[DatasetRef, tuple[str, ...]], ...],
) -> _Plan:
    """Cached: a job's runs repeat their statement over the same datasets, so each but the
    first costs only the building of its edges."""
    schema_of = dict(fields)
    datasets = (*inputs, *outputs)
    dialect = dialect_for(declared_dialect, [d.namespace for d in (*pending, *datasets)])
    resolver = Resolver(datasets, pending[0].namespace, dialect)
    parsed = parse(
        query,
        dialect,
        lambda tables: {
            table: schema_of[ref]
            for table in tables
            if (ref := resolver.resolve(table)) in schema_of
        },
    )
    wanted = set(pending)
    targeted = any(s.target is not None for s in parsed.statements)
    collected = _Collected()
    for statement in parsed.statements:
        if statement.target is not None:
            target = resolver.resolve(statement.target)
        elif not targeted and len(set(outputs)) == 1:
            target = outputs[0]
        else:
            continue
        if target in wanted:
            _statement_edges(statement, target, resolver, schema_of.get(target), collected)
    edges = collected.edges()
    return _Plan(
        edges,
        frozenset(collected.sources),
        len(parsed.statements),
        parsed.failures,
        _parts(edges),
    )


def _parts(edges: Sequence[PlannedEdge]) -> dict[DatasetRef, EdgePart]:
    """The planned edges into each output (an owner links them as one set per output)."""
    into: dict[DatasetRef, list[PlannedEdge]] = {}
    for edge in edges:
        into.setdefault(edge[1].dataset, []).append(edge)
    return {
        output: EdgePart(
            "sql",
            ((source, target, list(how), implied) for source, target, how, implied in planned),
        )
        for output, planned in into.items()
    }


def clear_cache() -> None:
    """Forget every parsed facet (tests measure parsing from cold)."""
    _plan.cache_clear()


@dataclass
class _Collected:
    """Edges gathered over all statements, one per pair of ends with every transformation
    any statement gave it (two statements may feed the same target column)."""

    field_edges: dict[tuple[DatasetNode, DatasetNode], set[Transformation]] = field(
        default_factory=dict
    )
    #: (source, target) of every table a statement reads: a dataset edge unless field
    #: edges already connect the two.
    whole: set[tuple[DatasetRef, DatasetRef]] = field(default_factory=set)
    sources: set[DatasetRef] = field(default_factory=set)

    def add(self, source: DatasetNode, target: DatasetNode, how: set[Transformation]) -> None:
        if source.dataset == target.dataset:
            return
        self.field_edges.setdefault((source, target), set()).update(how)
        self.sources.add(source.dataset)

    def edges(
        self,
    ) -> tuple[PlannedEdge, ...]:
        """(source, target, transformations, implied) of every edge, in a stable order."""
        edges = [
            (source, target, _transformations(how), False)
            for (source, target), how in sorted(self.field_edges.items(), key=_edge_order)
        ]
        implied = {(s.dataset, t.dataset) for s, t in self.field_edges}
        edges += [(DatasetNode(s), DatasetNode(t), (), True) for s, t in sorted(implied)]
        edges += [
            (DatasetNode(s), DatasetNode(t), (), False)
            for s, t in sorted(self.whole - implied)
            if s != t
        ]
        self.sources.update(s for s, t in self.whole if s != t)
        return tuple(edges)


def _edge_order(item: tuple[tuple[DatasetNode, DatasetNode], object]) -> tuple[str, ...]:
    (source, target), _ = item
    return (str(source.dataset), source.field or "", str(target.dataset), target.field or "")


def _statement_edges(
    statement: StatementLineage,
    target: DatasetRef,
    resolver: Resolver,
    target_fields: Sequence[str] | None,
    collected: _Collected,
) -> None:
    names = [c.name for c in statement.columns]
    if (
        statement.inserts_by_position
        and target_fields is not None
        and len(target_fields) >= len(statement.columns)
    ):
        # INSERT without a column list fills the table's columns in order, whatever the
        # query calls them.
        names = list(target_fields[: len(statement.columns)])
    resolved: dict[TableName, DatasetRef] = {}

    def dataset(table: TableName) -> DatasetRef:
        if table not in resolved:
            resolved[table] = resolver.resolve(table)
        return resolved[table]

    for name, column in zip(names, statement.columns, strict=True):
        if name is None:
            continue  # an unnamed result column: its tables still feed the target as a whole
        for source, how in column.sources.items():
            collected.add(
                DatasetNode(dataset(source.table), source.column), DatasetNode(target, name), how
            )
    for source, how in statement.dataset_wide.items():
        collected.add(DatasetNode(dataset(source.table), source.column), DatasetNode(target), how)
    collected.whole.update((dataset(table), target) for table in statement.tables)


def _transformations(how: set[Transformation]) -> tuple[dict[str, Any], ...]:
    """OpenLineage's transformation objects, DIRECT before INDIRECT; a DIRECT of unknown
    subtype (openlineage-sql's) is dropped when the same edge has a known one."""
    known = {t for t in how if t[1]}
    kinds = {t[0] for t in known}
    rendered = known | {t for t in how if not t[1] and t[0] not in kinds}
    return tuple(
        {"type": kind, "subtype": subtype} if subtype else {"type": kind}
        for kind, subtype in sorted(rendered)
    )
