"""The "Watch" control of the dataset, field and tag pages in a real browser (Playwright and
Debian's Chromium, as `test_web_ui`): a subscription made from each page, a refusal shown in
the server's words naming the field, and a notification reaching a real receiver after a
subscription made from the dataset page.

The pages: `customers(id, email)` is read by `copy_contacts`, which writes
`contacts(contact)` with contact <- customers.email; customers.email carries the tag PII.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.builders import column_lineage, ds, run_event, schema_facet
from tests.conftest import LiveServer, system_program
from tests.watch_support import Receiver, receiver_running, recent
from tests.web.test_web_ui import browser, page

__all__ = ["browser", "page"]

pytestmark = pytest.mark.slow

NS = "watched"


@pytest.fixture(scope="module")
def server(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose watcher runs often and may post to the loopback receiver."""
    system_program("chromium")
    folder = tmp_path_factory.mktemp("watch-ui")
    shutil.copy(sqlite_template, folder / "upstream.db")
    env = {"UPSTREAM_ALLOW_PRIVATE_WEBHOOKS": "true", "UPSTREAM_WATCH_POLL_SECONDS": "0.05"}
    live = LiveServer(f"sqlite:///{folder / 'upstream.db'}", folder, env).start()
    try:
        customers = ds(NS, "customers", schema=schema_facet(("id", "int"), ("email", "string")))
        contacts = ds(
            NS,
            "contacts",
            schema=schema_facet(("contact", "string")),
            columnLineage=column_lineage({"contact": [(NS, "customers", "email")]}),
        )
        event = run_event(
            (NS, "copy_contacts"), time=recent(), inputs=[customers], outputs=[contacts]
        )
        assert httpx.post(f"{live.url}/api/v1/lineage", json=event).status_code == 201
        tagged = f"{live.url}/api/v1/namespaces/{NS}/datasets/customers/fields/email/tags/PII"
        assert httpx.post(tagged).status_code == 200
        yield live
    finally:
        live.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    yield from receiver_running()


def _subscribe(page: Any, url: str, **fields: str) -> None:
    page.click("details.watch > summary")
    page.fill("details.watch input[name=watch-webhook]", url)
    for name, value in fields.items():
        page.fill(f"details.watch input[name=watch-{name}]", value)
    page.click("details.watch button[type=submit]")


def _kinds(page: Any) -> list[str]:
    boxes = page.query_selector_all("details.watch input[name=watch-changes]")
    return [box.get_attribute("value") for box in boxes]


def _subscriptions(server: LiveServer) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = httpx.get(f"{server.url}/v3/subscriptions").json()[
        "subscriptions"
    ]
    return listed


def test_watch_a_dataset_from_its_page_and_be_told(
    server: LiveServer, page: Any, receiver: Receiver
) -> None:
    page.goto(f"{server.url}/#/dataset?ns={NS}&name=customers")
    page.wait_for_selector("details.watch")
    assert _kinds(page) == [
        "relation_added",
        "relation_removed",
        "field_edges_changed",
        "schema_break",
        "deleted",
        "revived",
        "run_failed",
    ]
    _subscribe(page, receiver.url)
    page.wait_for_selector(".watch-answer .subscription-id")
    made = page.inner_text(".watch-answer .subscription-id")
    secret = page.inner_text(".watch-answer .subscription-secret")
    assert len(secret) >= 32
    [listed] = [s for s in _subscriptions(server) if s["id"] == made]
    assert listed["watch"] == {"dataset": {"namespace": NS, "name": "customers"}}
    assert listed["direction"] == "downstream"

    reader = run_event(
        (NS, "audit"), time=recent(), inputs=[ds(NS, "customers")], outputs=[ds(NS, "audit")]
    )
    assert httpx.post(f"{server.url}/api/v1/lineage", json=reader).status_code == 201
    deadline = time.monotonic() + 60
    while not receiver.received and time.monotonic() < deadline:
        time.sleep(0.05)
    [sent] = receiver.documents()
    assert sent["subscription"] == made
    assert sent["changes"] == ["relation_added"]


def test_watch_a_field_and_see_a_refusal_name_the_field(
    server: LiveServer, page: Any, receiver: Receiver
) -> None:
    page.goto(f"{server.url}/#/fields?ns={NS}&name=customers&field=email")
    page.wait_for_selector("details.watch")
    assert _kinds(page) == ["field_edges_changed", "schema_break"]
    _subscribe(page, receiver.url, levels="101")
    page.wait_for_selector(".watch-answer .notice-error")
    assert "levels" in page.inner_text(".watch-answer")
    assert "between 1 and" in page.inner_text(".watch-answer")
    page.fill("details.watch input[name=watch-levels]", "2")
    page.click("details.watch button[type=submit]")
    page.wait_for_selector(".watch-answer .subscription-id")
    made = page.inner_text(".watch-answer .subscription-id")
    [listed] = [s for s in _subscriptions(server) if s["id"] == made]
    assert listed["watch"] == {"field": {"namespace": NS, "name": "customers", "field": "email"}}
    assert listed["levels"] == 2


def test_watch_a_tag_as_an_hourly_digest(server: LiveServer, page: Any, receiver: Receiver) -> None:
    page.goto(f"{server.url}/#/tag?tag=PII")
    page.wait_for_selector("details.watch")
    page.click("details.watch > summary")
    page.select_option("details.watch select[name=watch-digest]", "PT1H")
    page.uncheck("details.watch input[value=schema_break]")
    page.fill("details.watch input[name=watch-webhook]", receiver.url)
    page.click("details.watch button[type=submit]")
    page.wait_for_selector(".watch-answer .subscription-id")
    made = page.inner_text(".watch-answer .subscription-id")
    [listed] = [s for s in _subscriptions(server) if s["id"] == made]
    assert listed["watch"] == {"tag": "PII"}
    assert listed["changes"] == ["field_edges_changed"]
    assert listed["digest"] == 3600
