"""The `upstream` command (design §5): serve the API, manage the database, load events, and
look at lineage from a terminal. Options are declared here; the work is in `upstream.commands`.

Every command imports what it needs when it runs: `upstream --version` and `--help` load the
CLI framework and nothing else (a lineage command need not load the ingest service, nor a
server the Kafka client), which `tests/cli/test_cli_startup.py` checks.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from upstream._version import __version__
from upstream.client import DEFAULT_URL
from upstream.commands.state import CliState

if TYPE_CHECKING:
    from rich.console import RenderableType

    from upstream.commands.target import Target
    from upstream.render.graph import Graph
    from upstream.store.engine import Store

app = typer.Typer(
    name="upstream",
    help="Upstream, a data-lineage server. Run `upstream serve` to start it.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
db_app = typer.Typer(
    help="Manage the database: its schema, retention, and lineage derived again from the kept "
    "events. Example: upstream db upgrade --db sqlite:///lineage.db",
    no_args_is_help=True,
)
app.add_typer(db_app, name="db")
delete_app = typer.Typer(
    help="Delete a dataset, a job or a namespace: it leaves lists, search and lineage until an "
    "event names it again. Example: upstream delete dataset warehouse sales.orders",
    no_args_is_help=True,
)
app.add_typer(delete_app, name="delete")
token_app = typer.Typer(
    help="Issue, list and revoke access tokens scoped to namespaces (needs an admin token, "
    "or --db). Example: upstream token create finance-readers --scope 'read:finance/*'",
    no_args_is_help=True,
)
app.add_typer(token_app, name="token")
watch_app = typer.Typer(
    help="Be told when a dataset's lineage changes: subscriptions delivered to a webhook or a "
    "Kafka topic by the server. Example: upstream watch add warehouse sales.orders "
    "--direction upstream --levels 3 --webhook https://hooks.example.com/lineage",
    no_args_is_help=True,
)
app.add_typer(watch_app, name="watch")


def _database(value: str | None) -> str | None:
    """`--db` as a database URL: a plain file path is an SQLite database. A value that is
    neither is one line naming the forms accepted, as a mistyped option (status 2)."""
    if value is None:
        return None
    from upstream.store.database_url import database_url

    try:
        return database_url(value)
    except ValueError as exc:
        typer.echo(f"error: --db: {exc}", err=True)
        raise typer.Exit(2) from None


DbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="The database: a file path (SQLite) or a URL, sqlite:///path or "
        "postgresql+psycopg://user@host/database (default: UPSTREAM_DB_URL, else ./upstream.db).",
        show_default=False,
        callback=_database,
    ),
]
UrlOption = Annotated[
    str,
    typer.Option(
        "--url",
        envvar="UPSTREAM_URL",
        help="The Upstream server to talk to.",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="UPSTREAM_TOKEN",
        help="Bearer token for a server that requires one.",
        show_default=False,
    ),
]
DirectDbOption = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Use this database directly instead of a server: a file path (SQLite) or a URL, "
        "sqlite:///path or postgresql+psycopg://user@host/database.",
        show_default=False,
        callback=_database,
    ),
]


#: The choices of the options, each value its own name (`--direction upstream`).
OutputFormat = StrEnum("OutputFormat", ["table", "json", "dot", "mermaid"])
Direction = StrEnum("Direction", ["both", "upstream", "downstream"])
FieldDirection = StrEnum("FieldDirection", ["incoming", "outgoing", "both"])
Collapse = StrEnum("Collapse", ["access", "run", "component"])
Rollup = StrEnum("Rollup", ["workflow", "jobs"])
OnError = StrEnum("OnError", ["skip", "stop"])


LevelsOption = Annotated[
    int | None, typer.Option(min=1, help="Hops to follow (server default 10).")
]
DirectionOption = Annotated[
    Direction, typer.Option(help="both (CDAP's walk), upstream or downstream.")
]
CollapseOption = Annotated[
    list[Collapse] | None,
    typer.Option(help="Merge relations differing only in this (repeatable)."),
]
RollupOption = Annotated[
    Rollup | None,
    typer.Option(
        help="workflow: show workflows instead of their jobs; jobs: leave temporary datasets "
        "out and link the jobs around them."
    ),
]
AsOfOption = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        help="The lineage as it stood at this time: runs that had started by then, "
        "declarations as they were then (now in --start and --end means this time).",
    ),
]
FormatOption = Annotated[
    OutputFormat,
    typer.Option("--format", "-f", help="table (readable), json, dot (Graphviz) or mermaid."),
]


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(1)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the full traceback when a command fails.")
    ] = False,
) -> None:
    ctx.obj = CliState(debug=debug)
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)


def _target(ctx: typer.Context, url: str, token: str | None, db: str | None) -> Target:
    """The server or database a command works on; naming both on the command line is a
    usage error (an UPSTREAM_URL in the environment simply yields to --db)."""
    from upstream.commands.target import Target

    source = ctx.get_parameter_source("url")
    if db is not None and source is not None and source.name == "COMMANDLINE":
        raise typer.BadParameter("give either --url or --db, not both", ctx, param_hint="--db")
    return Target(url=url, token=token, db=db)


@app.command()
def serve(
    db: DbOption = None,
    host: Annotated[str | None, typer.Option(help="Address to listen on.")] = None,
    port: Annotated[int | None, typer.Option(help="Port to listen on.")] = None,
    workers: Annotated[int | None, typer.Option(help="Worker processes.")] = None,
    publish_to_kafka: Annotated[
        bool | None,
        typer.Option(
            "--publish-to-kafka",
            help="Publish posted OpenLineage events to Kafka (UPSTREAM_KAFKA_BOOTSTRAP_SERVERS, "
            "UPSTREAM_KAFKA_TOPIC) for `upstream consume` to store, answering once Kafka has "
            "them; reads are served as always.",
        ),
    ] = None,
) -> None:
    """Start the API and web UI (migrating the database first).

    Example: upstream serve --db postgresql+psycopg://postgres@127.0.0.1/lineage --workers 4
    """
    from rich.console import Console

    from upstream.api.metrics import multiprocess_directory
    from upstream.commands.failures import database_failure
    from upstream.commands.rebuild import prepare
    from upstream.serving import StartupError, listening_socket, run_server
    from upstream.settings import SettingsError, load_settings
    from upstream.store.engine import Store

    try:
        settings = load_settings(
            db_url=db, host=host, port=port, workers=workers, publish_to_kafka=publish_to_kafka
        )
        sock = listening_socket(settings.host, settings.port)  # a port in use fails first
    except SettingsError as exc:
        raise _fail(f"{exc} (fix it in the environment or the config file)") from None
    except StartupError as exc:
        raise _fail(str(exc)) from None
    # Workers are separate processes that read their settings from the environment.
    os.environ["UPSTREAM_DB_URL"] = settings.db_url
    if settings.publish_to_kafka:
        os.environ["UPSTREAM_PUBLISH_TO_KAFKA"] = "true"
    store = Store(settings.db_url)
    try:
        prepare(store, Console(stderr=True))
    except Exception as exc:
        sock.close()
        raise _fail(database_failure("prepare the database", store.display_url, exc)) from None
    finally:
        store.dispose()
    with multiprocess_directory(settings.workers):
        run_server(settings, sock)


def _on_database(db: str | None, action: str, work: Callable[[Store], str]) -> None:
    """Print what `work` did on the database `--db` (else the settings') names; a database
    that fails is one line saying what to check."""
    from upstream.commands.failures import database_failure
    from upstream.settings import SettingsError, load_settings
    from upstream.store.engine import Store

    try:
        settings = load_settings(db_url=db)
    except SettingsError as exc:
        raise _fail(str(exc)) from None
    store = Store(settings.db_url)
    try:
        typer.echo(work(store))
    except Exception as exc:
        raise _fail(database_failure(action, store.display_url, exc)) from None
    finally:
        store.dispose()


@db_app.command("upgrade")
def db_upgrade(db: DbOption = None) -> None:
    """Apply every pending migration (and derive the lineage again from the kept events
    when the new version derives it differently).

    Example: upstream db upgrade --db sqlite:///lineage.db
    """
    from rich.console import Console

    from upstream.commands.rebuild import prepare, summary
    from upstream.store.migrate import current_revision

    def migrate(store: Store) -> str:
        report = prepare(store, Console(stderr=True))
        done = f"{store.display_url} is at revision {current_revision(store)}"
        return done if report is None else f"{done}\n{summary(report)}"

    _on_database(db, "migrate", migrate)


@db_app.command("rebuild")
def db_rebuild(db: DbOption = None) -> None:
    """Derive all lineage again from the kept raw events (datasets, jobs, runs, relations,
    edges and the flow graph). Run it with no server writing to the database; an
    interrupted rebuild continues where it stopped when run again.

    Example: upstream db rebuild --db sqlite:///lineage.db
    """
    from rich.console import Console

    from upstream.commands.rebuild import rebuild_store, summary
    from upstream.store.migrate import upgrade

    def rebuild(store: Store) -> str:
        upgrade(store)
        return f"{store.display_url}: {summary(rebuild_store(store, Console(stderr=True)))}"

    _on_database(db, "rebuild", rebuild)


@db_app.command("prune")
def db_prune(
    ctx: typer.Context,
    before: Annotated[
        str,
        typer.Option(
            "--before",
            help="Remove runs that ended before this time: ISO-8601, epoch seconds or now-90d.",
            show_default=False,
        ),
    ],
    keep_events: Annotated[
        bool, typer.Option("--keep-events", help="Keep the removed runs' raw events.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only say what would be removed.")
    ] = False,
    db: DbOption = None,
) -> None:
    """Remove runs that ended before a time, with what was derived from them.

    Their raw events go too unless --keep-events; declared lineage and everything still
    referred to stays.

    Example: upstream db prune --before now-90d --dry-run --db sqlite:///lineage.db
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.prune import prune_database
    from upstream.settings import load_settings

    with reported_failures(ctx):
        settings = load_settings(db_url=db)
        typer.echo(
            prune_database(settings.db_url, before, keep_events=keep_events, dry_run=dry_run)
        )


NamespaceArgument = Annotated[str, typer.Argument(help="The namespace.", show_default=False)]


def _delete(
    ctx: typer.Context,
    target: Target,
    kind: Literal["dataset", "job", "namespace"],
    namespace: str,
    name: str | None,
) -> None:
    from upstream.commands.delete import delete_entity
    from upstream.commands.failures import reported_failures

    with reported_failures(ctx):
        typer.echo(delete_entity(target, kind, namespace, name))


@delete_app.command("dataset")
def delete_dataset(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    name: Annotated[str, typer.Argument(help="The dataset's name.", show_default=False)],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Delete a dataset.

    Example: upstream delete dataset postgres://db:5432 sales.orders --token $TOKEN
    """
    _delete(ctx, _target(ctx, url, token, db), "dataset", namespace, name)


@delete_app.command("job")
def delete_job(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    name: Annotated[str, typer.Argument(help="The job's name.", show_default=False)],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Delete a job.

    Example: upstream delete job airflow daily_orders.load --db sqlite:///lineage.db
    """
    _delete(ctx, _target(ctx, url, token, db), "job", namespace, name)


@delete_app.command("namespace")
def delete_namespace(
    ctx: typer.Context,
    namespace: NamespaceArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Delete a namespace with every dataset and job in it.

    Example: upstream delete namespace staging --token $TOKEN
    """
    _delete(ctx, _target(ctx, url, token, db), "namespace", namespace, None)


def _print_json(document: object) -> None:
    import json

    typer.echo(json.dumps(document, indent=2, ensure_ascii=False))


@token_app.command("create")
def token_create(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Who or what uses the token (a team, a pipeline).")],
    scope: Annotated[
        list[str],
        typer.Option(
            "--scope",
            help="read:<namespace pattern>, write:<namespace pattern> (implies read) or admin; "
            "a pattern is a namespace or a prefix ending in * (repeatable).",
        ),
    ],
    expires: Annotated[
        str | None,
        typer.Option(help="When the token stops working: now+90d, or an ISO-8601 time."),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Issue a token; prints it with its secret, which is shown this once.

    Example: upstream token create dbt --scope 'write:postgres://wh:5432' --expires now+90d
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.tokens import issue

    with reported_failures(ctx):
        _print_json(issue(_target(ctx, url, token, db), name, scope, expires))


@token_app.command("list")
def token_list(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """List the issued tokens (never their secrets), revoked and expired ones too."""
    from upstream.commands.failures import reported_failures
    from upstream.commands.tokens import listed

    with reported_failures(ctx):
        _print_json(listed(_target(ctx, url, token, db)))


@token_app.command("revoke")
def token_revoke(
    ctx: typer.Context,
    token_id: Annotated[str, typer.Argument(help="The id `token list` shows.")],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Revoke a token: every server refuses it from the next request on."""
    from upstream.commands.failures import reported_failures
    from upstream.commands.tokens import revoked

    with reported_failures(ctx):
        _print_json(revoked(_target(ctx, url, token, db), token_id))


@app.command()
def ingest(
    ctx: typer.Context,
    files: Annotated[
        list[str],
        typer.Argument(
            help="Files of OpenLineage events: one JSON event, a JSON array, or NDJSON. "
            "`-` reads standard input.",
            metavar="FILE",
            show_default=False,
        ),
    ],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
    on_error: Annotated[
        OnError,
        typer.Option(
            "--on-error",
            help="stop: end at the first bad event (the events before it are stored); "
            "skip: report bad events and store all the others.",
        ),
    ] = OnError.stop,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, max=5000, help="Events sent per request.")
    ] = 500,
) -> None:
    """Load OpenLineage events into a server or straight into a database.

    Each bad event is reported as FILE:LINE: what is wrong. The exit status is 1 when any
    event was refused or unreadable, even with --on-error skip.

    Examples:

    \b
      upstream ingest events.ndjson --url http://lineage.example.com:5000 --token $TOKEN
      cat run.json | upstream ingest - --db sqlite:///lineage.db --on-error skip
    """
    from rich.console import Console

    from upstream.commands.failures import reported_failures
    from upstream.commands.ingest import STDIN
    from upstream.commands.ingest import ingest as run_ingest
    from upstream.commands.target import event_sink

    for name in files:
        if name != STDIN and not Path(name).is_file():
            raise typer.BadParameter(f"no file {name}", ctx, param_hint="FILES")
    target = _target(ctx, url, token, db)
    with reported_failures(ctx):
        with event_sink(target) as sink:
            report = run_ingest(
                files,
                sink,
                batch_size=batch_size,
                stop_on_error=on_error is OnError.stop,
                console=Console(stderr=True),
                stdin=typer.get_text_stream("stdin"),
            )
        typer.echo(report.summary())
        if report.failure is not None:
            raise report.failure
        if report.failed:
            raise typer.Exit(1)


@app.command()
def consume(
    ctx: typer.Context,
    bootstrap_servers: Annotated[
        str | None,
        typer.Option(
            "--bootstrap-servers",
            help="Kafka brokers, host:port[,host:port…] "
            "(default: UPSTREAM_KAFKA_BOOTSTRAP_SERVERS).",
            show_default=False,
        ),
    ] = None,
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic",
            help="Topic the OpenLineage producers write to (default: UPSTREAM_KAFKA_TOPIC, "
            "else openlineage).",
            show_default=False,
        ),
    ] = None,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            help="Consumer group; consumers of one group share the partitions (default: "
            "UPSTREAM_KAFKA_GROUP, else upstream).",
            show_default=False,
        ),
    ] = None,
    dead_letter_topic: Annotated[
        str | None,
        typer.Option(
            "--dead-letter-topic",
            help="Copy messages that cannot be stored to this topic, with the reason in a "
            "header (default: UPSTREAM_KAFKA_DEAD_LETTER_TOPIC, else none).",
            show_default=False,
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            min=1,
            max=100_000,
            help="Most messages stored per transaction (default: UPSTREAM_KAFKA_BATCH_MESSAGES, "
            "else 500).",
            show_default=False,
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port",
            min=0,
            max=65535,
            help="Serve Prometheus metrics on this port (at /metrics on UPSTREAM_HOST).",
            show_default=False,
        ),
    ] = None,
    db: DbOption = None,
) -> None:
    """Read OpenLineage events from a Kafka topic into the database, until stopped.

    Reads what the OpenLineage client's Kafka transport writes. Offsets are committed only
    after the events are stored, so a stopped or killed consumer loses nothing, and an event
    read twice is stored once. Run several (same --group) to share the topic's partitions.

    Examples:

    \b
      upstream consume --bootstrap-servers kafka:9092 --db postgresql+psycopg://db/lineage
      upstream consume --bootstrap-servers kafka:9092 --dead-letter-topic openlineage.refused
    """
    from rich.console import Console

    from upstream.commands.consume import consume as run_consume
    from upstream.commands.failures import reported_failures
    from upstream.kafka.progress import progress_line
    from upstream.settings import SettingsError, load_settings

    try:
        settings = load_settings(
            db_url=db,
            kafka_bootstrap_servers=bootstrap_servers,
            kafka_topic=topic,
            kafka_group=group,
            kafka_dead_letter_topic=dead_letter_topic,
            kafka_batch_messages=batch_size,
        )
    except SettingsError as exc:
        raise _fail(str(exc)) from None
    with reported_failures(ctx):
        totals = run_consume(settings, Console(stderr=True), metrics_port)
        typer.echo(f"stopped: {progress_line(totals)}", err=True)


@app.command()
def lineage(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="The dataset's namespace.")],
    dataset: Annotated[str, typer.Argument(help="The dataset's name.")],
    levels: LevelsOption = None,
    direction: DirectionOption = Direction.both,
    start: Annotated[
        str | None,
        typer.Option(help="Window start: epoch seconds, ISO-8601, now-7d… (default now-7d)."),
    ] = None,
    end: Annotated[str | None, typer.Option(help="Window end (default now).")] = None,
    collapse: CollapseOption = None,
    rollup: RollupOption = None,
    as_of: AsOfOption = None,
    owners: Annotated[
        bool, typer.Option("--owners", help="Show each dataset's and job's owners.")
    ] = False,
    output_format: FormatOption = OutputFormat.table,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Show where a dataset's data comes from and goes to (the datasets and jobs around it).

    Examples:

    \b
      upstream lineage default EmpAgg --rollup workflow --collapse run --levels 2
      upstream lineage myns mytableds --direction upstream --format dot | dot -Tsvg > g.svg
      upstream lineage myns mytableds --as-of 2026-11-24T09:00:00Z
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.commands.window_hint import window_hint
    from upstream.query.lineage_query import LineageQuery
    from upstream.render.graph import dataset_lineage_graph
    from upstream.render.tables import dataset_lineage_tables

    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        query = LineageQuery(
            start=start,
            end=end,
            levels=_text_of(levels),
            direction=direction.value,
            collapse=tuple(c.value for c in collapse or []),
            rollup=rollup.value if rollup else None,
            as_of=as_of,
            include=("owners",) if owners else (),
        )
        response = reader.dataset_lineage(namespace, dataset, query)
        _show(
            response,
            output_format,
            table=lambda: dataset_lineage_tables(response, namespace, dataset),
            graph=lambda: dataset_lineage_graph(response, (namespace, dataset)),
        )
        if hint := window_hint(response, namespace, dataset):
            typer.echo(hint, err=True)


@app.command()
def diff(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="The dataset's namespace.")],
    dataset: Annotated[str, typer.Argument(help="The dataset's name.")],
    from_window: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The earlier window, START..END (default: the window of the same length "
            "just before --to).",
        ),
    ] = None,
    to_window: Annotated[
        str | None,
        typer.Option("--to", help="The later window, START..END (default now-7d..now)."),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option(
            "--as-of",
            help="Compare two times instead: the lineage as it stood then (default now)…",
        ),
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(
            help="…against the lineage as it stood at this earlier time (default "
            "seven days before --as-of)."
        ),
    ] = None,
    start: Annotated[
        str | None, typer.Option(help="With --as-of/--against: each side's window start.")
    ] = None,
    end: Annotated[
        str | None, typer.Option(help="With --as-of/--against: each side's window end.")
    ] = None,
    levels: LevelsOption = None,
    direction: DirectionOption = Direction.both,
    collapse: CollapseOption = None,
    rollup: RollupOption = None,
    output_format: FormatOption = OutputFormat.table,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Show what changed around a dataset: relations and field edges added and removed, and
    the runs of the ones kept. Graphs draw added edges green and removed ones red.

    Examples:

    \b
      upstream diff myns orders --direction upstream
      upstream diff myns orders --from now-14d..now-7d --to now-7d..now --format json
      upstream diff myns orders --as-of now --against now-30d --format mermaid
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.query.lineage_query import DiffQuery
    from upstream.render.graph import lineage_diff_graph
    from upstream.render.tables import lineage_diff_tables

    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        query = DiffQuery(
            from_window=from_window,
            to_window=to_window,
            as_of=as_of,
            against=against,
            start=start,
            end=end,
            levels=_text_of(levels),
            direction=direction.value,
            collapse=tuple(c.value for c in collapse or []),
            rollup=rollup.value if rollup else None,
        )
        response = reader.lineage_diff(namespace, dataset, query)
        _show(
            response,
            output_format,
            table=lambda: lineage_diff_tables(response, namespace, dataset),
            graph=lambda: lineage_diff_graph(response, (namespace, dataset)),
        )


@app.command("run-lineage")
def run_lineage(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="The run's id (a UUID).")],
    direction: Annotated[
        Direction, typer.Option(help="upstream, downstream or both.")
    ] = Direction.both,
    levels: Annotated[
        int | None, typer.Option(min=1, help="Runs to step through (server default 5).")
    ] = None,
    as_of: AsOfOption = None,
    output_format: FormatOption = OutputFormat.table,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Show which run of which job wrote each dataset version a run read, and which runs
    read what it wrote.

    Examples:

    \b
      upstream run-lineage bcef9942-cb5c-476a-995b-3e5ca14aff27 --direction upstream
      upstream run-lineage 155dbf08-c4c5-43e6-bb3a-8095c4ba59b8 --format dot | dot -Tsvg > r.svg
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.query.lineage_query import RunQuery
    from upstream.render.graph import run_lineage_graph
    from upstream.render.tables import run_lineage_tables

    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        query = RunQuery(direction=direction.value, levels=_text_of(levels), as_of=as_of)
        response = reader.run_lineage(run_id, query)
        _show(
            response,
            output_format,
            table=lambda: run_lineage_tables(response),
            graph=lambda: run_lineage_graph(response),
        )


MapFormat = StrEnum("MapFormat", ["table", "json"])


@app.command("map")
def estate_map(
    ctx: typer.Context,
    level: Annotated[
        int, typer.Option(min=1, help="1 groups by namespace, 2 by the next container, and so on.")
    ] = 1,
    within: Annotated[
        str | None, typer.Option(help="Only inside this group (a key a map printed).")
    ] = None,
    output_format: Annotated[
        MapFormat, typer.Option("--format", "-f", help="table or json.")
    ] = MapFormat.table,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Show the datasets grouped by their container (namespace, database, schema…), with the
    data flows between groups.

    Examples:

    \b
      upstream map --level 2
      upstream map --level 3 --within 'postgres://db:5432/analytics'
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.query.lineage_query import MapQuery
    from upstream.render.tables import hierarchy_map_table

    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        response = reader.hierarchy_map(MapQuery(level=level, within=within))
        shown = OutputFormat.json if output_format is MapFormat.json else OutputFormat.table
        _show(response, shown, table=lambda: hierarchy_map_table(response), graph=None)


ImpactFormat = StrEnum("ImpactFormat", ["table", "json", "csv"])


@app.command()
def impact(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="The dataset's namespace.")],
    dataset: Annotated[str, typer.Argument(help="The dataset's name.")],
    field: Annotated[
        str | None, typer.Option(help="Only what is downstream of this field of the dataset.")
    ] = None,
    levels: LevelsOption = None,
    start: Annotated[str | None, typer.Option(help="Window start (default now-7d).")] = None,
    end: Annotated[str | None, typer.Option(help="Window end (default now).")] = None,
    as_of: AsOfOption = None,
    output_format: Annotated[
        ImpactFormat, typer.Option("--format", "-f", help="table, json or csv.")
    ] = ImpactFormat.table,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """List every dataset and field downstream of a dataset (or a field): hops, the jobs in
    between, owners, and the latest run that wrote it.

    Examples:

    \b
      upstream impact myns landing.orders --levels 3
      upstream impact myns landing.orders --field email --format csv > impact.csv
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.query.lineage_query import ImpactQuery
    from upstream.render.tables import impact_table

    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        query = ImpactQuery(start=start, end=end, levels=_text_of(levels), as_of=as_of)
        response = reader.impact(namespace, dataset, query, field=field)
        if output_format is ImpactFormat.csv:
            from upstream.query.impact import csv_text

            typer.echo(csv_text(response), nl=False)
            return
        shown = OutputFormat.json if output_format is ImpactFormat.json else OutputFormat.table
        _show(response, shown, table=lambda: impact_table(response), graph=None)


@app.command("field-lineage")
def field_lineage(
    ctx: typer.Context,
    namespace: Annotated[str, typer.Argument(help="The dataset's namespace.")],
    dataset: Annotated[str, typer.Argument(help="The dataset's name.")],
    field: Annotated[str, typer.Argument(help="The field's name.")],
    direction: Annotated[
        FieldDirection, typer.Option(help="incoming, outgoing or both.")
    ] = FieldDirection.both,
    levels: Annotated[
        int | None, typer.Option(min=1, help="Hops across datasets (server default 1).")
    ] = None,
    paths: Annotated[
        bool,
        typer.Option(
            "--paths", help="Show instead the operations that made the field, path by path."
        ),
    ] = False,
    start: Annotated[str | None, typer.Option(help="Window start (default now-7d).")] = None,
    end: Annotated[str | None, typer.Option(help="Window end (default now).")] = None,
    output_format: FormatOption = OutputFormat.table,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Show which fields of which datasets a field comes from and flows to.

    Examples:

    \b
      upstream field-lineage myns mytableds uniqueId --direction incoming
      upstream field-lineage myns mytableds uniqueId --paths
      upstream field-lineage myns user_data body --direction outgoing --levels 3 --format mermaid
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.query.lineage_query import FieldLineageQuery
    from upstream.render.graph import field_summary_graph
    from upstream.render.tables import field_paths_tables, field_summary_tables

    if paths and output_format not in (OutputFormat.table, OutputFormat.json):
        raise typer.BadParameter("--paths prints a table or json", ctx, param_hint="--format")
    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        if paths:
            asked = FieldLineageQuery(start=start, end=end)
            response = reader.field_lineage(namespace, dataset, field, asked)
            _show(
                response,
                output_format,
                table=lambda: field_paths_tables(response, namespace, dataset),
                graph=None,
            )
            return
        query = FieldLineageQuery(
            start=start, end=end, levels=_text_of(levels), direction=direction.value
        )
        response = reader.field_lineage_summary(namespace, dataset, field, query)
        _show(
            response,
            output_format,
            table=lambda: field_summary_tables(response, namespace, dataset, field),
            graph=lambda: field_summary_graph(response, namespace, dataset, field),
        )


@app.command()
def export(
    ctx: typer.Context,
    namespace: Annotated[
        str | None, typer.Argument(help="With DATASET: export only this dataset's neighbourhood.")
    ] = None,
    dataset: Annotated[str | None, typer.Argument(help="The dataset at the centre.")] = None,
    output_format: Annotated[
        OutputFormat,
        typer.Option("--format", "-f", help="json, dot (Graphviz), mermaid, or table."),
    ] = OutputFormat.json,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write to this file instead of standard output."),
    ] = None,
    levels: Annotated[int | None, typer.Option(min=1, help="Neighbourhood: hops.")] = None,
    direction: Annotated[
        Direction, typer.Option(help="Neighbourhood: direction.")
    ] = Direction.both,
    start: Annotated[str | None, typer.Option(help="Neighbourhood: window start.")] = None,
    end: Annotated[str | None, typer.Option(help="Neighbourhood: window end.")] = None,
    rollup: Annotated[Rollup | None, typer.Option(help="Neighbourhood: roll up.")] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Export the whole lineage graph, or one dataset's neighbourhood, as JSON, DOT or Mermaid.

    The whole graph has every dataset, and an edge per data flow labelled with the jobs that
    made it.

    Examples:

    \b
      upstream export --db sqlite:///lineage.db --format dot -o lineage.dot
      upstream export default EmpAgg --levels 3 --format mermaid -o empagg.mmd
    """
    from upstream.commands.failures import reported_failures
    from upstream.commands.target import lineage_reader
    from upstream.commands.window_hint import window_hint
    from upstream.query.lineage_query import LineageQuery
    from upstream.render.graph import dataset_lineage_graph, whole_graph
    from upstream.render.tables import dataset_lineage_tables, graph_tables

    if (namespace is None) != (dataset is None):
        raise typer.BadParameter(
            "give both NAMESPACE and DATASET, or neither", ctx, param_hint="DATASET"
        )
    target = _target(ctx, url, token, db)
    with reported_failures(ctx), lineage_reader(target) as reader:
        if namespace is None or dataset is None:
            response = reader.lineage_graph()
            text = _text(
                response,
                output_format,
                table=lambda: graph_tables(response),
                graph=lambda: whole_graph(response),
            )
        else:
            query = LineageQuery(
                start=start,
                end=end,
                levels=_text_of(levels),
                direction=direction.value,
                rollup=rollup.value if rollup else None,
            )
            response = reader.dataset_lineage(namespace, dataset, query)
            focus = (namespace, dataset)
            text = _text(
                response,
                output_format,
                table=lambda: dataset_lineage_tables(response, *focus),
                graph=lambda: dataset_lineage_graph(response, focus),
            )
            if hint := window_hint(response, namespace, dataset):
                typer.echo(hint, err=True)
        if output is None:
            typer.echo(text, nl=False)
        else:
            output.write_text(text, encoding="utf-8")
            typer.echo(f"wrote {output}", err=True)


@app.command()
def demo(
    ctx: typer.Context,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    db: DirectDbOption = None,
) -> None:
    """Load the three example scenarios and print where to look at them.

    CDAP's field-operations example (ETLMapReduce makes myns/mytableds from myns/user_data),
    CDAP's EmployeePipe workflow with its temporary dataset (namespace default), and the
    build_summaries job whose lineage facet names its 2 real edges.

    Examples:

    \b
      upstream demo --url http://127.0.0.1:5000
      upstream demo --db sqlite:///demo.db
    """
    from upstream.commands.demo import load_demo
    from upstream.commands.failures import reported_failures

    target = _target(ctx, url, token, db)
    with reported_failures(ctx):
        typer.echo(load_demo(target))


def _text_of(levels: int | None) -> str | None:
    """`--levels` as the query parameter it becomes (Typer has checked it is a number)."""
    return None if levels is None else str(levels)


TableOf = Callable[[], "RenderableType"]
GraphOf = Callable[[], "Graph"]


def _show(
    response: Mapping[str, Any],
    output_format: OutputFormat,
    *,
    table: TableOf,
    graph: GraphOf | None,
) -> None:
    """Print a response: tables through Rich (colours only on a terminal), the text formats
    verbatim."""
    from rich.console import Console

    if output_format is OutputFormat.table:
        Console().print(table())
        return
    typer.echo(_text(response, output_format, table=table, graph=graph), nl=False)


def _text(
    response: Mapping[str, Any],
    output_format: OutputFormat,
    *,
    table: TableOf,
    graph: GraphOf | None,
) -> str:
    """A response as text: JSON as the API answers it, a drawn graph, or plain tables (for a
    file written with `export -o`)."""
    from rich.console import Console

    from upstream.commands.failures import CliError
    from upstream.render.dot import to_dot
    from upstream.render.mermaid import to_mermaid

    if output_format is OutputFormat.json:
        return json.dumps(response, indent=2, ensure_ascii=False) + "\n"
    if output_format is OutputFormat.table:
        buffer = io.StringIO()
        Console(file=buffer, width=120, color_system=None).print(table())
        return buffer.getvalue()
    if graph is None:
        raise CliError(f"this answer cannot be drawn as {output_format.value}")
    drawn = graph()
    return to_dot(drawn) if output_format is OutputFormat.dot else to_mermaid(drawn)


def main() -> None:
    """Entry point of the `upstream` command. Its walks and ingests build as many objects
    as the server's, so the collector is set as the server sets it."""
    from upstream.collector import tune_collector

    tune_collector()
    try:
        app()
    except KeyboardInterrupt:
        sys.exit(130)


SubscriptionArgument = Annotated[
    str, typer.Argument(help="The subscription's id.", show_default=False)
]


def _watching(
    ctx: typer.Context, work: Callable[[Target], str], url: str, token: str | None
) -> None:
    from upstream.commands.failures import reported_failures

    with reported_failures(ctx):
        typer.echo(work(_target(ctx, url, token, None)))


@watch_app.command("add")
def watch_add(
    ctx: typer.Context,
    namespace: Annotated[
        str | None,
        typer.Argument(
            help="The namespace (alone: watch every dataset of it).", show_default=False
        ),
    ] = None,
    dataset: Annotated[
        str | None, typer.Argument(help="The dataset to watch.", show_default=False)
    ] = None,
    field: Annotated[
        str | None, typer.Option(help="Watch this field of the dataset.", show_default=False)
    ] = None,
    tag: Annotated[
        str | None,
        typer.Option(help="Watch every field carrying this tag instead.", show_default=False),
    ] = None,
    webhook: Annotated[
        str | None, typer.Option(help="Deliver to this http(s) URL.", show_default=False)
    ] = None,
    secret: Annotated[
        str | None,
        typer.Option(
            help="The webhook's signing secret (16 characters or more); the server makes one "
            "when none is given, and shows it once.",
            show_default=False,
        ),
    ] = None,
    kafka_topic: Annotated[
        str | None,
        typer.Option(
            help="Deliver to this topic of the server's Kafka brokers instead.", show_default=False
        ),
    ] = None,
    direction: Annotated[str, typer.Option(help="upstream, downstream or both.")] = "downstream",
    levels: Annotated[int, typer.Option(help="How many levels of lineage to watch.")] = 1,
    changes: Annotated[
        str | None,
        typer.Option(
            help="Kinds of change, comma-separated (relation_added, relation_removed, "
            "field_edges_changed, schema_break, deleted, revived, run_failed); default all "
            "those told for what is watched.",
            show_default=False,
        ),
    ] = None,
    active_days: Annotated[
        int, typer.Option(help="A relation is watched while it had a run in this many days.")
    ] = 30,
    digest: Annotated[
        str | None,
        typer.Option(
            help="Send the changes of each interval as one notification: seconds, or an ISO "
            "8601 duration such as PT1H.",
            show_default=False,
        ),
    ] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Watch the lineage of a dataset, a field, a tag or a namespace; prints the
    subscription, with its secret.

    Example: upstream watch add warehouse dashboards.revenue --direction upstream --levels 3
    --webhook https://hooks.example.com/lineage
    """
    from upstream.commands.watch import subscription_body, watch

    if (webhook is None) == (kafka_topic is None):
        raise typer.BadParameter(
            "give one of --webhook or --kafka-topic", ctx, param_hint="--webhook"
        )
    if (tag is None) == (namespace is None):
        raise typer.BadParameter(
            "give a namespace (and a dataset) or --tag", ctx, param_hint="NAMESPACE"
        )
    if field is not None and dataset is None:
        raise typer.BadParameter("--field needs a dataset", ctx, param_hint="--field")
    body = subscription_body(
        namespace,
        dataset,
        field=field,
        tag=tag,
        webhook=webhook,
        secret=secret,
        kafka_topic=kafka_topic,
        direction=direction,
        levels=levels,
        changes=changes,
        active_days=active_days,
        digest=digest,
    )
    _watching(ctx, lambda target: watch(target, body), url, token)


@watch_app.command("list")
def watch_list(ctx: typer.Context, url: UrlOption = DEFAULT_URL, token: TokenOption = None) -> None:
    """List the server's subscriptions (JSON)."""
    from upstream.commands.watch import list_subscriptions

    _watching(ctx, list_subscriptions, url, token)


@watch_app.command("stop")
def watch_stop(
    ctx: typer.Context,
    subscription: SubscriptionArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Stop a subscription; its undelivered notifications are dropped."""
    from upstream.commands.watch import stop

    _watching(ctx, lambda target: stop(target, subscription), url, token)


@watch_app.command("deliveries")
def watch_deliveries(
    ctx: typer.Context,
    subscription: SubscriptionArgument,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """A subscription's notifications, newest first, with every delivery attempt (JSON)."""
    from upstream.commands.watch import deliveries

    _watching(ctx, lambda target: deliveries(target, subscription), url, token)


@watch_app.command("redeliver")
def watch_redeliver(
    ctx: typer.Context,
    subscription: SubscriptionArgument,
    delivery: Annotated[str, typer.Argument(help="The notification's id.", show_default=False)],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Send a notification again, a dead one too."""
    from upstream.commands.watch import redeliver

    _watching(ctx, lambda target: redeliver(target, subscription, delivery), url, token)
