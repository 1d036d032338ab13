"""Every error a service may raise has an HTTP status and an exit status decided for it.

As httpx's `test_httpcore_all_exceptions_mapped`: the subclasses of `ServiceError` are found
by walking the hierarchy (after importing every module, so a class defined anywhere counts), and
each must have its own entry in `api.errors.STATUS` and `commands.failures.EXIT_STATUS`; one
inheriting its parent's answer by accident would fail here.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import upstream
from upstream.api.errors import STATUS, service_error_response, status_of
from upstream.commands.failures import EXIT_STATUS, exit_status
from upstream.model.errors import (
    Conflict,
    InvalidInput,
    InvalidParameter,
    NotFound,
    Problem,
    ServiceError,
    StoreUnavailable,
)


def _every_subclass(cls: type[ServiceError]) -> set[type[ServiceError]]:
    found: set[type[ServiceError]] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _every_subclass(sub)
    return found


@pytest.fixture(scope="module")
def error_classes() -> set[type[ServiceError]]:
    for module in pkgutil.walk_packages(upstream.__path__, "upstream."):
        # Not the migrations (Alembic runs them on import) nor `python -m upstream`.
        if ".migrations" not in module.name and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return _every_subclass(ServiceError)


def test_the_walk_finds_the_hierarchy(error_classes: set[type[ServiceError]]) -> None:
    assert {NotFound, InvalidInput, InvalidParameter, Conflict, StoreUnavailable} <= error_classes


def test_every_service_error_has_an_http_status(error_classes: set[type[ServiceError]]) -> None:
    unmapped = sorted(c.__qualname__ for c in error_classes if c not in STATUS)
    assert not unmapped, f"no HTTP status in api.errors.STATUS for {unmapped}"


def test_every_service_error_has_an_exit_status(error_classes: set[type[ServiceError]]) -> None:
    unmapped = sorted(c.__qualname__ for c in error_classes if c not in EXIT_STATUS)
    assert not unmapped, f"no exit status in commands.failures.EXIT_STATUS for {unmapped}"


@pytest.mark.parametrize(
    ("error", "status", "exit"),
    [
        (NotFound("dataset 'x' not found in namespace 'n'"), 404, 1),
        (InvalidInput.at("eventTime", "must be a time"), 422, 1),
        (InvalidParameter.at("levels", "must be at least 1, not 0"), 400, 2),
        (Conflict.at("run.runId", "run r was already reported for a different job"), 422, 1),
        (StoreUnavailable("connection refused"), 503, 1),
    ],
)
def test_each_error_is_answered_as_before(error: ServiceError, status: int, exit: int) -> None:
    """The statuses the API and the CLI gave before the hierarchy existed."""
    assert status_of(error) == status
    assert exit_status(error) == exit
    assert service_error_response(error).status_code == status


def test_located_problems_are_listed() -> None:
    error = InvalidParameter([Problem("start", "not a time"), Problem("levels", "too deep")])
    response = service_error_response(error)
    assert response.body == (
        b'{"code":400,"message":"start: not a time; levels: too deep","errors":'
        b'[{"path":"start","message":"not a time"},{"path":"levels","message":"too deep"}]}'
    )


def test_located_problems_keep_their_class_inside_a_batch() -> None:
    moved = Conflict.at("run.runId", "reported for a different job").within("[3]")
    assert type(moved) is Conflict
    assert moved.problems == [Problem("[3].run.runId", "reported for a different job")]
