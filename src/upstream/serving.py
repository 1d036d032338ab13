"""Running the API under uvicorn, with one process or several.

With several workers uvicorn binds the listening socket itself with protocol 0, so asyncio
does not recognise the accepted connections as TCP and leaves Nagle's algorithm on: every
response written in two parts (headers, then a body) then waits for the client's delayed ACK,
about 40 ms. Setting TCP_NODELAY on the listening socket, which accepted sockets inherit on
Linux, gives several workers the latency of one.
"""

from __future__ import annotations

import socket

import uvicorn
from uvicorn.supervisors import Multiprocess

from upstream.settings import Settings

APP = "upstream.api.app:create_app"


def run_server(settings: Settings) -> None:
    """Serve until stopped; in-flight requests get 30 s to finish on shutdown."""
    config = uvicorn.Config(
        APP,
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        timeout_graceful_shutdown=30,
    )
    if settings.workers == 1:
        uvicorn.Server(config).run()
        return
    sock = config.bind_socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(config, sockets=[sock]).run()
