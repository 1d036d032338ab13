"""Several workers share a listening socket with Nagle's algorithm off (see serving.py)."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from tests.conftest import free_port
from upstream import serving
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
