"""Several workers share a listening socket with Nagle's algorithm off and get the
configured timeouts (see serving.py)."""

from __future__ import annotations

import pickle
import socket
from typing import Any

import pytest

from tests.conftest import free_port
from upstream import serving
from upstream.connection_timeouts import GuardedHttpToolsProtocol
from upstream.settings import Settings


def test_several_workers_listen_with_nodelay(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[socket.socket] = []

    class Supervisor:
        def __init__(self, config: Any, sockets: list[socket.socket]) -> None:
            assert config.workers == 3
            seen.extend(sockets)

        def run(self) -> None:
            for sock in seen:
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
                sock.close()

    monkeypatch.setattr(serving, "Multiprocess", Supervisor)
    serving.run_server(Settings(port=free_port(), workers=3))
    assert len(seen) == 1


def test_workers_get_the_configured_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor's health-check allowance and the header deadline reach every worker:
    the configuration is what a spawned worker receives, pickled."""
    seen: list[Any] = []

    class Supervisor:
        def __init__(self, config: Any, sockets: list[socket.socket]) -> None:
            seen.append(pickle.loads(pickle.dumps(config)))
            for sock in sockets:
                sock.close()

        def run(self) -> None:
            """Nothing to supervise in this test."""

    monkeypatch.setattr(serving, "Multiprocess", Supervisor)
    settings = Settings(
        port=free_port(), workers=2, worker_healthcheck_timeout=90, client_timeout=7.5
    )
    serving.run_server(settings)
    (config,) = seen
    assert config.timeout_worker_healthcheck == 90
    assert config.client_timeout == 7.5
    assert config.http is GuardedHttpToolsProtocol
    assert Settings().worker_healthcheck_timeout == 60
