"""`upstream consume`: one Kafka consumer in the foreground, until Ctrl+C or SIGTERM.

The database is prepared first, as `upstream serve` prepares it (migrated, and derived again
when the rules changed), since consumers may start before any server. At a terminal a
progress line shows what was consumed, stored and refused and the lag; elsewhere the log
says it, and the totals are printed when the consumer stops.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from confluent_kafka import KafkaException
from prometheus_client import CollectorRegistry, start_http_server
from rich.console import Console
from rich.live import Live
from rich.text import Text

from upstream.commands.failures import CliError, database_failure
from upstream.commands.rebuild import prepare
from upstream.kafka.consumer import ConsumerConfig, LineageConsumer, Totals, kafka_reason
from upstream.kafka.metrics import ConsumerMetrics
from upstream.kafka.progress import progress_line
from upstream.logs import configure_logging
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.watch.background import Watcher


def consume(settings: Settings, console: Console, metrics_port: int | None = None) -> Totals:
    """Consume until stopped; the totals of the run."""
    if not settings.kafka_bootstrap_servers.strip():
        raise CliError(
            "no Kafka brokers: give --bootstrap-servers (or UPSTREAM_KAFKA_BOOTSTRAP_SERVERS)"
        )
    configure_logging(settings)
    store = Store(settings.db_url, pool_size=2)
    try:
        try:
            prepare(store, console)
        except Exception as exc:
            failure = database_failure("prepare the database", store.display_url, exc)
            raise CliError(failure) from exc
        registry = CollectorRegistry()
        if metrics_port is not None:
            start_http_server(metrics_port, addr=settings.host, registry=registry)
        stop = threading.Event()
        config = ConsumerConfig.from_settings(settings)
        try:
            consumer = LineageConsumer(store, config, ConsumerMetrics(registry), stop)
        except KafkaException as exc:
            raise CliError(f"the Kafka client refuses its settings: {kafka_reason(exc)}") from None
        # Notifications of what is consumed are sent from here too (design §4.8).
        watcher = Watcher(store, settings).start() if settings.watch else None
        try:
            with _stopped_by_signals(stop), _progress(console, consumer.totals):
                consumer.run()
        finally:
            if watcher is not None:
                watcher.stop()
        return consumer.totals
    finally:
        store.dispose()


@contextmanager
def _stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl+C and SIGTERM end the run after the batch in hand, not in the middle of it."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda *_: stop.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def _progress(console: Console, totals: Totals) -> Iterator[None]:
    if not console.is_terminal:
        yield
        return
    with Live(
        get_renderable=lambda: Text(progress_line(totals)),
        console=console,
        refresh_per_second=4,
        transient=False,
    ):
        yield
