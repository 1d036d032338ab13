"""One place that decides a database failure means "unavailable, retry later".

The drivers' errors for an unreachable, stopped, overloaded or locked database come in many
kinds: refused or timed-out connections and cut sockets (`OperationalError`, `DisconnectionError`),
a full connection pool (`sqlalchemy.exc.TimeoutError`, which is no `OperationalError`), and the
statement and lock timeouts (`QueryCanceled`, `LockNotAvailable`, SQLite's `database is locked`
and `interrupted`). `is_database_outage` is the one predicate that decides it; `outage_guard`
turns each such failure into `StoreUnavailable`, which the API answers with 503 and
`Retry-After`, so nothing above the store needs to know SQLAlchemy's exceptions. An error the
data causes (a value the database refuses) stays what it is: retrying would fail again.

While the database is unreachable, `OutageBreaker` lets one request at a time try it and
refuses the others at once: a hung database then costs each client one fast 503, not a wait
for its own connect timeout, and the first request that gets through ends the outage.

The write paths ask the same predicate: a Kafka consumer must wait out an outage (the
database is restarting, unreachable, out of connections) and may refuse a message only when
the data itself is wrong; confusing the two either drops good events or blocks a partition
for ever.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import exc as sa_exc

from upstream.model.errors import StoreUnavailable

#: PostgreSQL SQLSTATE classes of a server that cannot serve now: connection exceptions (08),
#: a transaction that lost a deadlock or a serialization race after its retries (40),
#: insufficient resources (53), operator intervention such as a shutdown or a statement over
#: its timeout (57), a system error such as a failed disk read (58).
_UNAVAILABLE_CLASSES = ("08", "40", "53", "57", "58")
#: A lock wait over `lock_timeout`: the lock's holder, not the data, is in the way.
_BUSY = {"55P03"}

#: Seconds a client should wait before retrying, sent as `Retry-After`.
RETRY_AFTER_SECONDS = 5


class OutageBreaker:
    """Remembers that the database was unreachable, until a request reaches it again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down = False
        self._probing = False

    @property
    def down(self) -> bool:
        return self._down

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """Run the body unless the database is down and another request is already trying it
        (then `StoreUnavailable` at once). Reaching the database ends the outage."""
        with self._lock:
            probe = self._down
            if probe and self._probing:
                raise StoreUnavailable("the database was unreachable a moment ago")
            self._probing = self._probing or probe
        try:
            yield
        except StoreUnavailable as failure:
            if failure.__cause__ is not None and _unreachable(failure.__cause__):
                self._down = True
            raise
        else:
            self._down = False
        finally:
            if probe:
                with self._lock:
                    self._probing = False


@contextmanager
def outage_guard() -> Iterator[None]:
    """Re-raise the database failures worth a retry (`is_database_outage`) as
    `StoreUnavailable`; any other failure goes on as it is."""
    try:
        yield
    except StoreUnavailable:
        raise
    except Exception as exc:
        if not is_database_outage(exc):
            raise
        raise StoreUnavailable(_reason(exc)) from exc


def _unreachable(exc: BaseException) -> bool:
    """The failure says the database cannot be reached at all (not one slow statement)."""
    if isinstance(exc, sa_exc.TimeoutError | sa_exc.DisconnectionError):
        return True
    return isinstance(exc, sa_exc.DBAPIError) and (
        exc.connection_invalidated or _connect_failure(exc)
    )


def _connect_failure(exc: sa_exc.DBAPIError) -> bool:
    # psycopg reports a failed connect as a plain OperationalError with no SQLSTATE (SQLite's
    # errors have none at all, and none of them means unreachable).
    orig = exc.orig
    return (
        isinstance(exc, sa_exc.OperationalError)
        and type(orig).__module__.startswith("psycopg")
        and not getattr(orig, "sqlstate", None)
    )


def _reason(exc: BaseException) -> str:
    """One line of the driver's message, for the log."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return (lines[0] if lines else type(orig).__name__)[:200]


def is_database_outage(exc: BaseException) -> bool:
    """True when `exc` says the database cannot be reached or cannot serve now, so the same
    work will succeed later; False for errors the data or the code cause. The one answer to
    that question: `outage_guard` turns exactly these into `StoreUnavailable` (503), and the
    write paths and the Kafka consumer wait out exactly these."""
    if isinstance(exc, StoreUnavailable | sa_exc.TimeoutError | sa_exc.DisconnectionError):
        return True
    if not isinstance(exc, sa_exc.DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, sa_exc.InterfaceError):
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate.startswith(_UNAVAILABLE_CLASSES) or sqlstate in _BUSY
    # SQLite (locked, busy, interrupted past its statement time) and a PostgreSQL connection
    # that failed before any answer carry no SQLSTATE.
    return isinstance(exc, sa_exc.OperationalError)


def database_error_text(exc: BaseException) -> str | None:
    """What a database failure says, for a one-line report: the driver's first line when the
    database answered with an error, SQLAlchemy's own otherwise; None when `exc` is not a
    database failure. Callers outside `store/` learn this without importing SQLAlchemy."""
    if isinstance(exc, sa_exc.DBAPIError):
        return f"database error: {first_line(str(exc.orig))}"
    if isinstance(exc, sa_exc.SQLAlchemyError):
        return first_line(str(exc))
    return None


def first_line(text: str) -> str:
    """The first line of a message, or "unknown error" for an empty one."""
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
