"""Running the API under uvicorn, with one process or several.

The listening socket is bound here, before uvicorn starts or any worker imports the app: a port
in use or an address the machine does not have is then one line saying what to do
(`StartupError`), not a log record after "Application startup complete".

With several workers uvicorn binds the listening socket itself with protocol 0, so asyncio
does not recognise the accepted connections as TCP and leaves Nagle's algorithm on: every
response written in two parts (headers, then a body) then waits for the client's delayed ACK,
about 40 ms. Setting TCP_NODELAY on the listening socket, which accepted sockets inherit on
Linux, gives several workers the latency of one; the socket bound here gets it too.
"""

from __future__ import annotations

import errno
import logging
import socket

import uvicorn
from uvicorn.supervisors import Multiprocess

from upstream.connection_timeouts import UpstreamConfig
from upstream.logs import configure_logging
from upstream.settings import Settings

APP = "upstream.api.app:create_app"
log = logging.getLogger("upstream")


class StartupError(Exception):
    """The server cannot start; the message says why and what to do, on one line."""


def run_server(settings: Settings, sock: socket.socket | None = None) -> None:
    """Serve until stopped on `sock` (else a socket bound to the configured host and port);
    in-flight requests get 30 s to finish on shutdown. With several workers, the supervisor
    restarts a worker that misses its health check for `worker_healthcheck_timeout` seconds
    (uvicorn's 5 s default kills workers merely busy on a loaded machine)."""
    sock = sock or listening_socket(settings.host, settings.port)
    # Uvicorn's own lines come out in the server's format: no logging config of its own.
    configure_logging(settings)
    config = UpstreamConfig(
        APP,
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=settings.log_level,
        log_config=None,
        timeout_graceful_shutdown=30,
        timeout_worker_healthcheck=settings.worker_healthcheck_timeout,
        client_timeout=settings.client_timeout,
    )
    host, port = sock.getsockname()[:2]
    shown_host = f"[{host}]" if sock.family == socket.AF_INET6 else host
    log.info("listening on http://%s:%d (press Ctrl+C to stop)", shown_host, port)
    if settings.workers == 1:
        uvicorn.Server(config).run(sockets=[sock])
        return
    Multiprocess(config, sockets=[sock]).run()


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host`:`port`, ready to share with worker processes; raises
    StartupError naming the problem and the option that fixes it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise StartupError(f"cannot listen on {host}:{port}: {_bind_advice(exc)}") from None
    sock.set_inheritable(True)
    return sock


def _bind_advice(exc: OSError) -> str:
    if isinstance(exc, socket.gaierror):
        return "no such host name; check --host (or UPSTREAM_HOST)"
    if exc.errno == errno.EADDRINUSE:
        return (
            "the port is already in use; stop what is using it (another `upstream serve`?) "
            "or choose another port with --port (or UPSTREAM_PORT)"
        )
    if exc.errno == errno.EACCES:
        return "permission denied; ports below 1024 need privileges, choose another with --port"
    if exc.errno == errno.EADDRNOTAVAIL:
        return "this machine has no such address; check --host (or UPSTREAM_HOST)"
    return f"{exc.strerror or exc}; check --host and --port"
