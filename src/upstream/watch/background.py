"""The dispatcher and the deliverer on a thread of their own, in `upstream serve` and in
`upstream consume` (design §4.8): a write never waits for them."""

from __future__ import annotations

import logging
import random
import threading
import time
from datetime import timedelta

from upstream.model.watch import RetryPolicy
from upstream.settings import Settings
from upstream.store.engine import Store
from upstream.store.outage import is_database_outage
from upstream.watch.delivery import Deliverer, KafkaSink
from upstream.watch.digest import digest_once
from upstream.watch.dispatcher import Dispatcher
from upstream.watch.payload import Links

log = logging.getLogger("upstream.watch")

#: How often a deferred round looks whether the write it waits for has ended.
_WRITE_CHECK_SECONDS = 0.01
#: The most of the process's time the watcher's rounds take while its writes go on: after a
#: round of d seconds, the next one waits for the writes to end up to 9 d after it.
_SHARE_WHILE_WRITING = 0.1


def deliverer_of(store: Store, settings: Settings) -> Deliverer:
    """The deliverer the settings describe."""
    policy = RetryPolicy(
        base=timedelta(seconds=settings.watch_retry_seconds),
        cap=timedelta(seconds=settings.watch_retry_max_seconds),
        attempts=settings.watch_max_attempts,
        draw=random.Random(),
    )
    brokers = settings.kafka_bootstrap_servers

    def kafka() -> KafkaSink:
        config = {**settings.kafka_options, "bootstrap.servers": brokers}
        return KafkaSink(config, settings.watch_timeout_seconds)

    return Deliverer(
        store, policy, timeout=settings.watch_timeout_seconds, kafka=kafka if brokers else None
    )


class Watcher:
    """Rounds of dispatching and delivering, every `watch_poll_seconds`, until stopped."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.poll = settings.watch_poll_seconds
        self.defer = settings.watch_defer_seconds
        sweep = timedelta(seconds=settings.watch_sweep_seconds)
        self.dispatcher = Dispatcher(store, Links(settings.public_url), sweep)
        self.deliverer = deliverer_of(store, settings)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="upstream-watch", daemon=True)

    def start(self) -> Watcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self.deliverer.close()

    def _run(self) -> None:
        ended = time.monotonic()
        spent = 0.0
        while not self._stop.is_set():
            self._after_writes(ended + spent * (1 / _SHARE_WHILE_WRITING - 1))
            started = time.monotonic()
            try:
                self.dispatcher.dispatch_once()
                digest_once(self.store)
                self.deliverer.deliver_due()
            except Exception as exc:
                # A database that cannot serve (said in one line, as every outage is), or a
                # bug (with its traceback): the next round tries again from the cursor, so
                # nothing is lost.
                if is_database_outage(exc):
                    log.warning(
                        "watching lineage: the database is unavailable (%s); retrying next round",
                        exc,
                    )
                else:
                    log.exception("watching lineage: this round failed; the next one retries")
            ended = time.monotonic()
            spent = ended - started
            self._stop.wait(self.poll)

    def _after_writes(self, rested: float) -> None:
        """Wait while this process takes a write, at most `defer` seconds or until the
        monotonic time `rested`, whichever is later: a round walks the radii the writes
        touched, and would take the CPU the writes are using. Under continuous writes the
        rounds come further apart the longer they take, and each covers more writes."""
        if not self.defer:
            return
        deadline = max(time.monotonic() + self.defer, rested)
        while self.store.writing and time.monotonic() < deadline:
            if self._stop.wait(_WRITE_CHECK_SECONDS):
                return
