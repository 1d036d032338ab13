"""How a route calls a service: a read on one snapshot, a change in one write transaction.

Routes are plain functions, which FastAPI runs on its thread pool, so a service's database
work never blocks the event loop. The errors a service raises are answered by `api.errors`.
A read's answer is written to JSON here, on that thread, by `JsonAnswer`: FastAPI's own
encoder costs more than the walk for a large answer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Concatenate, ParamSpec, TypeVar

from fastapi import Response
from sqlalchemy.engine import Connection

from upstream.api.deps import answer_position
from upstream.api.json_answer import JsonAnswer
from upstream.model.access import Visibility
from upstream.model.read_position import ReadPosition
from upstream.query.hidden import without_hidden
from upstream.store.engine import Store

P = ParamSpec("P")
T = TypeVar("T")


def read(
    store: Store,
    service: Callable[Concatenate[Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> JsonAnswer[T]:
    """The answer of read service `service(conn, *args, **kwargs)`, read on one snapshot,
    as the JSON response that sends it."""
    with store.read() as conn:
        answer = service(conn, *args, **kwargs)
    return JsonAnswer(answer)


def read_walk(
    store: Store,
    service: Callable[Concatenate[Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> JsonAnswer[T]:
    """`read`, for a service that walks the process's graph index and, once the index
    and the names it keeps are current, reads nothing but its start's lookup: on
    PostgreSQL that one statement is the read's one round trip (`Store.read_once`)."""
    return JsonAnswer(store.read_once(lambda conn: service(conn, *args, **kwargs)))


def read_shown(
    store: Store,
    shown_to: Visibility,
    service: Callable[Concatenate[Connection, P], T],
    *args: P.args,
    **kwargs: P.kwargs,
) -> JsonAnswer[T]:
    """`read`, for a Marquez-shaped answer: what it refers to in namespaces `shown_to`
    does not show is left out (`upstream.query.hidden.without_hidden`)."""
    with store.read() as conn:
        answer = service(conn, *args, **kwargs)
    return JsonAnswer(without_hidden(answer, shown_to))


def change(store: Store, response: Response, work: Callable[..., T], *args: object) -> T:
    """Run one change (`work(conn, *args, now)`) in one write transaction, and answer with
    the position it committed at (`X-Upstream-Position`). The time is taken once, so a
    retried transaction writes the same one."""
    now = datetime.now(UTC)
    answer, position = store.write_at(lambda conn: work(conn, *args, now))
    answer_position(response, ReadPosition(change=position))
    return answer
