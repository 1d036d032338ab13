"""The deliverer: sends each pending notification to its subscription's webhook or Kafka
topic, at least once (design §4.8).

A sender takes a notification with a lease (`upstream.store.subscriptions.claim`), sends it
outside any transaction, and records the attempt: delivered, retried later with exponential
backoff and jitter (`upstream.model.watch.RetryPolicy`), or dead after the last try or a
refusal. The lease outlasts a send's time-out, so two processes never send one notification
at once; a process that dies while sending leaves it to be sent again when the lease ends.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.engine import Connection

from upstream.model.watch import SIGNATURE_HEADER, RetryPolicy, SubscriptionSpec, retryable, sign
from upstream.store import subscriptions as rows
from upstream.store.engine import Store

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("upstream.watch")

#: Notifications one round takes at most.
ROUND = 100


@dataclass(frozen=True)
class Outcome:
    """How a try ended: the receiver's HTTP status (None: no answer) and the error shown."""

    status: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.error is None


class Sink(Protocol):
    """Sends one notification body somewhere; never raises, it says how it went."""

    def send(
        self, spec: SubscriptionSpec, subscription: uuid.UUID, body: str, secret: str
    ) -> Outcome: ...


class WebhookSink:
    """`POST url` with the JSON body and its signature (`X-Upstream-Signature`)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout

    @cached_property
    def client(self) -> httpx.Client:
        """Made at the first delivery, and HTTPX imported then: loading the CA certificates
        costs a server start a few tenths of a second, importing HTTPX 60 ms of CPU, and
        most servers never deliver."""
        import httpx

        return httpx.Client(timeout=self.timeout, follow_redirects=False)

    def send(
        self, spec: SubscriptionSpec, subscription: uuid.UUID, body: str, secret: str
    ) -> Outcome:
        import httpx

        data = body.encode()
        headers = {"Content-Type": "application/json", SIGNATURE_HEADER: sign(secret, data)}
        try:
            response = self.client.post(spec.target, content=data, headers=headers)
        except httpx.HTTPError as exc:
            return Outcome(None, f"{type(exc).__name__}: {exc}"[:500])
        if 200 <= response.status_code < 300:
            return Outcome(response.status_code, None)
        return Outcome(response.status_code, f"the receiver answered {response.status_code}")

    def close(self) -> None:
        if "client" in self.__dict__:
            self.client.close()


class KafkaSink:
    """The body on the subscription's topic, keyed by the subscription's id, so one
    subscription's notifications stay in order on one partition."""

    def __init__(self, config: dict[str, Any], timeout: float) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({**config, "message.timeout.ms": int(timeout * 1000)})
        self.timeout = timeout

    def send(
        self, spec: SubscriptionSpec, subscription: uuid.UUID, body: str, secret: str
    ) -> Outcome:
        errors: list[str] = []

        def delivered(error: Any, _message: Any) -> None:
            if error is not None:
                errors.append(str(error))

        try:
            self.producer.produce(
                spec.target,
                value=body.encode(),
                key=str(subscription).encode(),
                on_delivery=delivered,
            )
            left = self.producer.flush(self.timeout)
        except Exception as exc:  # librdkafka reports through its own exception types
            return Outcome(None, f"{type(exc).__name__}: {exc}"[:500])
        if errors:
            return Outcome(None, errors[0][:500])
        if left:
            return Outcome(None, "the broker did not acknowledge in time")
        return Outcome(None, None)


class Deliverer:
    """Sends what is due, round after round (`deliver_due`)."""

    def __init__(
        self,
        store: Store,
        policy: RetryPolicy,
        *,
        timeout: float,
        kafka: Callable[[], KafkaSink] | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        #: How long a sender holds each notification it takes: longer than its send.
        self.lease = timedelta(seconds=timeout * 2 + 5)
        self.webhook = WebhookSink(timeout)
        self._make_kafka = kafka
        self._kafka: KafkaSink | None = None

    def deliver_due(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> int:
        """Send every notification due now that no other process holds; how many were
        delivered. A round takes its notifications in one transaction and records what
        became of them in one more, so a dead receiver costs two short writes a round,
        whatever the number of its notifications."""
        with self.store.read() as conn:
            due = rows.due(conn, now(), ROUND)
        if not due:
            return 0
        taken = now()
        until = taken + self.lease * len(due)
        held = self.store.write(
            lambda conn: [
                found
                for notification in due
                if rows.claim(conn, notification, taken, until)
                and (found := rows.outbound(conn, notification)) is not None
            ]
        )
        sent = [(note, self._send(note)) for note in held]
        ended = now()
        self.store.write(lambda conn: self._record(conn, sent, ended))
        return sum(outcome.delivered for _, outcome in sent)

    def _send(self, note: rows.Outbound) -> Outcome:
        spec = SubscriptionSpec.from_json(note.spec)
        return self._sink(spec).send(spec, note.subscription_id, note.body, note.secret)

    def _record(
        self, conn: Connection, sent: list[tuple[rows.Outbound, Outcome]], ended: datetime
    ) -> None:
        for note, outcome in sent:
            tries = note.tries + 1
            if outcome.delivered:
                state, later = rows.DELIVERED, ended
            elif retryable(outcome.status) and not self.policy.exhausted(tries):
                state, later = rows.PENDING, ended + self.policy.delay(tries)
            else:
                state, later = rows.DEAD, ended
                log.warning(
                    "notification %s to subscription %s is dead: %s",
                    note.id,
                    note.subscription_id,
                    outcome.error,
                )
            rows.record_attempt(
                conn,
                note.id,
                ended,
                outcome.status,
                outcome.error,
                state=state,
                tries=tries,
                next_attempt_at=later,
            )

    def _sink(self, spec: SubscriptionSpec) -> Sink:
        if spec.sink == "webhook":
            return self.webhook
        if self._kafka is None:
            if self._make_kafka is None:
                return _NoKafka()
            self._kafka = self._make_kafka()
        return self._kafka

    def close(self) -> None:
        self.webhook.close()
        if self._kafka is not None:
            self._kafka.producer.flush(self._kafka.timeout)


class _NoKafka:
    def send(
        self, spec: SubscriptionSpec, subscription: uuid.UUID, body: str, secret: str
    ) -> Outcome:
        return Outcome(None, "no Kafka brokers are configured (kafka_bootstrap_servers)")
