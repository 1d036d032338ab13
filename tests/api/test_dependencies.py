"""Every dependency a route resolves is a coroutine (`upstream.api.deps`): FastAPI runs a plain
function in the thread pool, so each one cost a read a hand-off to a worker thread and back
before the read began (12 % of a one-level lineage read's time on the medium store)."""

from __future__ import annotations

from collections.abc import Iterator
from inspect import iscoroutinefunction
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_dependant

from upstream.api.app import create_app
from upstream.settings import Settings


def _dependencies(routes: list[Any]) -> Iterator[tuple[str, Dependant]]:
    """Every dependency of every route: those it declares, and those its router was included
    with, each with the dependencies it declares in turn."""
    for route in routes:
        dependant = getattr(route, "dependant", None)
        if dependant is not None:
            yield from _within(route.path, dependant)
        included = getattr(route, "include_context", None)
        if included is not None:
            for depends in included.dependencies:
                dependency = get_dependant(path="", call=depends.dependency)
                yield "(every route of a router)", dependency
                yield from _within("(every route of a router)", dependency)
            yield from _dependencies(route.original_router.routes)


def _within(path: str, dependant: Dependant) -> Iterator[tuple[str, Dependant]]:
    for dependency in dependant.dependencies:
        yield path, dependency
        yield from _within(path, dependency)


def test_every_routes_dependencies_are_coroutines(tmp_path: Any) -> None:
    app = create_app(Settings(db_url=f"sqlite:///{tmp_path / 'u.db'}"), migrate=False)
    found = [(path, d.call) for path, d in _dependencies(app.router.routes) if d.call]
    assert len({path for path, _ in found}) > 50  # the walk reached the included routers
    plain = {f"{at}: {call.__qualname__}" for at, call in found if not iscoroutinefunction(call)}
    assert plain == set()
