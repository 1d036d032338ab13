"""Bounded work per request (design §5): bodies that are small on the wire but would parse
into millions of objects are refused before they are parsed, and the server's memory barely
moves. The server is a real `upstream serve` process whose peak memory (VmHWM) is read from
/proc before and after each body."""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from upstream.store.engine import Store

MB = 1024 * 1024
GZIP = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
#: 9.9 MB of `[{},{},…]`: 3.3 million empty objects in a 10 kB gzip body.
EMPTY_OBJECTS_BATCH = gzip.compress(b"[" + b"{}," * 3_299_999 + b"{}]", 9)


def one_event_of_empty_objects() -> bytes:
    """One valid-looking event whose facet holds 3.2 million empty objects."""
    event = run_event(("bounds", "bomb"), outputs=[ds("bounds", "out")])
    text = json.dumps(event).encode()
    marker = b'"facets": {}'
    assert marker in text
    bomb = b'"facets": {"bomb": {"_producer": "p", "items": [' + b"{}," * 3_199_999 + b"{}]}}"
    return gzip.compress(text.replace(marker, bomb, 1), 9)


pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the server's memory from /proc"
)


def _peak_rss(server: LiveServer) -> int:
    assert server.process is not None
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    server = LiveServer(db_url, tmp_path).start()  # one process: the worker is the server
    yield server
    server.stop()


@pytest.mark.slow
def test_bodies_that_parse_into_millions_of_objects_are_refused_cheaply(
    server: LiveServer, store: Store
) -> None:
    one_event = one_event_of_empty_objects()
    assert len(EMPTY_OBJECTS_BATCH) < 20_000
    assert len(one_event) < 20_000
    with httpx.Client(base_url=server.url, timeout=60) as http:
        normal = run_event(("bounds", "normal"), outputs=[ds("bounds", "out")])
        assert http.post("/api/v1/lineage", json=normal).status_code == 201  # warm
        for body, message in (
            (EMPTY_OBJECTS_BATCH, "a batch may hold at most 5000 events; this one holds more"),
            (
                one_event,
                "the event holds more than 200000 JSON values (the server's max_event_values); "
                "split it into smaller events",
            ),
        ):
            before = _peak_rss(server)
            response = http.post("/api/v1/lineage", content=body, headers=GZIP)
            assert (response.status_code, response.json()["message"]) == (413, message)
            assert _peak_rss(server) - before < 50 * MB

        before = _peak_rss(server)
        with ThreadPoolExecutor(4) as pool:
            answers = list(
                pool.map(
                    lambda _: http.post(
                        "/api/v1/lineage", content=EMPTY_OBJECTS_BATCH, headers=GZIP
                    ),
                    range(4),
                )
            )
        assert [a.status_code for a in answers] == [413] * 4
        assert _peak_rss(server) - before < 4 * 50 * MB
        assert http.get("/health").status_code == 200
        assert http.post("/api/v1/lineage", json=normal).status_code == 201  # a duplicate
    with store.read() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM events").scalar() == 1
