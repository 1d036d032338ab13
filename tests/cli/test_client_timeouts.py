"""Clients that never finish a request cannot hold the server (design §5): connections that
send nothing, headers sent a byte at a time (slowloris) and bodies that trickle are closed
after `client_timeout` seconds (a slow body with a 408), while normal requests still answer.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.builders import ds, run_event
from tests.conftest import LiveServer

#: The server's client_timeout in these tests; every abusive connection must be closed well
#: within CLOSED_WITHIN.
CLIENT_TIMEOUT = 1
CLOSED_WITHIN = 20.0


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    env = {"UPSTREAM_CLIENT_TIMEOUT": str(CLIENT_TIMEOUT), "UPSTREAM_MIN_UPLOAD_RATE": "1000"}
    server = LiveServer(db_url, tmp_path, env=env).start()
    yield server
    server.stop()


def _connect(server: LiveServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=CLOSED_WITHIN)


def _drip(sock: socket.socket, data: bytes, stop: threading.Event) -> None:
    """Send `data` a byte every 0.2 s until it is sent, the server closes, or `stop`."""
    for byte in data:
        if stop.wait(0.2):
            return
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends before it closes the connection; fails if it does not
    close within CLOSED_WITHIN seconds."""
    received = b""
    deadline = time.monotonic() + CLOSED_WITHIN
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return received
        except TimeoutError:
            break
        if not chunk:
            return received
        received += chunk
    pytest.fail(f"the server kept the connection open for {CLOSED_WITHIN} s")


@pytest.mark.slow
def test_connections_that_never_finish_a_request_are_closed(server: LiveServer) -> None:
    silent = [_connect(server) for _ in range(20)]
    slowloris = [_connect(server) for _ in range(5)]
    uploads = [_connect(server) for _ in range(3)]
    headers = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 200 + b"\r\n\r\n"
    upload = (
        b"POST /api/v1/lineage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 5000\r\n\r\n"
    )
    stop = threading.Event()
    drips = [threading.Thread(target=_drip, args=(s, headers, stop)) for s in slowloris]
    for sock in uploads:
        sock.sendall(upload)
    drips += [threading.Thread(target=_drip, args=(s, b"[" + b" " * 4000, stop)) for s in uploads]
    for thread in drips:
        thread.start()
    try:
        # Meanwhile the server answers everyone else.
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get("/health").status_code == 200
            event = run_event(("timeouts", "normal"), outputs=[ds("timeouts", "out")])
            assert http.post("/api/v1/lineage", json=event).status_code == 201
        for sock in silent + slowloris:
            assert _read_until_closed(sock) == b""  # closed without an answer: no request
        for sock in uploads:
            answer = _read_until_closed(sock)
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
            assert b"the request body arrived too slowly" in answer
        with httpx.Client(base_url=server.url, timeout=10) as http:
            assert http.get("/health").status_code == 200
    finally:
        stop.set()
        for thread in drips:
            thread.join(5)
        for sock in silent + slowloris + uploads:
            sock.close()
    log = server.log()
    assert "sent no complete request within 1.0 s" in log
    assert "Traceback" not in log


@pytest.mark.slow
def test_a_keep_alive_connection_may_send_several_requests(server: LiveServer) -> None:
    """The header deadline is per request: a client that keeps its connection and sends
    another request at a normal pace is not cut off."""
    sock = _connect(server)
    try:
        for _ in range(3):
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"}"):  # the headers, then the JSON body
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
            time.sleep(CLIENT_TIMEOUT * 0.6)  # pauses that add up to more than the deadline
    finally:
        sock.close()
