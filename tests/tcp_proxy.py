"""A TCP proxy a test controls, to give a server a database that hangs or refuses without
touching the shared PostgreSQL server (other sessions' tests use it).

`pause()` stops forwarding in both directions, as a database stopped with SIGSTOP or a network
that drops packets would look to its clients: connections stay open and every byte waits.
`refuse()` closes every connection and answers new ones by closing them. `resume()` forwards
again, including whatever waited meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class TcpProxy:
    """Forwards 127.0.0.1:`port` (a free port) to `target_host`:`target_port`."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._flowing = asyncio.Event()
        self._refusing = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._start())
        return self

    def stop(self) -> None:
        self._call(self._stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def pause(self) -> None:
        self._call(self._set(flowing=False, refusing=False))

    def resume(self) -> None:
        self._call(self._set(flowing=True, refusing=False))

    def refuse(self) -> None:
        self._call(self._set(flowing=True, refusing=True))

    def _call(self, coroutine: object) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(10)  # type: ignore[arg-type]

    async def _start(self) -> None:
        self._flowing.set()
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._close_all()

    async def _set(self, *, flowing: bool, refusing: bool) -> None:
        self._refusing = refusing
        if refusing:
            self._close_all()
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    def _close_all(self) -> None:
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._refusing:
            writer.close()
            return
        self._writers.add(writer)
        await self._flowing.wait()  # a hung database does not answer new connections either
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                await self._flowing.wait()
                if self._refusing or writer.is_closing():
                    break
                writer.write(data)
                await writer.drain()
        writer.close()
        self._writers.discard(writer)


@contextmanager
def proxy_to(host: str, port: int) -> Iterator[TcpProxy]:
    proxy = TcpProxy(host, port).start()
    try:
        yield proxy
    finally:
        proxy.stop()
