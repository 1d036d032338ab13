"""Telling a database that is away from a write that is wrong.

A consumer must wait out the first (the database is restarting, unreachable, out of
connections) and may refuse a message only for the second; confusing them either drops good
events or blocks a partition for ever. This is the one place that decides.
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

#: PostgreSQL SQLSTATE classes of a server that cannot serve now: connection exceptions (08),
#: insufficient resources (53), operator intervention such as a shutdown (57).
_UNAVAILABLE_CLASSES = ("08", "53", "57")


def is_database_outage(exc: BaseException) -> bool:
    """True when `exc` says the database cannot be reached or cannot serve now, so the same
    write will succeed later; False for errors the data itself causes."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated or isinstance(exc, InterfaceError):
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate.startswith(_UNAVAILABLE_CLASSES)
    # SQLite and a PostgreSQL connection that failed before any answer carry no SQLSTATE.
    return isinstance(exc, OperationalError)
