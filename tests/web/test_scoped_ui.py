"""The web UI for a token limited to some namespaces (design §5), in a real browser
(Playwright driving Debian's Chromium, as `test_web_ui.py` does): the graph view draws only
what the token may see and says how many nodes were hidden, never which.

The estate is that of `tests/access/estate.py`; the browser sends the token with every
request, the page's own included."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.access.estate import ADMIN, FIN_DS, SETTINGS_TOKENS, WRITE_ALL, bearer, estate_events
from tests.conftest import LiveServer, system_program
from tests.web.test_web_ui import _graph, browser

__all__ = ["browser"]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    system_program("chromium")
    folder = tmp_path_factory.mktemp("scoped-ui")
    shutil.copy(sqlite_template, folder / "upstream.db")
    live = LiveServer(
        f"sqlite:///{folder / 'upstream.db'}", folder, env={"UPSTREAM_TOKENS": SETTINGS_TOKENS}
    ).start()
    try:
        posted = httpx.post(
            f"{live.url}/api/v1/lineage", json=estate_events(), headers=bearer(WRITE_ALL)
        )
        assert posted.status_code == 201, posted.text
        yield live
    finally:
        live.stop()


def _token(server: LiveServer, *scopes: str) -> str:
    body = {"name": "ui", "scopes": list(scopes)}
    issued = httpx.post(f"{server.url}/v3/tokens", json=body, headers=bearer(ADMIN))
    assert issued.status_code == 201, issued.text
    token: str = issued.json()["token"]
    return token


def _invoices_graph(browser: Any, server: LiveServer, token: str) -> tuple[dict[str, Any], str]:
    """What the graph centred on finance's invoices draws for `token`, and its status line."""
    context = browser.new_context(
        viewport={"width": 1400, "height": 900}, extra_http_headers=bearer(token)
    )
    page = context.new_page()
    try:
        ns = quote(FIN_DS, safe="")
        page.goto(f"{server.url}/#/graph?type=dataset&ns={ns}&name=invoices&window=all")
        drawn = _graph(page, "invoices")
        status = page.locator("#graph-status").text_content() or ""
        return drawn, status
    finally:
        context.close()


def test_the_graph_says_how_many_nodes_the_token_hid(server: LiveServer, browser: Any) -> None:
    finance = _token(server, "read:finance/*")
    drawn, status = _invoices_graph(browser, server, finance)
    # Around the invoices a finance reader sees finance's jobs and datasets only; the walk
    # stopped at crm's customers and churn and hr's salaries.
    assert sorted(n.split("\n")[0] for n in drawn["labels"]) == sorted(
        ["build_invoices", "costs", "costs", "invoices", "orders"]
    )
    assert "3 nodes hidden by your access." in status
    assert "customers" not in json.dumps(drawn) + status


def test_a_full_token_sees_no_hidden_note(server: LiveServer, browser: Any) -> None:
    drawn, status = _invoices_graph(browser, server, _token(server, "read:*"))
    assert len(drawn["labels"]) == 13  # the whole estate: 8 datasets, 5 jobs
    assert "hidden" not in status
