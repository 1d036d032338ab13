"""Every dependency a route resolves is a coroutine (`upstream.api.deps`): FastAPI runs a plain
function in the thread pool, so each one cost a read a hand-off to a worker thread and back
before the read began (12 % of a one-level lineage read's time on the medium store)."""

from __future__ import annotations

from collections.abc import Iterator
from inspect import iscoroutinefunction
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.dependencies.utils import get_dependant
from fastapi.routing import APIRoute

from upstream.api.app import create_app
from upstream.api.routes import dataset_lineage, field_lineage, openlineage
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
    plain = {f"{at}: {type(call).__qualname__}" for at, call in found if not _is_coroutine(call)}
    assert plain == set()


def _is_coroutine(call: Any) -> bool:
    """A coroutine function, or an object whose `__call__` is one (`api.lineage_query.Asked`)."""
    return iscoroutinefunction(call) or iscoroutinefunction(type(call).__call__)


def test_a_lineage_read_resolves_few_dependencies_and_no_question_parameters() -> None:
    """FastAPI resolves a declared parameter or a dependency in several microseconds: the ten
    parameters of a lineage question, and the store, the settings and the token's namespaces
    each as a dependency of its own, cost a one-level read more CPU than its walk. A read route
    takes them as two dependencies, its question read from the query string in one pass."""
    for route in [*dataset_lineage.router.routes, *field_lineage.router.routes]:
        assert isinstance(route, APIRoute)
        dependants = [route.dependant, *(d for _, d in _within(route.path, route.dependant))]
        assert len(dependants) <= 3, (route.path, [d.call for d in dependants])
        queries = {p.alias for d in dependants for p in d.query_params}
        assert queries <= {"prefix", "includeCurrent", "direction"}, (route.path, queries)


def test_a_lineage_post_resolves_one_dependency_and_no_declared_parameter() -> None:
    """A single post paid FastAPI's resolution of the writer, the settings and the token's
    access as dependencies of their own, and pydantic's validation of a declared `atomic`,
    on every event: the route reads them from the app and the request itself, `atomic` in
    one dependency (documented as before, `upstream.api.deps.Documented`)."""
    [route] = openlineage.router.routes
    assert isinstance(route, APIRoute)
    dependants = [route.dependant, *(d for _, d in _within(route.path, route.dependant))]
    assert len(dependants) == 2, [d.call for d in dependants]
    assert [p.alias for d in dependants for p in d.query_params + d.header_params] == []
