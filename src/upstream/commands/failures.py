"""How a command fails: one line on stderr and an exit status (1, or 2 for a mistyped command,
as Typer's own usage errors); the traceback only with `upstream --debug`. `EXIT_STATUS` is the
one place that decides the status of each error a service raises."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from upstream.client.errors import ApiRejected, UpstreamError
from upstream.commands.state import debugging
from upstream.model.errors import (
    BrokerUnavailable,
    Conflict,
    DocumentTooLarge,
    Forbidden,
    IndexLoading,
    InvalidInput,
    InvalidParameter,
    MalformedDocument,
    NotCaughtUp,
    NotFound,
    ReplicasBehind,
    ServiceError,
    StoreUnavailable,
)
from upstream.settings import SettingsError
from upstream.store.outage import database_error_text, first_line

#: The exit status of each error class a service raises; every class has its own entry, so a
#: new one needs a decision here (`tests/api/test_error_mapping.py` checks).
EXIT_STATUS: dict[type[ServiceError], int] = {
    ServiceError: 1,
    NotFound: 1,
    InvalidInput: 1,
    # An option the services refuse (a garbled --start): the command was mistyped.
    InvalidParameter: 2,
    MalformedDocument: 1,
    DocumentTooLarge: 1,
    Conflict: 1,
    Forbidden: 1,
    StoreUnavailable: 1,
    NotCaughtUp: 1,
    IndexLoading: 1,
    ReplicasBehind: 1,
    BrokerUnavailable: 1,
}


class CliError(Exception):
    """A failure whose message tells the user everything they need."""


class ParameterError(CliError):
    """An option value the lineage services refuse (a garbled --start): a usage error."""


@contextmanager
def reported_failures(ctx: typer.Context) -> Iterator[None]:
    """Turn any exception from the body into `error: <one line>` and exit status 1."""
    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:
        if debugging(ctx):
            raise
        typer.echo(f"error: {one_line(exc)}", err=True)
        raise typer.Exit(exit_status(exc)) from None


def exit_status(exc: Exception) -> int:
    """2 for a parameter the server or the services refused (the command was mistyped: a
    400 from a server), 1 for everything else."""
    if isinstance(exc, ServiceError):
        return next(EXIT_STATUS[k] for k in type(exc).__mro__ if k in EXIT_STATUS)
    mistyped = isinstance(exc, ParameterError) or (
        isinstance(exc, ApiRejected) and exc.status == 400
    )
    return 2 if mistyped else 1


def one_line(exc: Exception) -> str:
    """The message of `exc` on one line; unexpected errors say how to see more."""
    if isinstance(exc, StoreUnavailable):
        message = f"the database is unavailable: {exc.reason}; retry later"
    elif isinstance(exc, CliError | UpstreamError | ServiceError | SettingsError):
        message = str(exc)
    elif (database := database_error_text(exc)) is not None:
        message = database
    elif isinstance(exc, OSError):
        message = first_line(str(exc))
    else:
        message = f"{type(exc).__name__}: {exc} (run `upstream --debug …` for the traceback)"
    return " ".join(message.split())


def database_failure(action: str, display_url: str, exc: Exception) -> str:
    """One line for a database that cannot be prepared or migrated, with what to try."""
    return (
        f"cannot {action} {display_url}: {one_line(exc)}; check that the database is running "
        "and reachable, and that --db (or UPSTREAM_DB_URL) names it"
    )
