"""A live `upstream serve` in its own process, and a lean HTTP/1.1 client to load it.

The client speaks raw HTTP/1.1 over keep-alive asyncio connections with request bytes built
before the clock starts, so on a 2-core machine it takes as little CPU from the server as a
Python client can (httpx costs several times more per request)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """`upstream serve --db URL --workers N` on a free loopback port, stopped on exit; with
    `processes` > 1, that many such servers on ports of their own, as separate hosts behind a
    load balancer would be (clients spread their connections over `ports`).

    Several processes of one worker each avoid uvicorn's supervisor, which kills a worker that
    misses its 5-second health check: a worker holding the GIL through a large batch on a busy
    machine does, and the requests it was serving are cut off."""

    def __init__(
        self,
        db_url: str,
        log_dir: Path,
        workers: int = 2,
        env: dict[str, str] | None = None,
        processes: int = 1,
    ) -> None:
        self.db_url = db_url
        self.workers = workers
        self.env = env or {}
        self.ports = [free_port() for _ in range(processes)]
        self.port = self.ports[0]
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"server-{self.port}.log"
        self.processes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> Server:
        env = {**os.environ, "UPSTREAM_MAX_BATCH_EVENTS": "5000", **self.env}
        with self.log_path.open("ab") as log:
            for port in self.ports:
                command = [sys.executable, "-m", "upstream", "serve", "--db", self.db_url]
                command += ["--port", str(port), "--workers", str(self.workers)]
                self.processes.append(
                    subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                )
        deadline = time.monotonic() + 300
        waiting = list(zip(self.processes, self.ports, strict=True))
        while waiting and time.monotonic() < deadline:
            process, port = waiting[0]
            if process.poll() is not None:
                raise RuntimeError(f"server exited; see {self.log_path}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).status_code == 200:
                    waiting.pop(0)
            except httpx.HTTPError:
                time.sleep(0.2)
        if waiting:
            raise RuntimeError(f"server did not start within 300 s; see {self.log_path}")
        for port in self.ports:
            self._wait_until_ready(port, deadline)
        return self

    def _wait_until_ready(self, port: int, deadline: float) -> None:
        """Wait until `/ready` answers 200 on several fresh connections in a row.

        Each worker loads its own lineage index, and `/health` answers while it loads; a
        worker still loading answers lineage reads 503 once its wait is over, which on a busy
        machine spoiled a benchmark's first reads. The workers share one listening socket, so
        which one takes a fresh connection is the kernel's choice: ten answers in a row per
        worker make one that is not yet ready very unlikely to go unseen."""
        needed = 10 * self.workers
        in_a_row = 0
        while in_a_row < needed:
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not ready within 300 s; see {self.log_path}")
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/ready", timeout=10)
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.status_code == 200:
                in_a_row += 1
            else:
                in_a_row = 0
                time.sleep(0.2)

    @property
    def pids(self) -> set[int]:
        """The server processes (their workers are their descendants)."""
        return {process.pid for process in self.processes}

    def worker_memory_mb(self) -> dict[str, float]:
        """The largest resident memory of one worker now (`rss`) and at its peak (`peak`), in
        MB: each server's worker processes when it has several, else the server itself."""
        pids = set().union(*(descendants(pid) or {pid} for pid in self.pids))
        found = [m for pid in pids if (m := _memory_kb(pid))]
        return {
            "rss": max((rss for rss, _ in found), default=0) / 1024,
            "peak": max((peak for _, peak in found), default=0) / 1024,
        }

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds used) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks


def _memory_kb(pid: int) -> tuple[int, int] | None:
    """(resident, peak resident) kB of a live process, from /proc."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    values = {
        line.split(":")[0]: int(line.split()[1])
        for line in status.splitlines()
        if line.startswith(("VmRSS:", "VmHWM:"))
    }
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` (Linux)."""
    stats = {int(p): s for p in os.listdir("/proc") if p.isdigit() and (s := _stat(p))}
    children: dict[int, list[int]] = {}
    for child, (parent, _) in stats.items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        if child not in found:
            found.add(child)
            stack.extend(children.get(child, []))
    return found


def cpu_seconds(root_pids: set[int]) -> float:
    """CPU seconds used so far by `root_pids` and all their live descendants (Linux)."""
    pids = set(root_pids).union(*(descendants(pid) for pid in root_pids))
    return sum(stat[1] for pid in pids if (stat := _stat(str(pid))))


def post_request(path: str, body: bytes) -> bytes:
    """The bytes of one keep-alive POST of a JSON body."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


async def _exchange(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
) -> tuple[int, bytes]:
    writer.write(request)
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length = 0
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.lower() == "content-length":
            length = int(value.strip())
        elif name.lower() == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if not chunked:
        return status, await reader.readexactly(length)
    body = b""
    while True:
        size = int((await reader.readuntil(b"\r\n")).strip(), 16)
        chunk = await reader.readexactly(size + 2)
        if size == 0:
            return status, body
        body += chunk[:-2]


async def _send_all(
    ports: list[int],
    requests: Iterable[bytes],
    concurrency: int,
    expect: int,
    latencies: list[float] | None,
) -> None:
    pending = iter(requests)  # shared: each connection takes the next request when it is free

    async def worker(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for request in pending:
                sent = time.perf_counter()
                try:
                    status, body = await _exchange(reader, writer, request)
                    if latencies is not None:
                        latencies.append(time.perf_counter() - sent)
                except (asyncio.IncompleteReadError, ConnectionError) as exc:
                    raise RuntimeError(
                        f"the server on port {port} closed the connection before answering "
                        f"({exc!r}): a worker died; see its log"
                    ) from None
                if status != expect:
                    raise RuntimeError(f"HTTP {status}: {body[:500]!r}")
        finally:
            writer.close()

    await asyncio.gather(*(worker(ports[i % len(ports)]) for i in range(concurrency)))


def send_all(
    ports: list[int],
    requests: Iterable[bytes],
    concurrency: int,
    expect: int = 201,
    latencies: list[float] | None = None,
) -> None:
    """Send every request over `concurrency` keep-alive connections, spread evenly over the
    servers' `ports`, taking each request from `requests` when a connection is free; each
    answer's seconds are appended to `latencies` when given."""
    asyncio.run(_send_all(ports, requests, concurrency, expect, latencies))


async def _send_paced(
    ports: list[int], requests: Iterable[bytes], concurrency: int, rate: float
) -> list[float]:
    pending = enumerate(requests)  # shared, as in `_send_all`
    latencies: list[float] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def worker(port: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            for number, request in pending:
                due = start + number / rate
                await asyncio.sleep(max(0.0, due - loop.time()))
                status, body = await _exchange(reader, writer, request)
                if status != 201:
                    raise RuntimeError(f"HTTP {status}: {body[:500]!r}")
                latencies.append(loop.time() - due)
        finally:
            writer.close()

    await asyncio.gather(*(worker(ports[i % len(ports)]) for i in range(concurrency)))
    return latencies


def send_paced(
    ports: list[int], requests: Iterable[bytes], concurrency: int, rate: float
) -> list[float]:
    """Offer `rate` requests a second over `concurrency` keep-alive connections, request n
    due at n / rate seconds; each request's seconds from when it was due to its answer (a
    request that waited for a free connection counts its wait, as its producer would)."""
    return asyncio.run(_send_paced(ports, requests, concurrency, rate))
