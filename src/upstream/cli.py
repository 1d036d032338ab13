"""The `upstream` command (DESIGN §5): serve the API, manage the database."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from upstream import __version__
from upstream.settings import SettingsError, load_settings

app = typer.Typer(
    name="upstream",
    help="Upstream, a data-lineage server. Run `upstream serve` to start it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
db_app = typer.Typer(help="Manage the database schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")

DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL (default: UPSTREAM_DB_URL, else ./upstream.db).",
        show_default=False,
    ),
]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.command()
def serve(
    db: DbOption = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes.")] = None,
) -> None:
    """Start the API and web UI (migrating the database first).

    Example: upstream serve --db postgresql+psycopg://postgres@127.0.0.1/lineage --workers 4
    """
    import uvicorn

    from upstream.store.engine import Store
    from upstream.store.migrate import upgrade

    try:
        settings = load_settings(db_url=db, host=host, port=port, workers=workers)
    except SettingsError as exc:
        raise _fail(str(exc)) from None
    # Workers are separate processes that read their settings from the environment.
    os.environ["UPSTREAM_DB_URL"] = settings.db_url
    store = Store(settings.db_url)
    try:
        upgrade(store)
    except Exception as exc:
        raise _fail(f"cannot prepare the database {store.display_url}: {exc}") from None
    finally:
        store.dispose()
    uvicorn.run(
        "upstream.api.app:create_app",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level="info",
        timeout_graceful_shutdown=30,
    )


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Apply every pending migration.

    Example: upstream db upgrade --db sqlite:///lineage.db
    """
    from upstream.store.engine import Store
    from upstream.store.migrate import current_revision, upgrade

    try:
        settings = load_settings(db_url=db)
    except SettingsError as exc:
        raise _fail(str(exc)) from None
    store = Store(settings.db_url)
    try:
        upgrade(store)
        typer.echo(f"{store.display_url} is at revision {current_revision(store)}")
    except Exception as exc:
        raise _fail(f"cannot migrate {store.display_url}: {exc}") from None
    finally:
        store.dispose()


def main() -> None:
    """Entry point of the `upstream` command."""
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)
