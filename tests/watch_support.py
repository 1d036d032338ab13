"""A real HTTP receiver for webhook tests, and the helpers that drive the dispatcher and the
deliverer by hand, so a test says exactly when each round runs."""

from __future__ import annotations

import json
import random
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from upstream.model.watch import RetryPolicy
from upstream.store.engine import Store
from upstream.watch.delivery import Deliverer
from upstream.watch.digest import digest_once
from upstream.watch.dispatcher import Dispatcher
from upstream.watch.payload import Links

SECRET = "a-secret-of-enough-length"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def document(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


@dataclass
class Receiver:
    """Records every POST; answers with the statuses queued in `answers`, then 200."""

    answers: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.lock:
                    receiver.received.append(Received(dict(self.headers.items()), body))
                    status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def documents(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r.document for r in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def receiver_running() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def immediate_retries(attempts: int = 5) -> RetryPolicy:
    """Retries due at once (the backoff's own rule is tested apart), seeded."""
    return RetryPolicy(timedelta(0), timedelta(0), attempts, random.Random(7))


_dispatchers: weakref.WeakKeyDictionary[Store, Dispatcher] = weakref.WeakKeyDictionary()


def dispatcher_of(store: Store) -> Dispatcher:
    """The one dispatcher of `store` in this test, as a server keeps one: what it remembers
    between rounds is part of what the tests exercise."""
    found = _dispatchers.get(store)
    if found is None:
        links = Links("https://lineage.example.com")
        found = _dispatchers[store] = Dispatcher(store, links, timedelta(days=1))
    return found


def dispatch(store: Store, now: datetime | None = None) -> int:
    """One dispatcher round, then the digests due, as the server's watcher runs them."""
    made = dispatcher_of(store).dispatch_once(now)
    digest_once(store, now)
    return made


def deliver(store: Store, policy: RetryPolicy | None = None, at: datetime | None = None) -> int:
    """One delivery round (as of `at`, default now); how many were delivered."""
    deliverer = Deliverer(store, policy or immediate_retries(), timeout=5)
    try:
        if at is None:
            return deliverer.deliver_due()
        return deliverer.deliver_due(lambda: at)
    finally:
        deliverer.close()


def recent(hours: float = 1) -> datetime:
    return datetime.now(UTC) - timedelta(hours=hours)
