"""One settings object for the whole server (design §5).

Read from environment variables with the `UPSTREAM_` prefix, or from a TOML config file named
by `UPSTREAM_CONFIG`; the environment wins over the file. Invalid values stop the start with a
message naming the setting.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from upstream.model.timeexpr import parse_duration
from upstream.store.database_url import database_url

DEFAULT_DB_URL = "sqlite:///./upstream.db"
#: Token roles, weakest first; each implies the ones before it (design §5).
TOKEN_ROLES = ("read", "write", "admin")
HASHED = "sha256:"


class SettingsError(ValueError):
    """A setting is invalid; the message names it."""


def _token_entries(value: Any) -> Any:
    """`role:token` pairs, comma-separated in UPSTREAM_TOKENS or a list in the config file."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _hash_tokens(entries: tuple[str, ...]) -> tuple[str, ...]:
    """Check each `role:token` pair and keep only `role:sha256:<hex>`, so the settings object
    (which may be printed or logged) never holds a usable secret. A token already given as
    `sha256:<64 hex digits>` is kept as it is. Messages name the entry, never the token."""
    hashed: dict[str, str] = {}
    for number, entry in enumerate(entries, start=1):
        role, sep, secret = entry.partition(":")
        role, secret = role.strip().lower(), secret.strip()
        if not sep or not secret:
            raise ValueError(f"entry {number} is not a role:token pair")
        if role not in TOKEN_ROLES:
            raise ValueError(
                f"entry {number} has the unknown role {role!r} (use {', '.join(TOKEN_ROLES)})"
            )
        digest = secret.removeprefix(HASHED).lower()
        if not secret.startswith(HASHED):
            digest = hashlib.sha256(secret.encode("utf-8")).hexdigest()
        elif len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"entry {number}: a hashed token is sha256: and 64 hex digits")
        if digest in hashed:
            raise ValueError(f"entry {number} repeats the token of an earlier entry")
        hashed[digest] = role
    return tuple(f"{role}:{HASHED}{digest}" for digest, role in hashed.items())


def _url_list(value: Any) -> Any:
    """Database URLs, comma-separated in the environment or a list in the config file."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


ReadUrls = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_url_list)]

Tokens = Annotated[
    tuple[str, ...], NoDecode, BeforeValidator(_token_entries), AfterValidator(_hash_tokens)
]


class Settings(BaseSettings):
    """Every knob of the server. Each field's description is its documentation."""

    model_config = SettingsConfigDict(
        env_prefix="UPSTREAM_", extra="forbid", frozen=True, hide_input_in_errors=True
    )

    db_url: str = Field(
        DEFAULT_DB_URL,
        description="The store: a file path (an SQLite database), or a URL, sqlite:///path or "
        "postgresql+psycopg://user@host:5432/database.",
    )
    read_database_url: ReadUrls = Field(
        (),
        description="PostgreSQL streaming replicas of db_url to read from, comma-separated, "
        "tried in order: queries and the lineage index read from the first that lags at most "
        "max_replica_lag; writes, migrations and locks stay on db_url. Empty: everything on "
        "db_url.",
    )
    max_replica_lag: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds a read replica may lag behind db_url (how long ago the oldest "
        "write it has not replayed was committed) and still be read from.",
    )
    replica_lag_fallback: Literal["primary", "unavailable"] = Field(
        "primary",
        description="What reads do when every read replica lags more than max_replica_lag: "
        "primary reads from db_url; unavailable answers 503 with Retry-After (and /ready "
        "says not ready), keeping reads off the primary.",
    )
    replica_probe_timeout: float = Field(
        2.0,
        gt=0,
        le=300,
        description="Seconds a measurement of a read replica's lag waits for the replica (and "
        "db_url) to answer. A replica that does not answer in time is not read from until it "
        "answers again and has replayed what db_url had; raise it where a busy machine or "
        "network can delay a trivial query by that long.",
    )
    host: str = Field("127.0.0.1", description="Address `upstream serve` listens on.")
    port: int = Field(5000, ge=0, le=65535, description="Port `upstream serve` listens on.")
    workers: int = Field(1, ge=1, le=64, description="Number of server worker processes.")
    max_levels: int = Field(
        100, ge=1, description="Largest `levels`/`depth` a lineage query may ask for."
    )
    max_body_bytes: int = Field(
        10_000_000, ge=1024, description="Largest request body, after gzip inflation, in bytes."
    )
    max_batch_events: int = Field(
        5_000, ge=1, description="Most events accepted in one JSON array posted to the API."
    )
    max_event_values: int = Field(
        200_000,
        ge=100,
        description="Most JSON values (objects, arrays, strings, numbers) one posted event may "
        "hold; a larger event is refused with 413, and a body that could parse into millions "
        "of objects is refused before it is parsed.",
    )
    max_lineage_nodes: int = Field(
        5_000,
        ge=1,
        description="Most nodes a lineage response holds; a larger result is cut and says "
        '"truncated": true.',
    )
    max_lineage_relations: int = Field(
        20_000,
        ge=1,
        description="Most relations a dataset lineage response holds (before collapsing); a "
        'larger result keeps the nearest levels and says "truncated": true with how many '
        "nodes and relations were left out.",
    )
    db_pool_size: int = Field(
        5, ge=1, description="Connections each server process keeps open to PostgreSQL."
    )
    db_connect_timeout: float = Field(
        5.0,
        gt=0,
        le=600,
        description="Seconds to wait for a connection to the database (PostgreSQL), and for a "
        "pooled connection's check that it still answers; longer is a 503.",
    )
    db_pool_timeout: float = Field(
        5.0,
        gt=0,
        le=600,
        description="Seconds a request waits for a free database connection of its process "
        "when all are in use (at most the statement timeout); longer is a 503.",
    )
    db_statement_timeout: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="Seconds one database statement may run, and a request's database work "
        "in all (waiting for a connection, opening it, a post's wait for the writes before "
        "it, every statement); longer is a 503, also when the database stops answering "
        "altogether.",
    )
    db_lock_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds a statement waits for a lock another transaction holds; longer "
        "is a 503 (writers then retry, so nothing acknowledged is lost).",
    )
    client_timeout: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="Seconds a client has to send a request's headers, and to start its body; "
        "a connection that sends nothing for this long before a request is closed.",
    )
    min_upload_rate: int = Field(
        10_000,
        ge=1,
        description="Least average speed, in bytes per second, of a request body after the "
        "first client_timeout seconds; a slower upload is answered 408 and closed.",
    )
    worker_healthcheck_timeout: int = Field(
        60,
        ge=1,
        le=3600,
        description="With several workers, seconds a worker may take to answer the "
        "supervisor's check that it is alive before it is restarted (a worker busy with a "
        "large batch on a loaded machine answers late).",
    )
    tokens: Tokens = Field(
        (),
        description="Access tokens as role:token pairs, comma-separated (write:s3cret,read:l00k)"
        "; roles read, write (implies read) and admin (implies both). A token may be given "
        "hashed as role:sha256:<hex>. With none the server is open to anyone who reaches it.",
    )
    kafka_bootstrap_servers: str = Field(
        "",
        description="Kafka brokers to read OpenLineage events from, as host:port pairs, "
        "comma-separated (what the producers' OpenLineage `transport: kafka` names as "
        "`bootstrap.servers`).",
    )
    kafka_topic: str = Field(
        "openlineage",
        min_length=1,
        description="Kafka topic the OpenLineage producers write to.",
    )
    kafka_group: str = Field(
        "upstream",
        min_length=1,
        description="Kafka consumer group; every consumer of one group shares the topic's "
        "partitions, so run as many as the topic has partitions to read in parallel.",
    )
    kafka_dead_letter_topic: str = Field(
        "",
        description="Kafka topic that receives a copy of every message that cannot be stored, "
        "with the reason in its upstream.error header; empty: refused messages are only "
        "logged and counted.",
    )
    kafka_batch_messages: int = Field(
        500,
        ge=1,
        le=100_000,
        description="Most Kafka messages stored in one transaction, before their offsets are "
        "committed.",
    )
    kafka_consumers: int = Field(
        0,
        ge=0,
        le=64,
        description="Kafka consumers each `upstream serve` process runs beside the API "
        "(0: none; `upstream consume` runs them on their own).",
    )
    publish_to_kafka: bool = Field(
        False,
        description="Make `upstream serve` a publishing front: posted OpenLineage events are "
        "validated as always, then published to kafka_topic (keyed as OpenLineage's Kafka "
        "transport keys them) for `upstream consume` to store, and answered once Kafka "
        "acknowledged them; reads are served as always. Needs kafka_bootstrap_servers.",
    )
    kafka_publish_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds a publishing front waits for Kafka to acknowledge a post's "
        "events before it answers 503 with Retry-After (events not acknowledged by then are "
        "given up, never sent later).",
    )
    kafka_options: dict[str, str | int | float | bool] = Field(
        {},
        title="table",
        description="More Kafka client settings (librdkafka names), for a cluster that needs "
        'them: a TOML table, or JSON such as {"security.protocol": "SASL_SSL", '
        '"sasl.mechanism": "PLAIN", "sasl.username": "…", "sasl.password": "…"}; the '
        "environment's JSON adds to the file's table.",
    )
    any_content_type: bool = Field(
        False,
        description="Read posted lineage (events, field operations) as JSON whatever its "
        "Content-Type says, or without one. By default a JSON body must be sent as "
        "application/json (or an application/*+json type) and anything else is answered 415; "
        "the OpenLineage clients, their Airflow and dbt integrations and marquez-python all "
        "send application/json, so only hand-written senders need this (`curl -d` sends "
        "application/x-www-form-urlencoded, a script posting bytes may send none).",
    )
    sql_lineage: bool = Field(
        True,
        description="Read column lineage from the SQL a job reports (its `sql` facet) for "
        "outputs the producer gave no column lineage for; false stores none from SQL.",
    )
    log_format: Literal["auto", "json", "text"] = Field(
        "auto",
        description="Log lines as JSON objects (one per line, for log collectors) or as plain "
        "text for people; auto: text with colours when standard error is a terminal, JSON "
        "otherwise.",
    )
    retention: str | None = Field(
        None,
        description="Keep runs this long after they end (e.g. 90d, 12h); once a day the server "
        "removes older runs with what was derived from them and their raw events, as "
        "`upstream db prune` does. Off when unset.",
    )
    position_wait: float = Field(
        5.0,
        ge=0,
        description="Seconds a read that names the position of a write (`?after=` or the "
        "`X-Upstream-Position` header) waits for this server to include that write, before "
        "answering 503 with Retry-After.",
    )
    log_level: Literal["debug", "info", "warning", "error"] = Field(
        "info",
        description="Least severe level of the server's own log lines (other libraries write "
        "warnings and worse only).",
    )
    watch: bool = Field(
        True,
        description="Run the dispatcher and deliverer of subscriptions (`/v3/subscriptions`) in "
        "this process; any number of processes may, each notification is still created and "
        "sent once.",
    )
    public_url: str = Field(
        "",
        description="The address users reach this server's web UI at (https://lineage.example"
        ".com), for the links in notifications; empty: links are paths on the server.",
    )
    allow_private_webhooks: bool = Field(
        False,
        description="Let subscriptions deliver to webhooks on loopback, private or link-local "
        "addresses; off, such a URL is refused, so whoever may subscribe cannot make the "
        "server post into its own network.",
    )
    watch_poll_seconds: float = Field(
        1.0,
        gt=0,
        description="Seconds between two looks at the change log for changes to notify.",
    )
    watch_defer_seconds: float = Field(
        2.0,
        ge=0,
        description="While this process is taking a write (from when its events arrive), the "
        "dispatcher's next look at the change log waits for it to end, at most this many "
        "seconds after it was due or, if later, until nine times the last look's time has "
        "passed since it ended: under continuous ingest notifications are made this much "
        "later, and the looks take at most a tenth of the process's time. 0: never wait.",
    )
    watch_sweep_seconds: float = Field(
        3600.0,
        gt=0,
        description="Seconds between two looks at every subscription's radius, which tells "
        "relations that aged out of a subscription's activeDays as removed.",
    )
    watch_retry_seconds: float = Field(
        5.0,
        gt=0,
        description="Wait before the first retry of a failed delivery; each retry waits twice "
        "as long as the one before (with jitter), up to watch_retry_max_seconds.",
    )
    watch_retry_max_seconds: float = Field(
        3600.0, gt=0, description="Longest wait between two tries of one delivery."
    )
    watch_max_attempts: int = Field(
        10,
        ge=1,
        description="Tries of one delivery before it is dead (shown in the delivery log, and "
        "sent again only by a redeliver).",
    )
    watch_timeout_seconds: float = Field(
        10.0, gt=0, description="Seconds a webhook or Kafka broker has to accept a delivery."
    )

    @model_validator(mode="after")
    def _consumers_need_brokers(self) -> Settings:
        if self.kafka_consumers and not self.kafka_bootstrap_servers.strip():
            raise ValueError(
                "UPSTREAM_KAFKA_CONSUMERS needs UPSTREAM_KAFKA_BOOTSTRAP_SERVERS, the Kafka "
                "brokers to read from"
            )
        if self.publish_to_kafka and not self.kafka_bootstrap_servers.strip():
            raise ValueError(
                "UPSTREAM_PUBLISH_TO_KAFKA (--publish-to-kafka) needs "
                "UPSTREAM_KAFKA_BOOTSTRAP_SERVERS, the Kafka brokers to publish to"
            )
        return self

    @model_validator(mode="after")
    def _replicas_of_postgresql(self) -> Settings:
        for url in self.read_database_url:
            if not database_url(url).startswith("postgresql"):
                raise ValueError(
                    "UPSTREAM_READ_DATABASE_URL: a read replica is a PostgreSQL database "
                    "(postgresql://user@host:5432/database), not SQLite"
                )
        if self.read_database_url and not self.db_url.startswith("postgresql"):
            raise ValueError(
                "UPSTREAM_READ_DATABASE_URL needs UPSTREAM_DB_URL to be the PostgreSQL primary "
                "the replicas follow"
            )
        return self

    @field_validator("read_database_url")
    @classmethod
    def _replica_urls_name_databases(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(database_url(url) for url in value)

    @field_validator("db_url")
    @classmethod
    def _db_url_names_a_database(cls, value: str) -> str:
        return database_url(value)

    @field_validator("retention")
    @classmethod
    def _retention_is_a_length(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Explicit values, then the environment, then the TOML file named by UPSTREAM_CONFIG."""
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_path = os.environ.get("UPSTREAM_CONFIG")
        if config_path:
            if not Path(config_path).is_file():
                raise SettingsError(f"invalid setting: UPSTREAM_CONFIG: no file at {config_path}")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config_path))
        return tuple(sources)


def load_settings(**overrides: Any) -> Settings:
    """Build the settings from file, environment and explicit overrides (strongest last)."""
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(_problem(err["loc"], err["msg"]) for err in exc.errors())
        raise SettingsError(f"invalid setting: {problems}") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"invalid setting: config file: {exc}") from None


def _problem(loc: tuple[int | str, ...], message: str) -> str:
    """One setting's problem; a rule across settings names them in its own message."""
    if not loc:
        return message.removeprefix("Value error, ")
    return f"UPSTREAM_{'.'.join(str(p) for p in loc).upper()}: {message}"
