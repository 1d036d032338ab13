"""Connections that never finish sending a request are closed.

Uvicorn closes a keep-alive connection that is idle after a response, but a connection that
never sends a byte, or sends its headers a byte at a time (slowloris), stays open for ever and
holds a file descriptor and a slot of the server. `GuardedHttpToolsProtocol` gives every
request's headers `client_timeout` seconds from the moment the connection opens or the next
request's first byte arrives; a connection still without complete headers then is closed. (A
slow body is the app's to judge, once it knows the request: `api.upload_rate`.)

The protocol is uvicorn's httptools one (llhttp, in C), not its pure-Python h11 one: parsing a
request and writing its response cost a third of a small lineage read's CPU under h11.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("upstream")


class UpstreamConfig(uvicorn.Config):
    """Uvicorn's configuration and the header timeout; a module-level class, so worker
    processes (which receive the configuration pickled) get it too."""

    def __init__(self, app: str, *, client_timeout: float, **kwargs: Any) -> None:
        super().__init__(app, http=GuardedHttpToolsProtocol, **kwargs)
        self.client_timeout = client_timeout


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """Uvicorn's HTTP/1.1 protocol with a deadline for each request's headers. Between
    requests uvicorn's keep-alive timeout closes an idle connection; the deadline starts when
    the connection opens and, for later requests, with their first byte."""

    def __init__(self, config: uvicorn.Config, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.header_timeout: float = getattr(config, "client_timeout", 10.0)
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self._waiting_for_headers():
            self._arm_header_timer(restart=False)
        super().data_received(data)
        if not self._waiting_for_headers():
            self._disarm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _waiting_for_headers(self) -> bool:
        """No request is being answered: the next one's headers are incomplete (a request's
        cycle begins once its headers are complete)."""
        return self.cycle is None or self.cycle.response_complete

    def _arm_header_timer(self, *, restart: bool = True) -> None:
        if self._header_timer is not None and not restart:
            return
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self._waiting_for_headers() and not self.transport.is_closing():
            log.info(
                "closed a connection from %s that sent no complete request within %s s",
                _address(self.client),
                self.header_timeout,
            )
            self.transport.close()


def _address(client: tuple[str, int] | None) -> str:
    return f"{client[0]}:{client[1]}" if client else "an unknown address"
