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
#: The adapters: each turns one outside world (HTTP, the command line, a Python program, Kafka,
#: a browser) into calls to the services, and none leans on another's way of doing it.
ADAPTERS = ("api", "cli", "commands", "client", "kafka", "web")
#: Adapters that assemble others: the server (`api/`) mounts the web UI and runs the Kafka
#: consumers beside its routes; the command line (`cli.py` and `commands/`, one adapter)
#: starts the server and the consumers and asks a server through `client/`.
COMPOSITION_ROOTS = ("api", "cli", "commands")
#: Layers below the adapters: pure types, the store and the services, which any adapter may
#: call, so none of them may depend on a web framework.
BELOW_ADAPTERS = ("model", "store", "ingest", "query", "watch")
WEB_FRAMEWORKS = ("fastapi", "starlette")
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


def _adapter_imports(path: Path, tree: ast.Module) -> list[str]:
    """Imports of another adapter by an adapter that assembles none."""
    layer = _layer(path)
    if layer not in ADAPTERS or layer in COMPOSITION_ROOTS:
        return []
    others = tuple(f"upstream.{other}" for other in ADAPTERS if other != layer)
    return [
        f"{_where(path, line)} imports {module}"
        for line, module, _ in _imports(tree)
        if module in others or module.startswith(tuple(f"{other}." for other in others))
    ]


def test_no_adapter_imports_another() -> None:
    found = [line for path, tree in _modules() for line in _adapter_imports(path, tree)]
    assert not found, found


def _web_framework_imports(path: Path, tree: ast.Module) -> list[str]:
    if _layer(path) not in BELOW_ADAPTERS:
        return []
    return [
        f"{_where(path, line)} imports {module}"
        for line, module, _ in _imports(tree)
        if module.split(".")[0] in WEB_FRAMEWORKS
    ]


def test_no_web_framework_below_the_adapters() -> None:
    found = [line for path, tree in _modules() for line in _web_framework_imports(path, tree)]
    assert not found, found


@pytest.mark.parametrize(
    ("source", "layer", "expected"),
    [
        ("from upstream.api.errors import ApiError\n", "kafka", 1),
        ("from upstream.api.errors import ApiError\n", "web", 1),
        ("import upstream.client.http\n", "kafka", 1),
        ("from upstream.kafka.consumer import LineageConsumer\n", "client", 1),
        ("from upstream.ingest.body import decode\n", "kafka", 0),
        ("from upstream.kafka.messages import Refusal\n", "kafka", 0),
        ("from upstream.web.routes import router\n", "api", 0),
        ("from upstream.client.http import HttpReader\n", "commands", 0),
        ("from upstream.apidoc import x\n", "kafka", 0),  # `api` only as a whole name
    ],
)
def test_the_adapter_rule_catches_what_it_should(source: str, layer: str, expected: int) -> None:
    path = PACKAGE / layer / "example.py"
    assert len(_adapter_imports(path, ast.parse(source))) == expected


@pytest.mark.parametrize(
    ("source", "layer", "expected"),
    [
        ("from starlette.concurrency import run_in_threadpool\n", "ingest", 1),
        ("import fastapi\n", "query", 1),
        ("from fastapi import Request\n", "model", 1),
        ("from fastapi import Request\n", "store", 1),
        ("from fastapi import Request\n", "api", 0),
        ("from anyio.to_thread import run_sync\n", "ingest", 0),
    ],
)
def test_the_web_framework_rule_catches_what_it_should(
    source: str, layer: str, expected: int
) -> None:
    path = PACKAGE / layer / "example.py"
    assert len(_web_framework_imports(path, ast.parse(source))) == expected


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
