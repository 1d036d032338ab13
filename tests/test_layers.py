"""The layers of docs/architecture.md, checked on the source: every import points inwards.

Imports are read with `ast`, so nothing is imported and a violation names its file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "upstream"
#: Layers a module of `model/` must not import: model is pure.
OUTER_LAYERS = ("store", "ingest", "query", "api", "commands", "client", "kafka", "web", "render")
#: Where SQL may be built: the store, and the read services that compose its statements.
SQL_LAYERS = ("store", "query")
#: The one SQLAlchemy name other services may import: the type of the connection a service is
#: handed, so that one service call reads one snapshot.
CONNECTION_TYPE = ("sqlalchemy.engine", "Connection")


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" not in path.parts:
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _layer(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _imports(tree: ast.Module) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line, module, names) of every import; `import a.b` gives ("a.b", ())."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, tuple(alias.name for alias in node.names)


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


def test_model_imports_no_outer_layer() -> None:
    found = [
        f"{_where(path, line)} imports {module}"
        for path, tree in _modules()
        if _layer(path) == "model"
        for line, module, _ in _imports(tree)
        if module.startswith(tuple(f"upstream.{layer}" for layer in OUTER_LAYERS))
    ]
    assert not found, found


def _sqlalchemy_outside_sql_layers(path: Path, tree: ast.Module) -> list[str]:
    if _layer(path) in SQL_LAYERS:
        return []
    return [
        f"{_where(path, line)} imports {module} {', '.join(names)}".rstrip()
        for line, module, names in _imports(tree)
        if (module == "sqlalchemy" or module.startswith("sqlalchemy."))
        and not (module == CONNECTION_TYPE[0] and names == (CONNECTION_TYPE[1],))
    ]


def test_sqlalchemy_stays_in_the_store_and_the_read_services() -> None:
    found = [
        line for path, tree in _modules() for line in _sqlalchemy_outside_sql_layers(path, tree)
    ]
    assert not found, found


def _dialect_checks(tree: ast.Module) -> list[int]:
    """Lines that compare a dialect (`conn.dialect.name == "postgresql"`, `store.dialect == …`)."""

    def names_dialect(node: ast.expr) -> bool:
        return isinstance(node, ast.Attribute) and (
            node.attr == "dialect"
            or (
                node.attr == "name"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "dialect"
            )
        )

    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(names_dialect(side) for side in [node.left, *node.comparators])
    ]


def test_dialect_checks_stay_in_the_store() -> None:
    found = [
        _where(path, line)
        for path, tree in _modules()
        if _layer(path) != "store"
        for line in _dialect_checks(tree)
    ]
    assert not found, found


@pytest.mark.parametrize(
    ("source", "layer", "expected"),
    [
        ("import sqlalchemy as sa\n", "ingest", 1),
        ("from sqlalchemy.exc import DBAPIError\n", "commands", 1),
        ("from sqlalchemy.engine import Connection, Engine\n", "ingest", 1),
        ("from sqlalchemy.engine import Connection\n", "ingest", 0),
        ("import sqlalchemy as sa\n", "store", 0),
        ("import sqlalchemy as sa\n", "query", 0),
    ],
)
def test_the_sqlalchemy_rule_catches_what_it_should(source: str, layer: str, expected: int) -> None:
    path = PACKAGE / layer / "example.py"
    assert len(_sqlalchemy_outside_sql_layers(path, ast.parse(source))) == expected


def test_the_dialect_rule_catches_comparisons_only() -> None:
    assert _dialect_checks(ast.parse('if conn.dialect.name == "postgresql":\n    pass\n')) == [1]
    assert _dialect_checks(ast.parse('x = store.dialect != "sqlite"\n')) == [1]
    assert _dialect_checks(ast.parse("shown = {'store': store.dialect}\n")) == []
