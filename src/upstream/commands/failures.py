"""How a command fails: one line on stderr and exit status 1; the traceback only with
`upstream --debug`. Usage errors stay Typer's (exit status 2)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import typer

from upstream.client.http import ApiRejected, UpstreamError
from upstream.model.errors import InvalidInput
from upstream.settings import SettingsError
from upstream.store.outage import database_error_text, first_line


class CliError(Exception):
    """A failure whose message tells the user everything they need."""


class ParameterError(CliError):
    """An option value the lineage services refuse (a garbled --start): a usage error."""


@dataclass(frozen=True)
class CliState:
    """Global options, kept on the root context for every command."""

    debug: bool = False


def debugging(ctx: typer.Context) -> bool:
    state = ctx.find_root().obj
    return isinstance(state, CliState) and state.debug


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
        raise typer.Exit(2 if is_usage_error(exc) else 1) from None


def is_usage_error(exc: Exception) -> bool:
    """A parameter the server or the services refused: the command was mistyped (400)."""
    return isinstance(exc, ParameterError) or (isinstance(exc, ApiRejected) and exc.status == 400)


def one_line(exc: Exception) -> str:
    """The message of `exc` on one line; unexpected errors say how to see more."""
    if isinstance(exc, CliError | UpstreamError | InvalidInput | SettingsError):
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
