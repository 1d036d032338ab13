"""A request body must keep coming: an upload slower than `min_upload_rate` bytes per second
on average (after a grace of `client_timeout` seconds) is answered 408 and its connection
closed, so a client trickling a body cannot hold a worker's request slot for ever.

The deadline for the next chunk is `start + grace + received / rate`: every byte received
buys `1 / rate` seconds, so a body that stalls, or one that drips, runs out of time, while
a fast upload that pauses (a producer's network hiccup) keeps the time it earned.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class SlowUpload(Exception):
    """The body did not arrive fast enough (answered 408)."""

    def __init__(self, received: int, seconds: float, min_rate: int) -> None:
        super().__init__(
            f"the request body arrived too slowly ({received} bytes in {seconds:.0f} s; "
            f"the server needs at least {min_rate} bytes per second)"
        )


class UploadRateMiddleware:
    """Bounds the time each chunk of a request body may take (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, grace: float, min_rate: int) -> None:
        self.app = app
        self.grace = grace
        self.min_rate = min_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_body(scope):
            # Without a body nothing is uploaded: a streamed answer's wait for the client to
            # hang up (Starlette's StreamingResponse) is no upload to time.
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        received = 0
        body_done = False

        async def timed_receive() -> Message:
            nonlocal received, body_done
            if body_done:  # after the body: waiting for a disconnect is not an upload
                return await receive()
            deadline = started + self.grace + received / self.min_rate
            try:
                message = await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0))
            except TimeoutError:
                raise SlowUpload(received, time.monotonic() - started, self.min_rate) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                body_done = not message.get("more_body", False)
            return message

        await self.app(scope, timed_receive, send)


def _has_body(scope: Scope) -> bool:
    """Whether the request announces a body: a non-zero Content-Length, or chunks."""
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
    return False
