"""The upload-rate bound (`api/upload_rate.py`) times request bodies only: a request without a
body, whose streamed answer (the impact report's CSV) waits on `receive()` for the client to
hang up, is never a slow upload, however long its answer took to compute."""

from __future__ import annotations

import asyncio

import pytest
from starlette.types import Message, Receive, Scope, Send

from upstream.api.upload_rate import SlowUpload, UploadRateMiddleware


async def waits_for_disconnect(scope: Scope, receive: Receive, send: Send) -> None:
    message = await receive()
    assert message["type"] == "http.disconnect"


async def disconnect_later() -> Message:
    await asyncio.sleep(0)  # not ready at once: a zero deadline would time it out
    return {"type": "http.disconnect"}


def call(headers: list[tuple[bytes, bytes]]) -> None:
    # No grace: any timed receive is already past its deadline.
    app = UploadRateMiddleware(waits_for_disconnect, grace=0, min_rate=10_000)
    scope: Scope = {"type": "http", "method": "GET", "headers": headers}

    async def send(_: Message) -> None:
        return None

    asyncio.run(app(scope, disconnect_later, send))


@pytest.mark.parametrize("headers", [[], [(b"content-length", b"0")]])
def test_a_request_without_a_body_is_not_timed(headers: list[tuple[bytes, bytes]]) -> None:
    call(headers)


@pytest.mark.parametrize(
    "headers", [[(b"content-length", b"10")], [(b"transfer-encoding", b"chunked")]]
)
def test_a_request_with_a_body_still_is(headers: list[tuple[bytes, bytes]]) -> None:
    with pytest.raises(SlowUpload):
        call(headers)
