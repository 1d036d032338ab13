"""What one SQL statement says about its columns, read from its syntax tree with sqlglot.

Pure: SQL text in, `StatementLineage` out. Every statement is turned into one query whose
projections are the target's columns (`INSERT … SELECT`, `CREATE TABLE … AS`, the assignments
of `MERGE` and `UPDATE`), then each projection is traced through CTEs, subqueries and `UNION`
branches to the table columns it is made of. A column's role decides its transformation, in the
OpenLineage vocabulary: a bare column is DIRECT/IDENTITY, an expression DIRECT/TRANSFORMATION,
an aggregate DIRECT/AGGREGATION; a `CASE` condition INDIRECT/CONDITIONAL and a window's
`PARTITION BY`/`ORDER BY` INDIRECT/WINDOW for that column; `JOIN` keys, `WHERE`/`HAVING`/
`QUALIFY`, `GROUP BY` and `ORDER BY` columns INDIRECT for the whole target (dataset-wide).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from sqlglot import Token, TokenType, exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope
from sqlglot.schema import MappingSchema, normalize_name

#: (type, subtype) of one transformation, e.g. ("DIRECT", "IDENTITY").
Transformation = tuple[str, str]
IDENTITY: Transformation = ("DIRECT", "IDENTITY")
TRANSFORMATION: Transformation = ("DIRECT", "TRANSFORMATION")
AGGREGATION: Transformation = ("DIRECT", "AGGREGATION")
_DIRECT_STRENGTH = {"IDENTITY": 0, "TRANSFORMATION": 1, "AGGREGATION": 2}


class UnparsableSql(ValueError):
    """The text is not SQL sqlglot can read in that dialect."""


@dataclass(frozen=True, order=True)
class TableName:
    """A table as the statement names it: its dotted parts, already case-folded the way the
    dialect folds unquoted identifiers, and which parts were quoted."""

    parts: tuple[str, ...]
    quoted: tuple[bool, ...]

    @property
    def text(self) -> str:
        return ".".join(self.parts)


@dataclass(frozen=True, order=True)
class SourceColumn:
    table: TableName
    column: str


@dataclass
class TargetColumn:
    """One column the statement writes: its name (None when neither the statement nor its
    expression names it) and what it is made of."""

    name: str | None
    projection: str | None = None
    sources: dict[SourceColumn, set[Transformation]] = field(default_factory=dict)


@dataclass
class StatementLineage:
    """The column lineage of one statement. `target` is None for a bare query (a `SELECT`
    whose result the job writes somewhere the statement does not say).
    `inserts_by_position`: an INSERT without a column list, which fills the table's columns
    in order whatever the query calls them."""

    target: TableName | None
    columns: list[TargetColumn] = field(default_factory=list)
    dataset_wide: dict[SourceColumn, set[Transformation]] = field(default_factory=dict)
    tables: set[TableName] = field(default_factory=set)
    inserts_by_position: bool = False


@dataclass(frozen=True)
class Statement:
    """One statement of a text: as written, and its tree (identifiers folded as the dialect
    folds them) when sqlglot can read it. The tree is for one analysis, which changes it."""

    text: str
    tree: exp.Expr | None
    error: str | None = None


def split(sql: str, dialect: str | None) -> list[Statement]:
    """The statements of `sql`, split at its `;` tokens (not those inside strings or quoted
    names) and parsed one by one, so one broken statement does not hide the others."""
    grammar = Dialect.get_or_raise(dialect)
    try:
        tokens = grammar.tokenize(sql)
    except Exception as exc:  # sqlglot on a producer's text may fail in any way
        return [Statement(sql.strip(), None, _first_line(exc))]
    chunks: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            chunks.append([])
        else:
            chunks[-1].append(token)
    statements: list[Statement] = []
    for chunk in filter(None, chunks):
        text = sql[chunk[0].start : chunk[-1].end + 1].strip()
        try:
            trees = [t for t in grammar.parser().parse(chunk, sql) if t is not None]
        except Exception as exc:  # as above
            statements.append(Statement(text, None, _first_line(exc)))
            continue
        statements += [Statement(text, normalize_identifiers(t, dialect=dialect)) for t in trees]
    return statements


def tables_named(statement: exp.Expr) -> set[TableName]:
    """Every physical table the statement names (CTE names excluded): what a caller resolves
    before asking for the statement's lineage."""
    tree = statement
    ctes = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}
    return {
        table_name(t)
        for t in tree.find_all(exp.Table)
        if t.name and not (len(t.parts) == 1 and t.name in ctes)
    }


def statement_lineage(
    statement: Statement,
    dialect: str | None,
    schema: Mapping[TableName, Sequence[str]],
) -> StatementLineage | None:
    """The lineage of one parsed statement, `SELECT *` expanded with `schema` (the columns of
    the tables it reads, where known). None for a statement that moves no data (DDL without
    a query, `DELETE`, `SET`…); UnparsableSql when its query cannot be analysed. Qualifies
    the statement's tree in place."""
    assert statement.tree is not None
    shaped = _as_query(statement.tree)
    if shaped is None:
        return None
    target, query, names, by_position = shaped
    root = build_scope(_qualified(query, lambda: _query_of(statement, dialect), dialect, schema))
    if root is None:
        return None
    projections = _projections(root)
    starred = any(isinstance(p.unalias(), exp.Star) for b in projections for _, p in b)
    result = StatementLineage(
        target=target,
        # Columns filled by position are known only when every `*` could be expanded.
        inserts_by_position=by_position and not starred,
    )
    for position, branches in enumerate(projections):
        named = _projection_name(branches[0][1])
        column = TargetColumn(names[position] if position < len(names) else named, named)
        for scope, expression in branches:
            _add_all(column.sources, _expression_sources(scope, expression))
        result.columns.append(column)
    for scope in root.traverse():
        _add_all(result.dataset_wide, _clause_sources(scope))
        result.tables.update(
            table_name(s) for s in scope.sources.values() if isinstance(s, exp.Table)
        )
    return result


def _qualified(
    query: exp.Query,
    again: Callable[[], exp.Query],
    dialect: str | None,
    schema: Mapping[TableName, Sequence[str]],
) -> exp.Query:
    """`query` (changed in place) with every column tied to its table and `*` expanded
    where the schema allows. A schema that contradicts the statement (a column it does not
    list) is not used; when sqlglot cannot place every column (an unqualified column of a
    correlated subquery), the tables are still qualified and columns stay as written. Each
    retry starts from the statement read again (`again`), since a failed attempt may have
    changed the tree half-way."""
    attempts: list[tuple[Mapping[TableName, Sequence[str]], bool]] = [({}, True), ({}, False)]
    if schema:
        attempts.insert(0, (schema, True))
    failure: Exception | None = None
    for number, (known, qualify_columns) in enumerate(attempts):
        try:
            return qualify(
                query if number == 0 else again(),
                schema=_sqlglot_schema(known, dialect),
                dialect=dialect,
                qualify_columns=qualify_columns,
                expand_stars=qualify_columns,
                validate_qualify_columns=False,
                quote_identifiers=False,
                identify=False,
            )
        except (SqlglotError, KeyError, ValueError) as exc:
            failure = exc
    raise UnparsableSql(_first_line(failure)) from None


def _first_line(exc: Exception | None) -> str:
    text = str(exc) if exc is not None else ""
    return text.splitlines()[0] if text else type(exc).__name__


def table_name(table: exp.Table) -> TableName:
    identifiers = [p for p in table.parts if isinstance(p, exp.Identifier)]
    return TableName(
        tuple(p.name for p in identifiers), tuple(bool(p.args.get("quoted")) for p in identifiers)
    )


# -- statement shapes -------------------------------------------------------------------------


def _query_of(statement: Statement, dialect: str | None) -> exp.Query:
    """The statement's query from a tree of its own: its text read again."""
    [again] = split(statement.text, dialect)
    assert again.tree is not None  # it was read the first time
    shaped = _as_query(again.tree)
    assert shaped is not None  # it had a query the first time
    return shaped[1]


def _as_query(
    tree: exp.Expr,
) -> tuple[TableName | None, exp.Query, list[str], bool] | None:
    """(target, the query whose projections are the target's columns, the column names the
    statement gives them, whether an INSERT fills the table's columns by position). The query
    is part of `tree`, not a copy."""
    if isinstance(tree, exp.Query):
        return None, tree, [], False
    if isinstance(tree, exp.Insert) and isinstance(tree.expression, exp.Query):
        target, names = _target_of(tree.this)
        query = _with_ctes(tree.expression, tree.args.get("with_"))
        return target, query, names, not names
    if isinstance(tree, exp.Create) and isinstance(tree.expression, exp.Query):
        target, names = _target_of(tree.this)
        query = _with_ctes(tree.expression, tree.args.get("with_"))
        return target, query, names, False
    if isinstance(tree, exp.Merge):
        return _merge_query(tree)
    if isinstance(tree, exp.Update) and isinstance(tree.this, exp.Table):
        return _update_query(tree)
    return None


def _target_of(node: exp.Expr) -> tuple[TableName | None, list[str]]:
    if isinstance(node, exp.Schema) and isinstance(node.this, exp.Table):
        return table_name(node.this), [e.name for e in node.expressions if e.name]
    if isinstance(node, exp.Table):
        return table_name(node), []
    return None, []


def _with_ctes(query: exp.Query, ctes: exp.Expr | None) -> exp.Query:
    """`WITH … INSERT INTO t SELECT …`: the CTEs belong to the query."""
    if isinstance(ctes, exp.With):
        existing = query.args.get("with_")
        if isinstance(existing, exp.With):
            existing.set("expressions", [*ctes.expressions, *existing.expressions])
        else:
            query.set("with_", ctes.copy())
    return query


def _merge_query(
    tree: exp.Merge,
) -> tuple[TableName | None, exp.Query, list[str], bool] | None:
    """MERGE as `SELECT <assigned values> FROM target JOIN source ON <on> WHERE <whens>`: the
    values of `UPDATE SET` and `INSERT … VALUES` feed the columns they are assigned to, the
    `ON` columns are join keys and the `WHEN … AND` conditions filters."""
    target = tree.this
    if not isinstance(target, exp.Table):
        return None
    names: list[str] = []
    values: list[exp.Expr] = []
    conditions: list[exp.Expr] = []
    whens = tree.args.get("whens")
    for when in whens.expressions if isinstance(whens, exp.Whens) else []:
        if isinstance(when.args.get("condition"), exp.Expr):
            conditions.append(when.args["condition"].copy())
        action = when.args.get("then")
        if isinstance(action, exp.Update):
            for assignment in action.expressions:
                if isinstance(assignment, exp.EQ):
                    names.append(assignment.this.name)
                    values.append(assignment.expression.copy())
        elif isinstance(action, exp.Insert):
            columns = action.this.expressions if isinstance(action.this, exp.Tuple) else []
            row = action.expression.expressions if isinstance(action.expression, exp.Tuple) else []
            for column, value in zip(columns, row, strict=False):
                names.append(column.name)
                values.append(value.copy())
    if not values:
        return None
    using = tree.args.get("using")
    if not isinstance(using, exp.Expr):
        return None
    query = exp.select(*values).from_(target.copy())
    query = query.join(using.copy(), on=tree.args.get("on"))
    if conditions:
        query = query.where(exp.or_(*conditions))
    return table_name(target), query, names, False


def _update_query(
    tree: exp.Update,
) -> tuple[TableName | None, exp.Query, list[str], bool] | None:
    """UPDATE as `SELECT <assigned values> FROM target[, FROM tables] WHERE <where>`."""
    names = [a.this.name for a in tree.expressions if isinstance(a, exp.EQ)]
    values = [a.expression.copy() for a in tree.expressions if isinstance(a, exp.EQ)]
    if not values:
        return None
    query = exp.select(*values).from_(tree.this.copy())
    extra = tree.args.get("from_")
    if isinstance(extra, exp.From):
        query = query.join(extra.this.copy(), join_type="cross")
    where = tree.args.get("where")
    if isinstance(where, exp.Where):
        query = query.where(where.this.copy())
    return table_name(tree.this), query, names, False


def _sqlglot_schema(
    schema: Mapping[TableName, Sequence[str]], dialect: str | None
) -> MappingSchema:
    """The tables' columns as sqlglot's schema: nested {catalog: {db: {table: {column:
    type}}}}, every table at the same depth (sqlglot refuses a mix), so shorter names are
    left out when they clash.

    It is the schema `MappingSchema(nested, dialect=dialect)` makes, its names normalized
    as that would, but each name through a cache of the process (`_normalized`): sqlglot
    parses every table and column name it is given as SQL, which cost a quarter of
    qualifying a statement, although the datasets' columns repeat from facet to facet."""
    nested: dict[str, object] = {}
    depth = max((len(name.parts) for name in schema), default=0)
    for name, columns in schema.items():
        if len(name.parts) != depth or not columns:
            continue
        level = nested
        for part in name.parts[:-1]:
            level = level.setdefault(part, {})  # type: ignore[assignment]
        level[name.parts[-1]] = dict.fromkeys(columns, "unknown")
    normalized: dict[str, object] = {}
    _normalize_into(normalized, nested, (), depth, dialect)
    made = MappingSchema(normalized, dialect=dialect, normalize=False)
    made.normalize = True  # its lookups normalize the names they are given, as before
    return made


def _normalize_into(
    normalized: dict[str, object],
    level: Mapping[str, object],
    keys: tuple[str, ...],
    depth: int,
    dialect: str | None,
) -> None:
    """Each table of `level` (nested `depth` deep, within `keys`) with its columns, names
    normalized, into `normalized`, in the order and with the merges of sqlglot's own."""
    if len(keys) == depth:
        into = normalized
        for key in keys:
            into = into.setdefault(_normalized(key, dialect, True), {})  # type: ignore[assignment]
        for column, kind in level.items():
            into[_normalized(column, dialect, False)] = kind
        return
    for key, inner in level.items():
        _normalize_into(normalized, inner, (*keys, key), depth, dialect)  # type: ignore[arg-type]


#: Names kept normalized per process: a name and its normal form, about 200 bytes each (3 MB
#: at most); the 849 distinct facets of the medium workload name 551.
NAMES_KEPT = 16_384


@lru_cache(maxsize=NAMES_KEPT)
def _normalized(name: str, dialect: str | None, is_table: bool) -> str:
    """A table's or column's name as sqlglot's schema normalizes it (read as SQL, then
    folded as `dialect` folds it); raises as sqlglot does for a name it cannot read."""
    return normalize_name(name, dialect=dialect, is_table=is_table).name


# -- tracing columns --------------------------------------------------------------------------


def _projections(root: Scope) -> list[list[tuple[Scope, exp.Expr]]]:
    """Per output position, the projection of every UNION branch that fills it."""
    branches = list(_branches(root))
    width = max((len(selects) for _, selects in branches), default=0)
    return [
        [(scope, selects[i]) for scope, selects in branches if i < len(selects)]
        for i in range(width)
    ]


def _branches(scope: Scope) -> Iterator[tuple[Scope, list[exp.Expr]]]:
    if isinstance(scope.expression, exp.SetOperation):
        for branch in scope.set_operation_scopes:
            yield from _branches(branch)
    elif isinstance(scope.expression, exp.Select):
        yield scope, list(scope.expression.selects)


def _projection_name(projection: exp.Expr) -> str | None:
    """The name a projection gives its column; None for an unnamed expression (sqlglot names
    it `_col_<n>`) and for a `*` it could not expand."""
    name = projection.alias_or_name
    if not name or name == "*":
        return None
    if name.startswith("_col_") and projection.unalias().alias_or_name != name:
        return None
    return name


def _expression_sources(
    scope: Scope, expression: exp.Expr
) -> dict[SourceColumn, set[Transformation]]:
    """The table columns `expression` (evaluated in `scope`) is made of, each with how."""
    found: dict[SourceColumn, set[Transformation]] = {}
    bare = expression.unalias() if isinstance(expression, exp.Alias) else expression
    for column in _own_columns(bare):
        role = _role(column, bare)
        for source, inner in _trace(scope, column).items():
            _add(found, source, {_combine(role, t) for t in inner})
    return found


def _clause_sources(scope: Scope) -> dict[SourceColumn, set[Transformation]]:
    """Columns of the clauses that decide which rows reach the target: dataset-wide."""
    select = scope.expression
    if not isinstance(select, exp.Select):
        return {}
    clauses: list[tuple[exp.Expr | None, str]] = [
        (join.args.get("on"), "JOIN") for join in select.args.get("joins") or []
    ]
    clauses += [
        (select.args.get("where"), "FILTER"),
        (select.args.get("having"), "FILTER"),
        (select.args.get("qualify"), "FILTER"),
        (select.args.get("group"), "GROUP_BY"),
        (select.args.get("order"), "SORT"),
    ]
    if scope.is_subquery or scope.is_udtf:
        # A subquery used as a predicate (`IN (SELECT …)`, `EXISTS`): what it selects filters.
        clauses += [(projection, "FILTER") for projection in select.selects]
    named = {p.alias: p for p in select.selects if isinstance(p, exp.Alias) and p.alias}
    found: dict[SourceColumn, set[Transformation]] = {}
    for clause, subtype in clauses:
        if clause is None:
            continue
        for column in _own_columns(clause):
            projection = named.get(column.name) if not column.table else None
            # `ORDER BY total` may name a projection rather than a table column.
            sources = (
                _expression_sources(scope, projection)
                if projection is not None
                else _trace(scope, column)
            )
            for source in sources:
                _add(found, source, {("INDIRECT", subtype)})
    return found


def _trace(scope: Scope, column: exp.Column) -> dict[SourceColumn, set[Transformation]]:
    """Where `column`, as `scope` sees it, comes from: a table's column, or through a CTE,
    derived table or UNION the sources of that scope's projection of the same name."""
    source = scope.sources.get(column.table) if column.table else _only_source(scope)
    if isinstance(source, exp.Table):
        return {SourceColumn(table_name(source), column.name): {IDENTITY}}
    if isinstance(source, Scope):
        found: dict[SourceColumn, set[Transformation]] = {}
        for inner_scope, selects in _branches(source):
            for projection in selects:
                if projection.alias_or_name == column.name:
                    _add_all(found, _expression_sources(inner_scope, projection))
                    break
        return found
    return {}


def _only_source(scope: Scope) -> exp.Table | Scope | None:
    """An unqualified column that sqlglot could not place (no schema) belongs to the one
    source of the scope, if there is just one."""
    sources = list(scope.selected_sources.values())
    if len(sources) == 1:
        node = sources[0][1]
        if isinstance(node, exp.Table | Scope):
            return node
    return None


def _own_columns(node: exp.Expr) -> Iterator[exp.Column]:
    """Columns of `node` outside nested subqueries (those are scopes of their own)."""
    for column in node.find_all(exp.Column):
        if not _inside_subquery(column, node) and column.name:
            yield column


def _inside_subquery(node: exp.Expr, stop: exp.Expr) -> bool:
    if node is stop:
        return False
    parent = node.parent
    while parent is not None and parent is not stop:
        if isinstance(parent, exp.Subquery | exp.Query) and parent is not stop:
            return True
        parent = parent.parent
    return False


def _role(column: exp.Column, expression: exp.Expr) -> Transformation:
    """How `column` contributes to `expression`, the projection it appears in."""
    if column is expression or _is_using_key(column.parent, expression):
        return IDENTITY
    aggregated = False
    child: exp.Expr = column
    parent = column.parent
    while parent is not None:
        if isinstance(parent, exp.Window) and child is not parent.this:
            return ("INDIRECT", "WINDOW")
        if isinstance(parent, exp.If) and child is parent.this:
            return ("INDIRECT", "CONDITIONAL")
        if isinstance(parent, exp.Case) and child is parent.this:
            return ("INDIRECT", "CONDITIONAL")
        if isinstance(parent, exp.AggFunc):
            aggregated = True
        if parent is expression:
            break
        child, parent = parent, parent.parent
    return AGGREGATION if aggregated else TRANSFORMATION


def _is_using_key(node: exp.Expr | None, expression: exp.Expr) -> bool:
    """`JOIN … USING (id)` selects `id` as COALESCE(a.id, b.id): the key's value itself."""
    return (
        node is expression
        and isinstance(node, exp.Coalesce)
        and all(isinstance(e, exp.Column) for e in node.iter_expressions())
        and len({e.name for e in node.iter_expressions()}) == 1
    )


def _combine(outer: Transformation, inner: Transformation) -> Transformation:
    """A column used as `outer` in a projection that is itself made of a table column as
    `inner` (through a CTE or subquery): indirect wins; else the stronger direct kind."""
    if outer[0] == "INDIRECT":
        return outer
    if inner[0] == "INDIRECT":
        return inner
    return outer if _DIRECT_STRENGTH[outer[1]] >= _DIRECT_STRENGTH[inner[1]] else inner


def _add(
    found: dict[SourceColumn, set[Transformation]], key: SourceColumn, how: set[Transformation]
) -> None:
    found.setdefault(key, set()).update(how)


def _add_all(
    found: dict[SourceColumn, set[Transformation]],
    more: Mapping[SourceColumn, set[Transformation]],
) -> None:
    for key, how in more.items():
        _add(found, key, how)
