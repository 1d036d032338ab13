"""The web UI in a real browser: Playwright for Python driving Debian's Chromium against a live
`upstream serve` with seeded lineage (design §5).

A user's walk — search → dataset page → graph → field paths — with assertions on what is drawn
(node labels, edge counts, path steps), exploring in place (paths highlighted, expand and
collapse, filters, search, paths between two nodes, the column view), time windows that carry
across views, workflows' pages, hostile names shown as text, and 600- and 1,000-node graphs
whose times to first paint and to fully drawn are written to test-artifacts/. Screenshots go to
test-artifacts/, and with UPSTREAM_DOCS_SCREENSHOTS=1 those the docs show also to docs/images/
(`scripts/docs-screenshots`). The browser tests run on SQLite only: the rest of the suite covers
both stores behind the APIs the UI reads.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

import httpx
import pytest

from tests.builders import PRODUCER, column_lineage, ds, run_event, schema_facet
from tests.conftest import LiveServer, system_program
from upstream import Destination, FieldOperation, LineageRecorder, Source
from upstream.model.facets import TEMPORARY_FACET

pytestmark = pytest.mark.slow

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

NS = "myns"
RAW_NS = "s3://raw-bucket"
RAW_FILE = "users/2026 export.csv"
HOSTILE = (
    'report "q" <script>window.__pwned=1</script><img src=x onerror=window.__pwned=2> — Zürich ✓'
)
HOSTILE_JOB = "publish 'it' <b>bold</b>"

#: Tree of the generated graph: 8 jobs read each dataset and write one dataset each, 3 deep.
FANOUT = 8
DEPTH = 3


def _recent(hours_ago: float = 1) -> datetime:
    return datetime.now(UTC) - timedelta(hours=hours_ago)


def _temporary() -> dict[str, Any]:
    return {TEMPORARY_FACET: {"_producer": PRODUCER, "_schemaURL": PRODUCER, "temporary": True}}


def _post(url: str, events: list[dict[str, Any]]) -> None:
    response = httpx.post(f"{url}/api/v1/lineage", json=events, timeout=120)
    assert response.status_code == 201, response.text


def _seed(url: str) -> None:
    """A workflow with a temporary dataset feeds seed 000's program, whose output a job with a
    hostile name publishes:

        RAW_FILE → ingest_users → staging_tmp (temporary) → load_users → user_data
          (ingest_users and load_users run inside workflow `nightly`)
        user_data → ETLMapReduce (seed 000's operations) → mytableds → HOSTILE_JOB → HOSTILE
    """
    workflow_run = str(uuid.uuid4())
    nightly = (NS, "nightly")
    parent = (nightly, workflow_run)
    _post(
        url,
        [
            run_event(nightly, run_id=workflow_run, event_type="START", time=_recent(2)),
            run_event(
                (NS, "ingest_users"),
                time=_recent(1.5),
                inputs=[ds(RAW_NS, RAW_FILE)],
                outputs=[
                    ds(
                        NS,
                        "staging_tmp",
                        **_temporary(),
                        columnLineage=column_lineage({"payload": [(RAW_NS, RAW_FILE, "line")]}),
                    )
                ],
                parent=parent,
            ),
            run_event(
                (NS, "load_users"),
                time=_recent(1.2),
                inputs=[ds(NS, "staging_tmp")],
                outputs=[
                    ds(
                        NS,
                        "user_data",
                        columnLineage=column_lineage({"body": [(NS, "staging_tmp", "payload")]}),
                    )
                ],
                parent=parent,
            ),
            run_event(nightly, run_id=workflow_run, time=_recent(1)),
        ],
    )
    users = Source(NS, "user_data", "files contains user information")
    operations = [
        FieldOperation(
            "read", "Reading the data from the file", inputs=[users], outputs=["offset", "body"]
        ),
        FieldOperation(
            "parse",
            "parsing the input body field",
            inputs=["body"],
            outputs=["firstName", "lastName", "age", "city", "state"],
        ),
        FieldOperation(
            "concat",
            "concatenating the first name and last name",
            inputs=["firstName", "lastName"],
            outputs=["name"],
        ),
        FieldOperation("drop", "deleting the first name field", inputs=["firstName"]),
        FieldOperation("drop", "deleting the last name field", inputs=["lastName"]),
        FieldOperation(
            "create",
            "creating unique id from the name field",
            inputs=["name"],
            outputs=["uniqueId"],
        ),
    ]
    recorder = LineageRecorder.http(url)
    with recorder.run(NS, "ETLMapReduce") as run:
        run.record(Destination(NS, "mytableds"), operations)
    _post(
        url,
        [
            run_event(
                (NS, HOSTILE_JOB),
                time=_recent(0.5),
                inputs=[ds(NS, "mytableds")],
                outputs=[
                    ds(
                        NS,
                        HOSTILE,
                        columnLineage=column_lineage({"id": [(NS, "mytableds", "uniqueId")]}),
                    )
                ],
            )
        ],
    )


def _tree_events() -> list[dict[str, Any]]:
    """A generated graph of 1 + 2·(8 + 64 + 512) = 1,169 nodes: each dataset is read by 8 jobs
    that write one dataset each, 3 levels deep; below the first level every job also reads a
    dataset of another branch, so the layout has crossing edges to sort out."""
    events: list[dict[str, Any]] = []
    level = ["big/root"]
    when = _recent(0.2)
    for depth in range(1, DEPTH + 1):
        following: list[str] = []
        for i, parent_name in enumerate(level):
            for j in range(FANOUT):
                child = f"big/d{depth}_{i}_{j}"
                inputs = [ds("big", parent_name)]
                if depth > 1:
                    other = level[(i * 7 + j + 1) % len(level)]
                    if other != parent_name:
                        inputs.append(ds("big", other))
                events.append(
                    run_event(
                        ("big", f"job{depth}_{i}_{j}"),
                        time=when,
                        inputs=inputs,
                        outputs=[ds("big", child)],
                    )
                )
                following.append(child)
        level = following
    return events


def _tree_sizes() -> tuple[int, int]:
    """Nodes and edges of the generated graph, counted from the events themselves."""
    events = _tree_events()
    datasets = {"big/root"} | {e["outputs"][0]["name"] for e in events}
    edges = sum(len(e["inputs"]) + len(e["outputs"]) for e in events)
    return len(datasets) + len(events), edges


@pytest.fixture(scope="module")
def server(sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One server for the module with the test graph, on a copy of the migrated SQLite
    template."""
    system_program("chromium")
    folder = tmp_path_factory.mktemp("web-ui")
    shutil.copy(sqlite_template, folder / "upstream.db")
    live = LiveServer(f"sqlite:///{folder / 'upstream.db'}", folder).start()
    try:
        _seed(live.url)
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def big_graph(server: LiveServer) -> tuple[int, int]:
    """The generated graph, posted as events; its node and edge counts."""
    _post(server.url, _tree_events())
    return _tree_sizes()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    chromium_path = system_program("chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path, args=CHROMIUM_ARGS, headless=True
        )
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    # A refused API request is shown in the page (and asserted on); any other error is a bug,
    # and so is a warning (Cytoscape warns of style values it drops).
    page.on(
        "console",
        lambda msg: (
            errors.append(f"{msg.type}: {msg.text}")
            if msg.type in ("error", "warning")
            and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield page
    context.close()
    assert errors == [], f"the page reported errors: {errors}"


def _shot(page: Any, name: str, *, docs: bool = False) -> None:
    """A screenshot in test-artifacts/; one the docs show also in docs/images/ when asked."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"web-ui-{name}.png"), full_page=True)
    if docs and os.environ.get("UPSTREAM_DOCS_SCREENSHOTS") == "1":
        DOC_IMAGES.mkdir(exist_ok=True)
        page.screenshot(path=str(DOC_IMAGES / f"web-ui-{name}.png"))


def _graph(page: Any, centre: str | None) -> dict[str, Any]:
    """Wait until the whole graph centred on `centre` is drawn (None: a graph without a centre
    node, such as a workflow's jobs); return what it shows."""
    page.wait_for_function(
        """(centre) => {
            const g = window.__upstreamGraph;
            if (!g || !g.complete || g.route !== location.hash) return false;
            return centre === null
                || g.cy.nodes('[?centre]').map((n) => n.data('name')).includes(centre);
        }""",
        arg=centre,
        timeout=60_000,
    )
    drawn: dict[str, Any] = page.evaluate(
        """() => {
            const g = window.__upstreamGraph;
            const name = (id) => g.cy.getElementById(id).data('name');
            const nodes = g.cy.nodes("[kind != 'field']");
            return {
                labels: nodes.map((n) => n.data('label')).sort(),
                captions: nodes.map((n) => n.data('caption')),
                temporary: nodes.filter('[?temporary]').map((n) => n.data('name')),
                edges: g.cy.edges('[!field]')
                    .map((e) => [name(e.data('source')), name(e.data('target'))]).sort(),
                ms: g.drawnAt - g.requestedAt,
                firstPaintMs: g.firstPaintAt - g.requestedAt,
                fetchMs: g.receivedAt - g.requestedAt,
                layoutMs: g.laidOutAt - g.receivedAt,
            };
        }"""
    )
    return drawn


def _click_node(page: Any, name: str, *, double: bool = False, field: str | None = None) -> None:
    """Click a node (or a dataset's field row) where it is drawn, as a user would; the node
    is brought into view first."""
    point = page.evaluate(
        """([name, field]) => {
            const g = window.__upstreamGraph;
            const node = g.cy.nodes().filter((n) => n.data('name') === name
                && (field === null ? n.data('kind') !== 'field' : n.data('field') === field))[0];
            g.cy.center(node);
            const box = g.cy.container().getBoundingClientRect();
            const at = node.renderedPosition();
            return {x: box.left + at.x, y: box.top + at.y};
        }""",
        [name, field],
    )
    if double:
        page.mouse.dblclick(point["x"], point["y"])
    else:
        page.mouse.click(point["x"], point["y"])


def _hash(page: Any) -> str:
    hash_: str = page.evaluate("() => location.hash")
    return hash_


def _state(page: Any) -> dict[str, str]:
    """The parameters of the view's URL."""
    query = _hash(page).partition("?")[2]
    return dict(parse_qsl(query))


def _texts(page: Any, selector: str) -> list[str]:
    return [text.strip() for text in page.locator(selector).all_inner_texts()]


def test_search_to_graph_to_field_paths(server: LiveServer, page: Any) -> None:
    page.goto(server.url + "/")
    page.fill("#topsearch input", "user")
    page.press("#topsearch input", "Enter")
    page.wait_for_selector("table.results")
    rows = [row.split("\t") for row in _texts(page, "table.results tbody tr")]
    found = {(cells[0], cells[1], cells[2]) for cells in rows}
    assert ("dataset", "user_data", NS) in found
    assert ("job", "ingest_users", NS) in found
    assert ("job", "load_users", NS) in found
    _shot(page, "1-search")

    page.fill("#topsearch input", "mytable")
    page.press("#topsearch input", "Enter")
    page.click("table.results a.entity:text-is('mytableds')")
    page.wait_for_selector("table.fields")
    fields = _texts(page, "table.fields tbody td:first-child")
    assert {"uniqueId", "name", "offset"} <= set(fields)
    assert "firstName" not in fields  # dropped by the program
    page.wait_for_selector("table.runs")
    assert _texts(page, "table.writers tbody td:nth-child(2)") == ["ETLMapReduce"]
    assert _texts(page, "table.readers tbody td:nth-child(2)") == [HOSTILE_JOB]
    # Newest first: the reader ran after the writer.
    assert _texts(page, "table.runs tbody td:first-child") == ["ETLMapReduce", HOSTILE_JOB]
    assert _texts(page, "table.runs tbody td:nth-child(2)") == ["write", "read"]
    assert _texts(page, "table.runs tbody td:nth-child(3)") == ["COMPLETE", "COMPLETE"]
    _shot(page, "2-dataset")

    page.click("a.button:text-is('Lineage graph')")
    page.fill("input[name=levels]", "3")
    page.locator("input[name=levels]").dispatch_event("change")
    drawn = _graph(page, "mytableds")
    assert drawn["labels"] == sorted(
        [
            RAW_FILE,
            "ingest_users",
            "staging_tmp (temporary)",
            "load_users",
            "user_data",
            "ETLMapReduce",
            "mytableds",
            HOSTILE_JOB,
            HOSTILE,
        ]
    )
    assert drawn["temporary"] == ["staging_tmp"]
    assert drawn["edges"] == sorted(
        [
            [RAW_FILE, "ingest_users"],
            ["ingest_users", "staging_tmp"],
            ["staging_tmp", "load_users"],
            ["load_users", "user_data"],
            ["user_data", "ETLMapReduce"],
            ["ETLMapReduce", "mytableds"],
            ["mytableds", HOSTILE_JOB],
            [HOSTILE_JOB, HOSTILE],
        ]
    )
    assert "levels=3" in _hash(page)
    _shot(page, "3-graph", docs=True)

    page.check("input[name=rollup]")
    assert "rollup=workflow" in _hash(page)
    rolled = _graph(page, "mytableds")
    assert "▣ nightly" in rolled["labels"]
    assert "staging_tmp (temporary)" not in rolled["labels"]
    assert "ingest_users" not in rolled["labels"]
    assert len(rolled["edges"]) == 6
    _shot(page, "4-graph-rollup")

    # The URL holds the view: opening it afresh draws the same graph.
    shared = f"{server.url}/{_hash(page)}"
    page.goto("about:blank")
    page.goto(shared)
    assert sorted(_graph(page, "mytableds")["labels"]) == rolled["labels"]
    assert page.is_checked("input[name=rollup]")

    page.uncheck("input[name=rollup]")
    everything = _graph(page, "mytableds")["labels"]

    # The last hour holds the runs of ETLMapReduce and the publisher, not the workflow's.
    page.select_option("select[name=window]", "1h")
    assert "window=1h" in _hash(page)
    assert _graph(page, "mytableds")["labels"] == sorted(
        ["user_data", "ETLMapReduce", "mytableds", HOSTILE_JOB, HOSTILE]
    )
    page.select_option("select[name=window]", "custom")
    state = _hash(page)
    assert "window=custom" in state
    assert "start=" in state
    assert "end=" in state
    assert _graph(page, "mytableds")["labels"] == everything  # custom starts as the last 7 days

    page.check("input[name=collapse-run]")
    assert "collapse=run" in _hash(page)
    assert _graph(page, "mytableds")["labels"] == everything

    page.select_option("select[name=direction]", "upstream")
    assert "direction=upstream" in _hash(page)
    upstream = _graph(page, "mytableds")
    assert upstream["labels"] == sorted(
        [
            RAW_FILE,
            "ingest_users",
            "staging_tmp (temporary)",
            "load_users",
            "user_data",
            "ETLMapReduce",
            "mytableds",
        ]
    )

    _click_node(page, "user_data", double=True)
    assert "name=user_data" in _hash(page)
    recentred = _graph(page, "user_data")
    assert "mytableds" not in recentred["labels"]  # upstream of user_data only
    assert recentred["labels"] == sorted(
        [RAW_FILE, "ingest_users", "staging_tmp (temporary)", "load_users", "user_data"]
    )
    _shot(page, "5-graph-recentred")

    page.goto(f"{server.url}/#/fields?ns={NS}&name=mytableds")
    page.click("#field-list a:text-is('uniqueId')")
    page.wait_for_selector("article.path")
    steps = _texts(page, "article.path .step-name")
    assert steps == ["read", "parse", "concat", "create"]
    assert _texts(page, "article.path .step-description") == [
        "Reading the data from the file",
        "parsing the input body field",
        "concatenating the first name and last name",
        "creating unique id from the name field",
    ]
    assert _texts(page, "article.path .path-runs")[0].startswith("1 run: ")
    outgoing = _texts(page, ".summary.outgoing > ul > li")
    assert len(outgoing) == 1
    assert outgoing[0].startswith(HOSTILE)
    assert page.locator(".summary.outgoing .chips a").all_inner_texts() == ["id"]
    _shot(page, "6-field-paths")


def test_home_shows_the_estate_paged(server: LiveServer, page: Any) -> None:
    """The home page lists namespaces with their counts, the datasets written last, and each
    job's latest run with the failed ones first; each list pages through its API list."""
    shop = "a-shop"  # first by name among the namespaces
    more = [run_event((f"z-more-{i:02}", "job"), time=_recent(3)) for i in range(10)]
    _post(
        server.url,
        [
            *more,
            run_event((shop, "shop_load"), time=_recent(0.02), outputs=[ds(shop, "shop_orders")]),
            run_event(
                (shop, "shop_totals"),
                event_type="FAIL",
                time=datetime.now(UTC),
                inputs=[ds(shop, "shop_orders")],
                outputs=[ds(shop, "shop_revenue")],
            ),
        ],
    )
    page.goto(f"{server.url}/")
    page.wait_for_selector("#home-runs table")
    runs = page.locator("#home-runs tbody tr").first.locator("td")
    assert runs.nth(0).inner_text() == "FAIL"
    assert runs.nth(1).inner_text() == "shop_totals"
    assert "failed or was aborted; they come first" in page.locator("#home-runs").inner_text()
    page.wait_for_selector("#home-written table")
    first_written = page.locator("#home-written tbody tr").first.locator("td")
    assert first_written.nth(0).inner_text() == "shop_revenue"  # written a minute after orders
    page.wait_for_selector("#home-namespaces table")
    row = page.locator("#home-namespaces tbody tr").first.locator("td")
    assert [row.nth(i).inner_text() for i in range(3)] == [shop, "2", "2"]
    total = httpx.get(f"{server.url}/v3/namespaces").json()["totalCount"]
    assert total > 10  # more than one page
    pager = page.locator("#home-namespaces .pager")
    assert pager.locator(".page-range").inner_text() == f"1\N{EN DASH}10 of {total}"
    pager.locator("button[name=next]").click()
    page.wait_for_function(
        "() => document.querySelector('#home-namespaces .page-range').textContent.startsWith('11')"
    )
    names = _texts(page, "#home-namespaces tbody td:first-child")
    assert shop not in names
    assert names == sorted(names)
    page.locator("#home-namespaces button[name=previous]").click()
    page.wait_for_function(
        "() => document.querySelector('#home-namespaces .page-range').textContent"
        ".startsWith('1\N{EN DASH}')"
    )
    _shot(page, "1-home", docs=True)
    page.fill("form.search-form input", "shop_revenue")
    page.press("form.search-form input", "Enter")
    page.wait_for_selector("table.results")
    assert _state(page) == {"q": "shop_revenue"}


DQ = "quality"
ORDERS_SQL = "SELECT id, amount -- the total\nFROM raw.orders WHERE amount > 0 AND note <> 'x'"


@pytest.fixture(scope="module")
def history(server: LiveServer) -> str:
    """quality/orders written twice by build_orders (id INT → BIGINT, note dropped, status
    added), owned by team-payments and tagged tier=gold; then dbt_test checks two assertions
    on it, one of which fails."""
    owners = {
        "_producer": PRODUCER,
        "_schemaURL": PRODUCER,
        "owners": [{"name": "team-payments", "type": "TEAM"}],
    }
    tier = [{"key": "tier", "value": "gold"}]
    tags = {"_producer": PRODUCER, "_schemaURL": PRODUCER, "tags": tier}
    sql = {"_producer": PRODUCER, "_schemaURL": PRODUCER, "query": ORDERS_SQL}
    v1 = schema_facet(("id", "INT"), ("amount", "INT"), ("note", "STRING"))
    v2 = schema_facet(("id", "BIGINT"), ("amount", "INT"), ("status", "STRING"))
    checked = {
        "namespace": DQ,
        "name": "orders",
        "inputFacets": {
            "dataQualityAssertions": {
                "_producer": PRODUCER,
                "_schemaURL": PRODUCER,
                "assertions": [
                    {"assertion": "not_null", "success": True, "column": "id"},
                    {"assertion": "unique", "success": False, "column": "id"},
                ],
            }
        },
    }
    _post(
        server.url,
        [
            run_event(
                (DQ, "build_orders"),
                time=_recent(3),
                job_facets={"sql": sql},
                outputs=[ds(DQ, "orders", schema=v1)],
            ),
            run_event(
                (DQ, "build_orders"),
                time=_recent(2),
                job_facets={"sql": sql},
                outputs=[ds(DQ, "orders", schema=v2, ownership=owners, tags=tags)],
            ),
            run_event((DQ, "dbt_test"), time=_recent(1), inputs=[checked]),
        ],
    )
    return server.url


def test_dataset_page_shows_versions_quality_owners_and_tags(history: str, page: Any) -> None:
    page.goto(f"{history}/#/dataset?ns={DQ}&name=orders")
    page.wait_for_selector("table.versions")
    rows = page.locator("table.versions tbody tr")
    assert rows.count() == 2
    newest = rows.nth(0).locator("td")
    assert newest.nth(1).locator("a.entity").inner_text() == "build_orders"
    assert newest.nth(2).inner_text() == "3"
    assert _texts(page, "table.versions tbody tr:first-child li") == [
        "+ status STRING",
        "\N{MINUS SIGN} note STRING",
        "~ id: INT \N{RIGHTWARDS ARROW} BIGINT",
    ]
    assert rows.nth(1).locator("td").nth(3).inner_text() == "First version: 3 fields"
    page.wait_for_selector("table.quality")
    quality = page.locator("table.quality tbody tr")
    assert quality.count() == 1
    cells = quality.first.locator("td")
    assert cells.nth(0).inner_text() == "1 of 2 failed"
    assert _texts(page, "table.quality .passed") == ["\N{CHECK MARK} not_null on id"]
    assert _texts(page, "table.quality .failed") == ["\N{BALLOT X} unique on id"]
    assert cells.nth(2).inner_text() == "dbt_test"
    run_link = cells.nth(3).locator("a").get_attribute("href")
    assert run_link is not None
    assert run_link.startswith("#/run?id=")
    assert page.locator("#dataset-owners").inner_text() == "Owners: team-payments (TEAM)"
    assert "tier=gold" in page.locator("#dataset-tags").inner_text()
    _shot(page, "5-dataset-history", docs=True)


def test_job_page_shows_its_sql_highlighted_and_copyable(history: str, browser: Any) -> None:
    context = browser.new_context(
        viewport={"width": 1400, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    try:
        page.goto(f"{history}/#/job?ns={DQ}&name=build_orders")
        page.wait_for_selector("#job-sql code")
        assert page.locator("#job-sql code").text_content() == ORDERS_SQL
        keywords = _texts(page, "#job-sql .sql-keyword")
        assert keywords == ["SELECT", "FROM", "WHERE", "AND"]
        assert _texts(page, "#job-sql .sql-string") == ["'x'"]
        assert _texts(page, "#job-sql .sql-comment") == ["-- the total"]
        assert _texts(page, "#job-sql .sql-number") == ["0"]
        page.click("button[name=copy-sql]")
        page.wait_for_selector("button[name=copy-sql]:text-is('Copied')")
        assert page.evaluate("() => navigator.clipboard.readText()") == ORDERS_SQL
        # Its runs with durations and states, newest first.
        assert _texts(page, "table.runs tbody td:first-child") == ["COMPLETE", "COMPLETE"]
        _shot(page, "7-job-sql", docs=True)
    finally:
        context.close()


#: Namespace → the platform icon it gets (None: a namespace with no known scheme).
PLATFORMS = {
    "postgres://db.example:5432": "postgresql",
    "bigquery": "bigquery",
    "s3://lake": "s3",
    "gs://lake": "gcs",
    "kafka://broker:9092": "kafka",
    "hdfs://namenode:8020": "hdfs",
    "file": "file",
    "warehouse_misc": None,
    "mysql://db:3306": "mysql",
    "constructor": None,  # a name, not a key of some object
}
JOB_PLATFORMS = {
    "airflow-prod": "airflow",
    "dbt-analytics": "dbt",
    "spark://cluster": "spark",
    "toString": None,
}


def test_namespaces_show_their_platforms_icon(server: LiveServer, page: Any) -> None:
    """Search results name each namespace after its platform's icon, from its scheme (or, for
    a job namespace, the tool's name in it); an unknown one has none."""
    names = list(PLATFORMS)
    events = [
        run_event(
            (job_ns, f"iconjob_{i}"),
            time=_recent(1),
            inputs=[ds(names[2 * i], f"iconset_{2 * i}")],
            outputs=[ds(names[2 * i + 1], f"iconset_{2 * i + 1}")],
        )
        for i, job_ns in enumerate([*JOB_PLATFORMS, "plain_jobs"])
    ]
    _post(server.url, events)
    page.goto(f"{server.url}/#/search?q=icon")
    page.wait_for_selector("table.results")
    shown = page.evaluate(
        """() => [...document.querySelectorAll('table.results tbody tr')].map((row) => {
            const cell = row.querySelector('.namespace');
            const icon = cell.querySelector('svg.platform');
            const box = icon ? icon.getBoundingClientRect() : null;
            return [cell.innerText.trim(), icon ? icon.dataset.platform : null,
                    box ? box.width * box.height : 0];
        })"""
    )
    expected = {**PLATFORMS, **JOB_PLATFORMS, "plain_jobs": None}
    assert {namespace: platform for namespace, platform, _ in shown} == expected
    assert all(area == 16 * 16 for _, platform, area in shown if platform)
    page.goto(f"{server.url}/#/dataset?ns={quote(RAW_NS, safe='')}&name={_quote(RAW_FILE)}")
    icon = page.wait_for_selector(".page-head svg.platform")
    assert icon.get_attribute("aria-label") == "Amazon S3"


def test_field_view_marks_lineage_read_from_sql(server: LiveServer, page: Any) -> None:
    """A job that sent only its SQL: the field view says the lineage came from it."""
    ns = "postgres://warehouse:5432"
    event = run_event(
        ("etl", "daily_totals"),
        time=_recent(),
        inputs=[ds(ns, "shop.public.orders")],
        outputs=[ds(ns, "shop.public.daily")],
        job_facets={
            "sql": {
                "_producer": PRODUCER,
                "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/SQLJobFacet.json",
                "query": "INSERT INTO public.daily (total) SELECT sum(amount) FROM public.orders",
            }
        },
    )
    _post(server.url, [event])
    page.goto(f"{server.url}/#/fields?ns={quote(ns, safe='')}&name=shop.public.daily&field=total")
    page.wait_for_selector(".summary.incoming .chips li")
    assert _texts(page, ".summary.incoming .chips a") == ["amount"]
    badge = page.locator(".summary.incoming .chips .origin")
    assert badge.inner_text() == "SQL"
    assert badge.get_attribute("title") == "read by Upstream from the job's SQL"
    _shot(page, "7-field-from-sql")


def test_job_page_shows_runs_io_and_parent_workflow(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/job?ns={NS}&name=load_users")
    page.wait_for_selector("table.runs")
    # OpenLineage's word for the state, as the run graph says it, not Marquez's COMPLETED.
    assert _texts(page, "table.runs tbody td:first-child") == ["COMPLETE"]
    started = page.locator("table.runs tbody td:nth-child(2) time").get_attribute("datetime")
    assert started is not None
    assert datetime.fromisoformat(started) > datetime.now(UTC) - timedelta(hours=3)
    assert page.locator("#parent-workflow a").inner_text() == "nightly"
    tables = page.locator("section.card table")
    assert "staging_tmp" in tables.nth(1).inner_text()  # inputs
    assert "user_data" in tables.nth(2).inner_text()  # outputs
    _shot(page, "7-job")

    page.click("a.button:text-is('Lineage graph')")
    drawn = _graph(page, "load_users")
    # Three levels (the default) of dataset lineage from the job's datasets reach everything.
    assert drawn["labels"] == sorted(
        [
            RAW_FILE,
            "ingest_users",
            "staging_tmp (temporary)",
            "load_users",
            "user_data",
            "ETLMapReduce",
            "mytableds",
            HOSTILE_JOB,
            HOSTILE,
        ]
    )
    assert len(drawn["edges"]) == 8
    page.fill("input[name=levels]", "1")
    page.locator("input[name=levels]").dispatch_event("change")
    # One level from staging_tmp and from user_data: their jobs and those jobs' datasets.
    assert _graph(page, "load_users")["labels"] == sorted(
        [
            RAW_FILE,
            "ingest_users",
            "staging_tmp (temporary)",
            "load_users",
            "user_data",
            "ETLMapReduce",
            "mytableds",
        ]
    )

    page.go_back()  # the browser's history walks back through the views
    _graph(page, "load_users")
    page.go_back()
    page.click("#parent-workflow a")
    page.wait_for_selector("h1 .entity-name:text-is('nightly')")


def test_hostile_names_are_shown_as_text(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/search?q=report")
    page.wait_for_selector("table.results")
    assert _texts(page, "table.results a.entity") == [HOSTILE]
    page.click("table.results a.entity")
    page.wait_for_selector("h1 .entity-name")
    assert page.locator("h1 .entity-name").inner_text() == HOSTILE
    assert page.locator("img[src=x]").count() == 0
    page.click("a.button:text-is('Lineage graph')")
    labels = _graph(page, HOSTILE)["labels"]
    assert HOSTILE in labels
    assert HOSTILE_JOB in labels
    page.goto(f"{server.url}/#/job?ns={NS}&name={_quote(HOSTILE_JOB)}")
    page.wait_for_selector("h1 .entity-name")
    assert page.locator("h1 .entity-name").inner_text() == HOSTILE_JOB
    assert page.locator("h1 b").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    _shot(page, "8-hostile-names")


def test_names_with_slashes_colons_and_spaces_open(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/search?q=export")
    page.click(f"table.results a.entity:text-is('{RAW_FILE}')")
    page.wait_for_selector("table.readers")
    assert page.locator("h1 .entity-name").inner_text() == RAW_FILE
    assert page.locator(".page-head p.muted").first.inner_text() == RAW_NS
    assert _texts(page, "table.readers tbody td:nth-child(2)") == ["ingest_users"]
    page.click("a.button:text-is('Field lineage')")
    page.wait_for_selector("#field-list, .field-nav .notice")
    assert page.locator("h1 a").inner_text() == RAW_FILE


def test_unknown_dataset_says_so(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/dataset?ns={NS}&name=no_such_thing")
    alert = page.wait_for_selector("[role=alert]")
    assert "no_such_thing" in alert.inner_text()


def test_thousand_node_graph_is_drawn(
    server: LiveServer, big_graph: tuple[int, int], page: Any
) -> None:
    """Request-to-drawn time on a generated graph, measured and written down, not asserted."""
    nodes, edges = big_graph
    page.goto(
        f"{server.url}/#/graph?type=dataset&ns=big&name={_quote('big/root')}"
        "&levels=3&direction=both"
    )
    drawn = _graph(page, "big/root")
    assert len(drawn["labels"]) == nodes
    assert len(drawn["edges"]) == edges
    _shot(page, "9-thousand-nodes")
    _write_timing("web-ui-timing.json", nodes, edges, drawn, page)
    print(
        f"\n{nodes} nodes, {edges} edges: fetched in {drawn['fetchMs']:.0f} ms, laid out in "
        f"{drawn['layoutMs']:.0f} ms, drawn {drawn['ms']:.0f} ms after the request"
    )


def test_ui_is_served_with_cacheable_assets(server: LiveServer) -> None:
    index = httpx.get(f"{server.url}/")
    assert index.status_code == 200
    assert index.headers["cache-control"] == "no-cache"
    assert "script-src 'self'" in index.headers["content-security-policy"]
    script = index.text.split('src="', 1)[1].split('"', 1)[0]
    asset = httpx.get(f"{server.url}/{script}")
    assert asset.status_code == 200
    assert asset.headers["content-type"].startswith("text/javascript")
    assert "immutable" in asset.headers["cache-control"]
    # The licences of the shipped code, with where its source is, reach the browser too.
    notices_link = index.text.split('id="notices"', 1)[0].rsplit('href="', 1)[1].split('"', 1)[0]
    notices = httpx.get(f"{server.url}/{notices_link}")
    assert notices.status_code == 200
    assert "elkjs 0.12.1 (EPL-2.0 OR GPL-3.0-or-later)" in notices.text
    assert "Source code: https://github.com/kieler/elkjs (version 0.12.1)" in notices.text
    assert "Eclipse Public License - v 2.0" in notices.text
    missing = httpx.get(f"{server.url}/assets/nothing.js")
    assert missing.status_code == 404
    assert missing.json()["message"] == "name: no asset called 'nothing.js'"
    assert httpx.get(f"{server.url}/assets/..%2Findex.html").status_code == 404


def _crossings(page: Any) -> int:
    """Pairs of edges that cross between the same two layers (same source and target x):
    one goes above the other at its start and below it at its end."""
    count: int = page.evaluate(
        """() => {
            const spans = new Map();
            window.__upstreamGraph.cy.edges().forEach((e) => {
                const s = e.source().position(), t = e.target().position();
                const key = `${Math.round(s.x)}>${Math.round(t.x)}`;
                if (!spans.has(key)) spans.set(key, []);
                spans.get(key).push([s.y, t.y]);
            });
            let crossings = 0;
            for (const list of spans.values()) {
                for (let i = 0; i < list.length; i++) {
                    for (let j = i + 1; j < list.length; j++) {
                        if ((list[i][0] - list[j][0]) * (list[i][1] - list[j][1]) < 0) crossings++;
                    }
                }
            }
            return crossings;
        }"""
    )
    return count


def _write_timing(name: str, nodes: int, edges: int, drawn: dict[str, Any], page: Any) -> None:
    """A drawn graph's size, times (ms) and crossings in test-artifacts/, for reading, not
    asserting."""
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / name).write_text(
        json.dumps(
            {
                "nodes": nodes,
                "edges": edges,
                "crossings": _crossings(page),
                "fetch_ms": round(drawn["fetchMs"]),
                "first_paint_ms": round(drawn["firstPaintMs"]),
                "layout_ms": round(drawn["layoutMs"]),
                "request_to_drawn_ms": round(drawn["ms"]),
            }
        )
    )


def _quote(text: str) -> str:
    return quote(text, safe="")


def test_ui_works_behind_tokens_after_the_login_prompt(
    sqlite_template: Path, tmp_path: Path, browser: Any
) -> None:
    """With tokens configured the browser asks for a login; a read token as the password opens
    the UI, and the UI's own API requests carry it."""
    shutil.copy(sqlite_template, tmp_path / "upstream.db")
    live = LiveServer(
        f"sqlite:///{tmp_path / 'upstream.db'}",
        tmp_path,
        env={"UPSTREAM_TOKENS": "write:w-secret,read:r-secret"},
    ).start()
    try:
        response = httpx.post(
            f"{live.url}/api/v1/lineage",
            json=run_event((NS, "guarded_job"), time=_recent(), outputs=[ds(NS, "guarded")]),
            headers={"Authorization": "Bearer w-secret"},
        )
        assert response.status_code == 201
        assert httpx.get(f"{live.url}/").status_code == 401
        context = browser.new_context(http_credentials={"username": "ui", "password": "r-secret"})
        page = context.new_page()
        page.goto(f"{live.url}/#/search?q=guarded")
        page.wait_for_selector("table.results")
        assert sorted(_texts(page, "table.results a.entity")) == ["guarded", "guarded_job"]
        context.close()
    finally:
        live.stop()


# -- exploring: a small graph worked out by hand ------------------------------------------------

#: In namespace `paths` (audit_rules in `rules`), each job one run an hour ago:
#:
#:     raw_orders → ingest → clean_orders → revenue_job → daily_revenue → publish → report
#:                           clean_orders → audit_job → order_audit ← rules_job ← audit_rules
#:
#: with columns raw_orders.id/amount → clean_orders.id/amount → daily_revenue.total.
P = "paths"
RULES_NS = "rules"


def _step(
    job: tuple[str, str],
    reads: list[tuple[str, str]],
    writes: tuple[str, str] | None = None,
    columns: dict[str, list[tuple[str, str, str]]] | None = None,
) -> dict[str, Any]:
    """One run an hour ago of `job`, reading `reads` and writing `writes` (with a
    columnLineage facet when `columns` is given)."""
    facets = {"columnLineage": column_lineage(columns)} if columns else {}
    return run_event(
        job,
        time=_recent(1),
        inputs=[ds(*dataset) for dataset in reads],
        outputs=[ds(*writes, **facets)] if writes else [],
    )


def _seed_paths(url: str) -> None:
    raw, clean = (P, "raw_orders"), (P, "clean_orders")
    _post(
        url,
        [
            _step(
                (P, "ingest"),
                [raw],
                clean,
                {"id": [(*raw, "id")], "amount": [(*raw, "amount")]},
            ),
            _step(
                (P, "revenue_job"), [clean], (P, "daily_revenue"), {"total": [(*clean, "amount")]}
            ),
            _step((P, "publish"), [(P, "daily_revenue")], (P, "report")),
            _step((P, "audit_job"), [clean], (P, "order_audit")),
            _step((P, "rules_job"), [(RULES_NS, "audit_rules")], (P, "order_audit")),
        ],
    )


@pytest.fixture(scope="module")
def paths_graph(server: LiveServer) -> str:
    _seed_paths(server.url)
    return server.url


def _classes(page: Any) -> dict[str, list[str]]:
    """Node names (field rows as dataset.field) by the exploring classes they carry."""
    found: dict[str, list[str]] = page.evaluate(
        """() => {
            const g = window.__upstreamGraph;
            const out = {};
            for (const cls of ['selected', 'upstream', 'downstream', 'dimmed', 'filtered',
                               'off-path', 'match']) {
                out[cls] = g.cy.nodes('.' + cls).map((n) => n.data('kind') === 'field'
                    ? `${n.data('name')}.${n.data('field')}` : n.data('name')).sort();
            }
            return out;
        }"""
    )
    return found


def _open_paths(page: Any, url: str, centre: str, extra: str = "") -> dict[str, Any]:
    page.goto(f"{url}/#/graph?type=dataset&ns={P}&name={centre}{extra}")
    return _graph(page, centre)


def test_hover_and_select_highlight_a_nodes_paths(paths_graph: str, page: Any) -> None:
    drawn = _open_paths(page, paths_graph, "clean_orders", "&levels=5")
    assert len(drawn["labels"]) == 11
    _click_node(page, "revenue_job")
    classes = _classes(page)
    assert classes["selected"] == ["revenue_job"]
    assert classes["upstream"] == ["clean_orders", "ingest", "raw_orders"]
    assert classes["downstream"] == ["daily_revenue", "publish", "report"]
    assert classes["dimmed"] == ["audit_job", "audit_rules", "order_audit", "rules_job"]
    lit = page.evaluate(
        """() => window.__upstreamGraph.cy.edges('.upstream, .downstream').length"""
    )
    assert lit == 6  # raw→ingest→clean→revenue_job, revenue_job→daily→publish→report
    assert page.locator("#panel-name").inner_text() == "revenue_job"
    _shot(page, "10-paths", docs=True)
    # Clicking the background lets go; pointing at a node lights its paths until it leaves.
    page.mouse.click(
        *page.evaluate(
            """() => { const b = window.__upstreamGraph.cy.container().getBoundingClientRect();
                       return [b.left + 5, b.top + 5]; }"""
        )
    )
    assert _classes(page)["dimmed"] == []
    assert "selected=" not in _hash(page)


def test_expand_and_collapse_one_hop_in_place(paths_graph: str, page: Any) -> None:
    drawn = _open_paths(page, paths_graph, "clean_orders", "&levels=1")
    assert drawn["labels"] == sorted(
        [
            "raw_orders",
            "ingest",
            "clean_orders",
            "revenue_job",
            "daily_revenue",
            "audit_job",
            "order_audit",
        ]
    )
    route = _state(page)
    _click_node(page, "daily_revenue")
    page.click("button[name=expand-downstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 9")
    names = page.evaluate("() => window.__upstreamGraph.cy.nodes().map((n) => n.data('name'))")
    assert {"publish", "report"} <= set(names)
    assert {**_state(page), "selected": ""} == {**route, "selected": ""}  # not reloaded
    _click_node(page, "order_audit")
    page.click("button[name=expand-upstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 11")
    # Collapsing clean_orders upstream takes ingest and raw_orders, which only it leads to.
    _click_node(page, "clean_orders")
    page.click("button[name=collapse-upstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 9")
    names = page.evaluate("() => window.__upstreamGraph.cy.nodes().map((n) => n.data('name'))")
    assert "raw_orders" not in names
    assert "ingest" not in names
    # Collapsing order_audit downstream takes nothing: nothing lies only behind it.
    _click_node(page, "order_audit")
    page.click("button[name=collapse-downstream]")
    assert "Nothing lies only downstream" in page.locator("#graph-status").inner_text()
    # A job expands by its own datasets only.
    _click_node(page, "publish")
    page.click("button[name=collapse-downstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 8")
    page.click("button[name=expand-downstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 9")


U = "undo"


@pytest.fixture(scope="module")
def undo_graph(server: LiveServer) -> str:
    """report_job reads fact and dim and writes report; load reads dim and writes fact:

    dim → load → fact → report_job → report
    dim ────────────────↗
    """
    _post(
        server.url,
        [
            _step((U, "load"), [(U, "dim")], (U, "fact")),
            _step((U, "report_job"), [(U, "fact"), (U, "dim")], (U, "report")),
        ],
    )
    return server.url


def test_minus_undoes_plus_where_what_it_added_joins_the_graph(undo_graph: str, page: Any) -> None:
    """`load`, added upstream of fact, also hangs on dim, which the centre reaches another way:
    "minus upstream" still takes it back, and dim (drawn before) stays."""
    page.goto(f"{undo_graph}/#/graph?type=dataset&ns={U}&name=report&levels=1")
    drawn = _graph(page, "report")
    assert drawn["labels"] == ["dim", "fact", "report", "report_job"]
    _click_node(page, "fact")
    page.click("button[name=expand-upstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 5")
    assert "1 node added upstream of fact." in page.locator("#graph-status").inner_text()
    page.click("button[name=collapse-upstream]")
    page.wait_for_function("() => window.__upstreamGraph.cy.nodes().length === 4")
    names = page.evaluate("() => window.__upstreamGraph.cy.nodes().map((n) => n.data('name'))")
    assert sorted(names) == ["dim", "fact", "report", "report_job"]
    edges = page.evaluate("() => window.__upstreamGraph.cy.edges().length")
    assert edges == 3  # dim → report_job, fact → report_job, report_job → report
    assert "1 node upstream of fact collapsed." in page.locator("#graph-status").inner_text()


def test_panel_buttons_are_drawn_by_a_font(paths_graph: str, page: Any) -> None:
    """Every character of the side panel's buttons differs from a character no font has
    (which every font draws as the same missing-glyph box): the fullwidth plus did not."""
    _open_paths(page, paths_graph, "clean_orders", "&levels=1")
    _click_node(page, "daily_revenue")
    labels = _texts(page, "#graph-details .panel-actions button")
    assert "+ upstream" in labels
    assert "\N{MINUS SIGN} downstream" in labels
    missing = page.evaluate(
        """(texts) => {
            const font = getComputedStyle(document.querySelector('.panel-actions button')).font;
            const draw = (text) => {
                const canvas = document.createElement('canvas');
                canvas.width = 40; canvas.height = 40;
                const ctx = canvas.getContext('2d');
                ctx.font = font.replace(/\\d+(\\.\\d+)?px/, '24px');
                ctx.fillText(text, 4, 30);
                return Array.from(ctx.getImageData(0, 0, 40, 40).data).join(',');
            };
            const box = draw('\\u{E000}');
            const chars = [...new Set(texts.join('').replace(/\\s/g, ''))];
            return chars.filter((c) => draw(c) === box);
        }""",
        labels,
    )
    assert missing == []


W = "wide"
LONG_TYPE = "STRUCT<street: STRING, city: STRING, postcode: STRING, country: STRING>"


def test_column_rows_with_long_types_keep_to_their_row(server: LiveServer, page: Any) -> None:
    """A field whose type is longer than its row is cut on one line, never spilling onto the
    next row; the side panel names the whole type."""
    fields = [("address", LONG_TYPE), ("id", "BIGINT"), ("name", "STRING")]
    columns = {name: [(W, "people_raw", name)] for name, _ in fields}
    _post(
        server.url,
        [
            run_event(
                (W, "clean_people"),
                time=_recent(1),
                inputs=[ds(W, "people_raw", schema=schema_facet(*fields))],
                outputs=[
                    ds(
                        W,
                        "people",
                        schema=schema_facet(*fields),
                        columnLineage=column_lineage(columns),
                    )
                ],
            )
        ],
    )
    page.goto(f"{server.url}/#/graph?type=dataset&ns={W}&name=people&levels=1&columns=on")
    _graph(page, "people")
    rows = page.evaluate(
        """() => window.__upstreamGraph.cy.nodes("[kind = 'field']").map((n) => {
            const label = n.boundingBox({includeNodes: false, includeLabels: true,
                                         includeOverlays: false});
            return {field: n.data('field'), caption: n.data('caption'), labelH: label.h,
                    labelW: label.w, h: n.height(), w: n.width()};
        })"""
    )
    assert len(rows) == 6
    for row in rows:
        assert "\n" not in row["caption"], row
        assert row["labelH"] <= row["h"] + 1, row
        assert row["labelW"] <= row["w"], row
    address = next(row for row in rows if row["field"] == "address")
    assert address["caption"].startswith("address : STRUCT<")
    assert address["caption"].endswith("…")
    _click_node(page, "people", field="address")
    assert LONG_TYPE in page.locator("#graph-details").inner_text()


def test_all_time_has_no_window_before_it(two_windows: str, page: Any) -> None:
    """ "The window before" all time would be 1970 to 1970 and paint every edge as added: the
    graph says there is none and draws the lineage as it is, uncompared."""
    page.goto(
        f"{two_windows}/#/graph?type=dataset&ns=diffs&name=centre&window=all&compare=previous"
    )
    _graph(page, "centre")
    assert "All time has no window before it" in page.locator("#graph-hint").inner_text()
    assert {key: value for key, value in _changes(page).items() if value} == {}
    assert "1970" not in page.locator("#graph-status").inner_text()
    assert page.locator("select[name=compare] option[value=previous]").is_disabled()


def _impact_rows(page: Any) -> list[list[str]]:
    page.wait_for_selector("table.impact")
    rows = page.locator("table.impact tbody tr")
    return [
        [rows.nth(i).locator("td").nth(c).inner_text() for c in (0, 1, 3, 4, 6)]
        for i in range(rows.count())
    ]


def test_impact_list_filters_and_exports_csv(paths_graph: str, page: Any) -> None:
    """Downstream of raw_orders: clean_orders one job away, daily_revenue and order_audit
    two, report three; the fields id and amount of clean_orders one field edge away and
    daily_revenue.total two. rules_job also writes order_audit but is not downstream."""
    page.goto(f"{paths_graph}/#/dataset?ns={P}&name=raw_orders")
    page.click("a.button:text-is('Impact')")
    expected = [
        ["dataset", "clean_orders", "1", "ingest", "COMPLETE"],
        ["field", "clean_orders.amount", "1", "ingest", "COMPLETE"],
        ["field", "clean_orders.id", "1", "ingest", "COMPLETE"],
        ["dataset", "daily_revenue", "2", "revenue_job", "COMPLETE"],
        ["field", "daily_revenue.total", "2", "revenue_job", "COMPLETE"],
        ["dataset", "order_audit", "2", "audit_job", "COMPLETE"],
        ["dataset", "report", "3", "publish", "COMPLETE"],
    ]
    assert _impact_rows(page) == expected
    page.select_option("select[name=kind]", "field")
    assert _impact_rows(page) == [row for row in expected if row[0] == "field"]
    page.select_option("select[name=hops]", "2")
    assert _impact_rows(page) == [["field", "daily_revenue.total", "2", "revenue_job", "COMPLETE"]]
    assert _state(page)["kind"] == "field"
    assert _state(page)["hops"] == "2"
    page.select_option("select[name=kind]", "")
    assert page.locator("#impact-count").inner_text() == "3 of 7 shown"
    with page.expect_download() as download:
        page.click("button[name=download-csv]")
    csv = Path(download.value.path()).read_bytes().decode("utf-8")
    assert csv.split("\r\n") == [
        "kind,namespace,dataset,field,hops,jobs,owners,latest run state,latest run started",
        f"dataset,{P},daily_revenue,,2,revenue_job,,COMPLETE,{_started(page, 'revenue_job')}",
        f"field,{P},daily_revenue,total,2,revenue_job,,COMPLETE,{_started(page, 'revenue_job')}",
        f"dataset,{P},order_audit,,2,audit_job,,COMPLETE,{_started(page, 'audit_job')}",
        "",
    ]
    assert download.value.suggested_filename == "impact-raw_orders.csv"
    _shot(page, "22-impact", docs=True)
    # From a field: only what that field flowed into.
    page.goto(f"{paths_graph}/#/impact?ns={P}&name=raw_orders&field=amount")
    assert _impact_rows(page) == [
        ["field", "clean_orders.amount", "1", "ingest", "COMPLETE"],
        ["field", "daily_revenue.total", "2", "revenue_job", "COMPLETE"],
    ]


def _started(page: Any, job: str) -> str:
    """The start of the job's latest run, as the API gives it."""
    runs = page.evaluate(
        "(url) => fetch(url).then((r) => r.json())", f"/api/v1/namespaces/{P}/jobs/{job}/runs"
    )
    started: str = runs["runs"][0]["startedAt"]
    return started


def test_filters_search_and_paths_between_two_nodes(paths_graph: str, page: Any) -> None:
    _open_paths(page, paths_graph, "clean_orders", "&levels=5")
    page.uncheck("input[name=show-job]")
    assert _classes(page)["filtered"] == [
        "audit_job",
        "ingest",
        "publish",
        "revenue_job",
        "rules_job",
    ]
    assert "hideKinds=job" in _hash(page)
    page.check("input[name=show-job]")
    page.click(".namespaces summary")
    page.uncheck(f"input[name=show-namespace][value={RULES_NS}]")
    assert _classes(page)["filtered"] == ["audit_rules"]
    # The filter is in the URL: a reload keeps it.
    page.reload()
    _graph(page, "clean_orders")
    assert _classes(page)["filtered"] == ["audit_rules"]
    page.fill("input[name=find]", "AUDIT")
    assert _classes(page)["match"] == ["audit_job", "order_audit"]  # audit_rules is hidden
    assert page.locator("#find-count").inner_text() == "2 found"
    page.fill("input[name=find]", "")
    # Paths between raw_orders and daily_revenue: the chain through revenue_job only.
    _click_node(page, "raw_orders")
    page.click("button[name=paths-to]")
    _click_node(page, "daily_revenue")
    shown = page.evaluate(
        "() => window.__upstreamGraph.cy.nodes(':visible').map((n) => n.data('name')).sort()"
    )
    assert shown == ["clean_orders", "daily_revenue", "ingest", "raw_orders", "revenue_job"]
    assert {"from", "to"} <= set(_state(page))
    _shot(page, "11-focus-path", docs=True)
    page.click("button[name=clear-paths]")
    assert _classes(page)["off-path"] == []
    # No path joins two siblings.
    _click_node(page, "daily_revenue")
    page.click("button[name=paths-to]")
    _click_node(page, "order_audit")
    assert "No path joins" in page.locator("#graph-status").inner_text()


def test_column_view_joins_fields_across_hops(paths_graph: str, page: Any) -> None:
    _open_paths(page, paths_graph, "clean_orders", "&levels=2&columns=on")
    rows = page.evaluate(
        """() => window.__upstreamGraph.cy.nodes("[kind = 'field']")
            .map((n) => `${n.data('name')}.${n.data('field')}`).sort()"""
    )
    assert rows == [
        "clean_orders.amount",
        "clean_orders.id",
        "daily_revenue.total",
        "raw_orders.amount",
        "raw_orders.id",
    ]
    field_edges = page.evaluate(
        """() => { const g = window.__upstreamGraph; const f = (id) => {
                const n = g.cy.getElementById(id); return `${n.data('name')}.${n.data('field')}`; };
            return g.cy.edges('[?field]')
                .map((e) => `${f(e.data('source'))}>${f(e.data('target'))}`).sort(); }"""
    )
    assert field_edges == [
        "clean_orders.amount>daily_revenue.total",
        "raw_orders.amount>clean_orders.amount",
        "raw_orders.id>clean_orders.id",
    ]
    # Every row sits inside its dataset's box.
    inside = page.evaluate(
        """() => { const g = window.__upstreamGraph;
            return g.cy.nodes("[kind = 'field']").every((row) => {
                const box = g.cy.getElementById(row.data('dataset'));
                const h = box.data('height') / 2, y = row.position('y');
                return Math.abs(row.position('x') - box.position('x')) < 1
                    && y > box.position('y') - h && y < box.position('y') + h; }); }"""
    )
    assert inside is True
    _click_node(page, "clean_orders", field="amount")
    classes = _classes(page)
    assert classes["selected"] == ["clean_orders.amount"]
    assert classes["upstream"] == ["raw_orders.amount"]
    assert classes["downstream"] == ["daily_revenue.total"]
    assert "clean_orders.id" in classes["dimmed"]
    assert "raw_orders.id" in classes["dimmed"]
    assert "clean_orders" not in classes["dimmed"]  # holds a lit field
    _shot(page, "12-columns", docs=True)


def test_field_page_draws_the_fields_graph(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/fields?ns={NS}&name=user_data&field=body&levels=2")
    page.wait_for_function("() => window.__upstreamFieldGraph?.field === 'body'")
    drawn = page.evaluate(
        """() => { const cy = window.__upstreamFieldGraph.cy;
            return {
                rows: cy.nodes("[kind = 'field']")
                    .map((n) => `${n.data('name')}.${n.data('field')}`).sort(),
                temporary: cy.nodes("[kind = 'dataset'][?temporary]").map((n) => n.data('name')),
                upstream: cy.nodes('.upstream').map((n) => n.data('field')).sort(),
                downstream: cy.nodes('.downstream').map((n) => n.data('field')),
                selected: cy.nodes('.selected').map((n) => `${n.data('name')}.${n.data('field')}`),
            }; }"""
    )
    # Two hops up from user_data.body: staging_tmp.payload, then the raw file's line; down,
    # the fields ETLMapReduce's operations made from it in mytableds, and on to the publisher.
    upstream = {"staging_tmp.payload", f"{RAW_FILE}.line"}
    assert upstream <= set(drawn["rows"])
    assert "mytableds.body" in drawn["rows"]
    assert {row.rpartition(".")[0] for row in set(drawn["rows"]) - upstream} <= {
        "user_data",
        "mytableds",
        HOSTILE,
    }
    assert drawn["temporary"] == ["staging_tmp"]
    assert drawn["selected"] == ["user_data.body"]
    assert drawn["upstream"] == ["line", "payload"]
    assert len(drawn["downstream"]) == len(drawn["rows"]) - 3
    page.click("button[name=more-hops]")
    assert "levels=3" in _hash(page)
    page.wait_for_function("() => window.__upstreamFieldGraph?.field === 'body'")
    _shot(page, "13-field-graph", docs=True)


# -- labels, glyphs, large graphs ---------------------------------------------------------------


def _seed_lookalikes(url: str) -> None:
    """Names that a 20-letter cut made alike: one long task name in two DAG runs' namespaces,
    two tasks differing only at the end, and a dataset and a job of the same name."""
    prefix = "dag_int08_001.int08_load_orders_from_the_warehouse"
    hub = ("look", "hub")
    _post(
        url,
        [
            _step(("look", f"{prefix}_daily"), [hub], ("look", "orders_daily")),
            _step(("look", f"{prefix}_hourly"), [hub], ("look", "orders_hourly")),
            _step(("look-staging", f"{prefix}_daily"), [hub], ("look-staging", "orders_daily")),
            _step(hub, [], hub),
        ],
    )


def test_labels_tell_every_node_apart(server: LiveServer, page: Any) -> None:
    _seed_lookalikes(server.url)
    page.goto(f"{server.url}/#/graph?type=dataset&ns=look&name=hub&levels=2")
    drawn = _graph(page, "hub")
    assert len(drawn["captions"]) == 8
    assert len(set(drawn["captions"])) == 8, drawn["captions"]
    # The distinguishing end of a long name is kept.
    assert "dag_int08…rehouse_hourly" in drawn["captions"]
    # Two jobs of one name in two namespaces: the whole name, broken at its separators, and
    # the namespace below it.
    assert (
        "dag_int08_001.int08_\nload_orders_from_the_\nwarehouse_daily\nlook-staging"
        in drawn["captions"]
    )
    # The same job name in two namespaces, and the same dataset name, show their namespaces.
    assert sum("look-staging" in c for c in drawn["captions"]) == 2
    page.check("input[name=namespaces]")
    with_ns = _graph(page, "hub")["captions"]
    assert all(c.count("\n") >= 1 for c in with_ns)
    assert len(set(with_ns)) == 8
    assert "namespaces=on" in _hash(page)


def test_the_workflow_glyph_has_a_font(server: LiveServer, page: Any) -> None:
    """The workflow mark drawn on a canvas differs from a character no font has (which every
    font draws as the same missing-glyph box)."""
    page.goto(f"{server.url}/")
    differs = page.evaluate(
        """() => {
            const draw = (text) => {
                const canvas = document.createElement('canvas');
                canvas.width = 40; canvas.height = 40;
                const ctx = canvas.getContext('2d');
                ctx.font = "24px system-ui, 'DejaVu Sans', sans-serif";
                ctx.fillText(text, 4, 30);
                return Array.from(ctx.getImageData(0, 0, 40, 40).data).join(',');
            };
            return { mark: draw('▣') !== draw('\\u{E000}'), old: draw('⧉') !== draw('\\u{E000}') };
        }"""
    )
    assert differs["mark"] is True
    if differs["old"]:
        pytest.fail("⧉ renders here too; the check cannot tell a missing glyph apart")


def _grid_events(layers: int, width: int, ns: str = "grid") -> list[dict[str, Any]]:
    """`layers` levels of `width` jobs, each reading two datasets of the level before (its
    own column and the next, wrapping) and writing one: a graph whose layout must sort out
    crossings."""
    events: list[dict[str, Any]] = []
    when = _recent(0.3)
    previous = [f"{ns}/source"]
    for layer in range(layers):
        current = []
        for i in range(width):
            reads = {previous[i % len(previous)], previous[(i + 1) % len(previous)]}
            out = f"{ns}/d{layer}_{i}"
            events.append(
                run_event(
                    (ns, f"step{layer}_{i}"),
                    time=when,
                    inputs=[ds(ns, name) for name in sorted(reads)],
                    outputs=[ds(ns, out)],
                )
            )
            current.append(out)
        previous = current
    return events


def test_six_hundred_node_graph_layered_and_progressive(server: LiveServer, page: Any) -> None:
    """Time to first paint and to fully drawn on 601 nodes, written down, not asserted; every
    edge points right (layered left to right); every label differs."""
    events = _grid_events(layers=6, width=50)
    _post(server.url, events)
    nodes = 1 + 2 * len(events)
    edges = sum(len(e["inputs"]) + len(e["outputs"]) for e in events)
    page.goto(f"{server.url}/#/graph?type=dataset&ns=grid&name={_quote('grid/source')}&levels=6")
    drawn = _graph(page, "grid/source")
    assert len(drawn["labels"]) == nodes
    assert len(drawn["edges"]) == edges
    assert len(set(drawn["captions"])) == nodes
    rightward = page.evaluate(
        """() => window.__upstreamGraph.cy.edges().every((e) =>
            e.source().position('x') < e.target().position('x'))"""
    )
    assert rightward is True
    assert drawn["firstPaintMs"] <= drawn["ms"]
    _shot(page, "14-six-hundred-nodes")
    _write_timing("web-ui-timing-600.json", nodes, edges, drawn, page)


def test_small_graph_opens_fitted_nothing_clipped(server: LiveServer, page: Any) -> None:
    """Five nodes in a row fit the canvas at full size, so the graph opens fitted."""
    page.goto(f"{server.url}/#/graph?type=dataset&ns={NS}&name=mytableds&levels=1")
    drawn = _graph(page, "mytableds")
    assert len(drawn["labels"]) == 5
    clipped = page.evaluate(
        """() => { const g = window.__upstreamGraph; const w = g.cy.width(), h = g.cy.height();
            return g.cy.nodes().filter((n) => { const b = n.renderedBoundingBox();
                return b.x1 < 0 || b.y1 < 0 || b.x2 > w || b.y2 > h; })
                .map((n) => n.data('name')); }"""
    )
    assert clipped == []
    assert page.locator("#graph-minimap").is_hidden()  # nothing lies off the canvas


_LABELS_ON_SCREEN = """(names) => {
    const g = window.__upstreamGraph; const w = g.cy.width(), h = g.cy.height();
    return g.cy.nodes().filter((n) => names.includes(n.data('name'))).map((n) => {
        const at = n.renderedPosition();
        return {name: n.data('name'), px: parseFloat(n.renderedStyle('font-size')),
                inside: at.x > 0 && at.y > 0 && at.x < w && at.y < h};
    });
}"""


def test_five_hundred_node_graph_opens_readable_around_its_centre(
    server: LiveServer, browser: Any
) -> None:
    """At 1280 x 800 the canvas takes most of the window, the centre and its neighbours open on
    screen with labels of at least 11 px, a wheel notch zooms by at least 15 %, the minimap
    moves the view, Fit all stops at its floor and says that labels are hidden, and the side
    panel folds away to give the canvas its width."""
    _post(server.url, _grid_events(layers=5, width=50, ns="grid5"))
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    warnings: list[str] = []
    page.on("console", lambda msg: warnings.append(msg.text) if msg.type != "log" else None)
    try:
        centre = "grid5/d2_25"
        page.goto(f"{server.url}/#/graph?type=dataset&ns=grid5&name={_quote(centre)}&levels=10")
        drawn = _graph(page, centre)
        assert len(drawn["labels"]) == 501
        box = page.locator("#graph").bounding_box()
        assert box["height"] >= 0.7 * 800, box  # one compact bar above, one line below
        assert box["width"] >= 1280 - 16 * 16 - 40, box
        neighbours = ["step2_25", "step3_24", "step3_25"]  # its writer and its two readers
        labels = page.evaluate(_LABELS_ON_SCREEN, [centre, *neighbours])
        assert sorted(label["name"] for label in labels) == sorted([centre, *neighbours])
        for label in labels:
            assert label["inside"], label
            assert label["px"] >= 11, label
        _shot(page, "21-readable-on-open", docs=True)
        # The rest is on the minimap; a click there brings that part into view.
        minimap = page.locator("#graph-minimap")
        assert minimap.is_visible()
        mini = minimap.bounding_box()
        before = page.evaluate("() => window.__upstreamGraph.cy.pan()")
        page.mouse.click(mini["x"] + 8, mini["y"] + mini["height"] / 2)
        after = page.evaluate("() => window.__upstreamGraph.cy.pan()")
        assert after["x"] > before["x"]  # the left end (upstream) came into view
        # One wheel notch out and one in: at least 15 % each.
        zoom = page.evaluate("() => window.__upstreamGraph.cy.zoom()")
        page.mouse.move(box["x"] + box["width"] / 3, box["y"] + box["height"] / 3)
        page.mouse.wheel(0, 100)
        page.wait_for_function("(z) => window.__upstreamGraph.cy.zoom() < z", arg=zoom)
        out = page.evaluate("() => window.__upstreamGraph.cy.zoom()")
        assert out <= zoom / 1.15
        page.mouse.wheel(0, -100)
        page.wait_for_function("(z) => window.__upstreamGraph.cy.zoom() > z", arg=out)
        assert page.evaluate("() => window.__upstreamGraph.cy.zoom()") >= out * 1.15
        # Fit all: 501 nodes in 6 layers of 50 do not fit legibly; it stops at its floor.
        page.click("button[name=fit]")
        assert page.evaluate("() => window.__upstreamGraph.cy.zoom()") >= 0.1
        status = page.locator("#graph-status").inner_text()
        assert "Labels are hidden at this zoom" in status
        assert page.locator("#zoom-note").is_visible()
        # The side panel folds away and the canvas takes its width.
        page.click("button[name=toggle-panel]")
        assert page.locator("#graph-details").is_hidden()
        wider = page.locator("#graph").bounding_box()
        assert wider["width"] > box["width"] + 200
        page.click("button[name=toggle-panel]")
        assert page.locator("#graph-details").is_visible()
    finally:
        context.close()
    assert warnings == [], warnings


# -- time that behaves, workflows ----------------------------------------------------------------


def test_empty_window_offers_the_latest_run_and_the_window_carries(
    server: LiveServer, page: Any
) -> None:
    old = datetime.now(UTC) - timedelta(days=40)
    _post(
        server.url,
        [
            run_event(
                ("history", "monthly_import"),
                time=old,
                inputs=[ds("history", "vendor_feed")],
                outputs=[ds("history", "imported")],
            ),
            run_event(
                ("history", "monthly_report"),
                time=old + timedelta(minutes=5),
                inputs=[ds("history", "imported")],
                outputs=[ds("history", "report")],
            ),
        ],
    )
    page.goto(f"{server.url}/#/dataset?ns=history&name=imported")
    # The page dates the dataset by its latest run (the reader, 40 days ago), not by when
    # the server received the events (just now).
    page.wait_for_selector("#last-run time")
    assert page.locator("#last-run").inner_text().startswith("Last run ended")
    last = page.locator("#last-run time").get_attribute("datetime")
    assert last is not None
    assert abs(datetime.fromisoformat(last) - (old + timedelta(minutes=5))) < timedelta(minutes=1)
    hint = page.wait_for_selector("#history-hint")
    assert "latest run ended" in hint.inner_text()
    ended = page.locator("#history-hint time").get_attribute("datetime")
    assert ended is not None
    assert abs(datetime.fromisoformat(ended) - (old + timedelta(minutes=5))) < timedelta(minutes=1)
    page.click("button[name=show-latest]")
    page.wait_for_selector("table.writers")
    assert _texts(page, "table.writers tbody td:nth-child(2)") == ["monthly_import"]
    assert _texts(page, "table.readers tbody td:nth-child(2)") == ["monthly_report"]
    state = _hash(page)
    assert "window=custom" in state
    window = _state(page)
    _shot(page, "15-history-hint", docs=True)

    def carried() -> None:
        now = _state(page)
        assert {k: now.get(k) for k in ("window", "start", "end")} == {
            k: window[k] for k in ("window", "start", "end")
        }

    # Three navigations, each by a link, and the window goes along.
    page.click("a.button:text-is('Lineage graph')")
    drawn = _graph(page, "imported")
    carried()
    assert len(drawn["labels"]) == 5
    _click_node(page, "monthly_report")
    page.click("#graph-details a:text-is('Open page')")
    page.wait_for_selector("h1 .entity-name:text-is('monthly_report')")
    carried()
    page.click("a.button:text-is('Lineage graph')")
    assert len(_graph(page, "monthly_report")["labels"]) == 5
    carried()
    page.reload()
    assert len(_graph(page, "monthly_report")["labels"]) == 5
    page.go_back()
    page.wait_for_selector("h1 .entity-name:text-is('monthly_report')")
    carried()
    # All time is a choice, and it shows the history too.
    page.goto(f"{server.url}/#/graph?type=dataset&ns=history&name=imported&window=all")
    assert len(_graph(page, "imported")["labels"]) == 5


def test_custom_dates_apply_on_blur_or_enter(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/graph?type=dataset&ns={NS}&name=mytableds")
    _graph(page, "mytableds")
    page.select_option("select[name=window]", "custom")
    _graph(page, "mytableds")
    before = _hash(page)
    start = page.locator("input[name=start]")
    start.fill("2026-01-01T00:00")  # its input and change events: nothing applies yet
    assert _hash(page) == before
    start.press("Enter")
    page.wait_for_function("(before) => location.hash !== before", arg=before)
    assert _state(page)["start"].startswith("2026-01-01T")
    _graph(page, "mytableds")
    before = _hash(page)
    end = page.locator("input[name=end]")
    end.fill("2026-01-02T00:00")
    assert _hash(page) == before
    end.blur()
    page.wait_for_function("(before) => location.hash !== before", arg=before)
    assert _state(page)["end"].startswith("2026-01-02T")


def test_workflow_page_lists_its_jobs_and_runs(server: LiveServer, page: Any) -> None:
    page.goto(f"{server.url}/#/job?ns={NS}&name=nightly")
    page.wait_for_selector("table.workflow-jobs")
    assert _texts(page, "table.workflow-jobs tbody td:first-child") == [
        "ingest_users",
        "load_users",
    ]
    assert _texts(page, "table.workflow-jobs tbody td:nth-child(3)") == ["1", "1"]
    runs = _texts(page, "table.workflow-runs tbody td:nth-child(4)")
    assert len(runs) == 1
    assert "ingest_users" in runs[0]
    assert "load_users" in runs[0]
    _shot(page, "16-workflow", docs=True)
    page.click("a.button:text-is('Lineage graph')")
    expanded = _graph(page, None)["labels"]  # the workflow's jobs stand for it
    assert {"ingest_users", "load_users", "staging_tmp (temporary)"} <= set(expanded)
    page.check("input[name=rollup]")
    rolled = _graph(page, "nightly")["labels"]
    assert "▣ nightly" in rolled
    assert "ingest_users" not in rolled
    assert "staging_tmp (temporary)" not in rolled


# -- history: diffs, as of, run lineage; tags ------------------------------------------------------


def _reads(job: str, when: datetime) -> dict[str, Any]:
    """One run of `job` at `when` reading diffs/centre and writing nothing: one edge."""
    return run_event(("diffs", job), time=when, inputs=[ds("diffs", "centre")])


@pytest.fixture(scope="module")
def two_windows(server: LiveServer) -> str:
    """Two weeks of history around `centre`, worked out by hand: ten days ago `keeper` and
    `gone` read it, two days ago `keeper` and `newcomer`. So this week against the week
    before: centre → newcomer added, centre → gone removed, centre → keeper kept."""
    now = datetime.now(UTC)
    earlier, later = now - timedelta(days=10), now - timedelta(days=2)
    _post(
        server.url,
        [
            _reads("keeper", earlier),
            _reads("gone", earlier),
            _reads("keeper", later),
            _reads("newcomer", later),
        ],
    )
    return server.url


def _changes(page: Any) -> dict[str, list[str]]:
    """Per diff class, the drawn edges (`source>target`) and nodes carrying it."""
    found: dict[str, list[str]] = page.evaluate(
        """() => { const cy = window.__upstreamGraph.cy; const out = {};
            const name = (id) => cy.getElementById(id).data('name');
            for (const change of ['added', 'removed', 'kept']) {
                out[change] = cy.edges(`.change-${change}`)
                    .map((e) => `${name(e.data('source'))}>${name(e.data('target'))}`).sort();
                out[`${change} nodes`] = cy.nodes(`.change-${change}`)
                    .map((n) => n.data('name')).sort();
            }
            return out; }"""
    )
    return found


#: What every way of comparing the two windows must colour.
EXPECTED_DIFF = {
    "added": ["centre>newcomer"],
    "removed": ["centre>gone"],
    "kept": ["centre>keeper"],
    "added nodes": ["newcomer"],
    "removed nodes": ["gone"],
    "kept nodes": ["centre", "keeper"],
}


def test_compared_windows_colour_added_and_removed_edges(two_windows: str, page: Any) -> None:
    page.goto(f"{two_windows}/#/graph?type=dataset&ns=diffs&name=centre&levels=1")
    assert _graph(page, "centre")["labels"] == ["centre", "keeper", "newcomer"]
    assert _changes(page)["kept"] == []  # no diff drawn until one is asked for
    page.select_option("select[name=compare]", "previous")
    assert _state(page)["compare"] == "previous"
    drawn = _graph(page, "centre")
    assert drawn["labels"] == ["centre", "gone", "keeper", "newcomer"]
    assert _changes(page) == EXPECTED_DIFF
    status = page.locator("#graph-status").inner_text()
    assert "1 edge added, 1 removed, 1 kept" in status
    _shot(page, "17-diff", docs=True)
    _click_node(page, "gone")
    assert page.locator("button[name=expand-upstream]").count() == 0  # one answer's hop misleads
    assert page.locator("button[name=paths-to]").count() == 1

    # The same two weeks as two chosen windows, and as two times (the week before now
    # against the week before five days ago).
    now = datetime.now(UTC)
    iso = lambda days: _quote((now - timedelta(days=days)).isoformat())  # noqa: E731
    page.goto(
        f"{two_windows}/#/graph?type=dataset&ns=diffs&name=centre&levels=1&compare=window"
        f"&compareStart={iso(14)}&compareEnd={iso(7)}"
    )
    _graph(page, "centre")
    assert _changes(page) == EXPECTED_DIFF
    page.goto(
        f"{two_windows}/#/graph?type=dataset&ns=diffs&name=centre&levels=1&compare=time"
        f"&against={iso(5)}"
    )
    _graph(page, "centre")
    assert _changes(page) == EXPECTED_DIFF
    assert page.locator("input[name=against]").input_value() != ""


def test_as_of_shows_the_graph_as_it_was_and_carries(two_windows: str, page: Any) -> None:
    page.goto(f"{two_windows}/#/graph?type=dataset&ns=diffs&name=centre&levels=1")
    _graph(page, "centre")
    before = _hash(page)
    as_of = page.locator("input[name=asOf]")
    # Five days ago, in the browser's time zone; the default window is the week before it.
    local = page.evaluate(
        """() => { const d = new Date(Date.now() - 5 * 86400000);
            return new Date(d - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16); }"""
    )
    as_of.fill(local)
    assert _hash(page) == before  # nothing applies while it is typed
    as_of.press("Enter")
    page.wait_for_function("(before) => location.hash !== before", arg=before)
    chosen = _state(page)["asOf"]
    stated = datetime.fromisoformat(chosen)
    assert abs(stated - (datetime.now(UTC) - timedelta(days=5))) < timedelta(minutes=2)
    assert _graph(page, "centre")["labels"] == ["centre", "gone", "keeper"]
    # It goes along to the dataset's page, whose readers are those of then.
    page.click(".page-head h1 a")
    page.wait_for_selector("table.readers")
    assert _state(page)["asOf"] == chosen
    assert _texts(page, "table.readers tbody td:nth-child(2)") == ["gone", "keeper"]
    # And on to the field view, whose every request takes it.
    page.click("a.button:text-is('Field lineage')")
    page.wait_for_selector("input[name=asOf]")
    assert _state(page)["asOf"] == chosen
    assert page.locator("input[name=asOf]").input_value() == local
    page.go_back()
    page.wait_for_selector("table.readers")
    page.click("button[name=asOf-clear]")
    page.wait_for_selector("table.readers")
    page.wait_for_function("() => !location.hash.includes('asOf=')")
    page.wait_for_function(
        """() => [...document.querySelectorAll('table.readers tbody td:nth-child(2)')]
            .map((td) => td.innerText.trim()).join() === 'keeper,newcomer'"""
    )


def _run(job: str, run_id: str, start: datetime, **io: Any) -> list[dict[str, Any]]:
    """A START and a COMPLETE of one run, six minutes apart; `io` on the COMPLETE."""
    return [
        run_event(("runs", job), run_id=run_id, event_type="START", time=start),
        run_event(("runs", job), run_id=run_id, time=start + timedelta(minutes=6), **io),
    ]


def test_run_graph_shows_the_run_that_made_what_it_read(server: LiveServer, page: Any) -> None:
    """`report` read `table` after two writes of it: the second is the run that made what
    it read, and the first is nowhere in its upstream; `extract` made what that write read."""
    runs = {
        name: str(uuid.uuid4()) for name in ("extract", "first_build", "second_build", "report")
    }
    raw, table_, out = ds("runs", "raw"), ds("runs", "table"), ds("runs", "out")
    _post(
        server.url,
        [
            *_run("extract", runs["extract"], _recent(5), outputs=[raw]),
            *_run("build", runs["first_build"], _recent(4), inputs=[raw], outputs=[table_]),
            *_run("build", runs["second_build"], _recent(3), inputs=[raw], outputs=[table_]),
            *_run("report", runs["report"], _recent(2), inputs=[table_], outputs=[out]),
        ],
    )
    page.goto(f"{server.url}/#/job?ns=runs&name=report")
    page.click(f"table.runs a:has-text('{runs['report']}')")
    drawn = _graph(page, "report")
    assert _state(page)["id"] == runs["report"]
    shown = page.evaluate(
        """() => window.__upstreamGraph.cy.nodes('[?runId]').map((n) => n.data('runId')).sort()"""
    )
    assert shown == sorted([runs["report"], runs["second_build"], runs["extract"]])
    assert drawn["edges"] == sorted(
        [["raw", "build"], ["build", "table"], ["table", "report"], ["extract", "raw"]]
    )
    _click_node(page, "build")
    assert page.locator("#panel-run").inner_text() == runs["second_build"]
    _shot(page, "18-run-graph", docs=True)
    # One level: only the write that made what the run read.
    page.fill("input[name=levels]", "1")
    page.locator("input[name=levels]").dispatch_event("change")
    _graph(page, "report")
    one = page.evaluate(
        """() => window.__upstreamGraph.cy.nodes('[?runId]').map((n) => n.data('runId')).sort()"""
    )
    assert one == sorted([runs["report"], runs["second_build"]])
    # Centring on the write walks on from it.
    _click_node(page, "build")
    page.click("#graph-details button[name=recentre]")
    page.wait_for_function("(id) => location.hash.includes(id)", arg=runs["second_build"])
    assert _graph(page, "build")["edges"] == sorted([["raw", "build"], ["extract", "raw"]])
    # A dataset's recent runs link to run graphs too.
    page.goto(f"{server.url}/#/dataset?ns=runs&name=out")
    page.click(f"table.runs a:has-text('{runs['report']}')")
    _graph(page, "report")
    assert _state(page)["id"] == runs["report"]


def test_tags_are_marked_and_their_reach_shown(server: LiveServer, page: Any) -> None:
    customers = ds("tags", "customers", schema=schema_facet(("id", "int"), ("email", "string")))
    contacts = ds(
        "tags",
        "contacts",
        schema=schema_facet(("contact", "string")),
        columnLineage=column_lineage({"contact": [("tags", "customers", "email")]}),
    )
    _post(
        server.url,
        [
            run_event(
                ("tags", "copy_contacts"), time=_recent(), inputs=[customers], outputs=[contacts]
            )
        ],
    )
    base = f"{server.url}/api/v1"
    for tag in ("PII", "gold"):
        assert httpx.put(f"{base}/tags/{tag}", json={}).status_code == 200
    assert httpx.post(f"{base}/namespaces/tags/datasets/customers/tags/gold").status_code == 200
    field_tag = httpx.post(f"{base}/namespaces/tags/datasets/customers/fields/email/tags/PII")
    assert field_tag.status_code == 200, field_tag.text

    page.goto(f"{server.url}/#/dataset?ns=tags&name=customers")
    page.wait_for_selector("table.fields")
    assert _texts(page, "#dataset-tags a.tag") == ["gold"]
    assert _texts(page, "table.fields .entity.tagged") == ["email"]
    assert _texts(page, "table.fields tbody td:nth-child(4)") == ["", "PII"]
    _shot(page, "19-tags", docs=True)
    page.click("table.fields a.tag:text-is('PII')")
    page.wait_for_selector("table.reach")
    assert _state(page)["tag"] == "PII"
    assert _texts(page, "table.tagged tbody td:first-child") == ["customers"]
    assert _texts(page, "table.tagged .chips a") == ["email"]
    assert _texts(page, "table.reach tbody td:first-child") == ["contacts"]
    assert _texts(page, "table.reach .chips a") == ["contact"]
    assert _texts(page, "table.reach .chips .origin") == ["columnLineage"]
    _shot(page, "20-tag-reach", docs=True)
    # The dataset's tag tags every field it lists.
    page.goto(f"{server.url}/#/tag?tag=gold")
    page.wait_for_selector("table.reach")
    assert _texts(page, "table.tagged .chips a") == ["email", "id"]


def test_a_dataset_typed_temporary_is_drawn_dashed(server: LiveServer, page: Any) -> None:
    """OpenLineage's own mark (`datasetType` with subType TEMPORARY, DatasetTypeDatasetFacet
    1-0-0) draws the dataset as the project's marker does: grey and dashed."""
    kind = {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/DatasetTypeDatasetFacet.json",
        "datasetType": "TABLE",
        "subType": "TEMPORARY",
    }
    scratch = ds("typed", "scratch", datasetType=kind)
    _post(
        server.url,
        [
            run_event(("typed", "stage"), time=_recent(), inputs=[ds("typed", "src")],
                      outputs=[scratch]),
            run_event(("typed", "finish"), time=_recent(), inputs=[ds("typed", "scratch")],
                      outputs=[ds("typed", "dst")]),
        ],
    )  # fmt: skip
    page.goto(f"{server.url}/#/graph?type=dataset&ns=typed&name=dst&levels=3")
    drawn = _graph(page, "dst")
    assert drawn["temporary"] == ["scratch"]
    style = page.evaluate(
        """() => { const node = window.__upstreamGraph.cy.nodes("[name = 'scratch']");
            return [node.style('border-style'), node.style('border-color')]; }"""
    )
    assert style == ["dashed", "rgb(107,114,128)"]
    others = page.evaluate(
        """() => window.__upstreamGraph.cy.nodes("[kind = 'dataset'][!temporary]")
            .map((n) => n.style('border-style'))"""
    )
    assert set(others) == {"solid"}


MAP_NS = "postgres://mapdb:5432"


def _map_estate(url: str) -> None:
    """sales.public.{orders, customers} → sales.mart.revenue → crm.public.contacts."""
    _post(
        url,
        [
            run_event(
                ("maps", "revenue"),
                time=_recent(),
                inputs=[ds(MAP_NS, "sales.public.orders"), ds(MAP_NS, "sales.public.customers")],
                outputs=[ds(MAP_NS, "sales.mart.revenue")],
            ),
            run_event(
                ("maps", "export"),
                time=_recent(),
                inputs=[ds(MAP_NS, "sales.mart.revenue")],
                outputs=[ds(MAP_NS, "crm.public.contacts")],
            ),
        ],
    )


def _map_drawn(page: Any, level: int) -> dict[str, Any]:
    """What the map of `level` draws, once it is drawn."""
    page.wait_for_function("(level) => window.__upstreamMap?.level === level", arg=level)
    drawn: dict[str, Any] = page.evaluate(
        """() => { const cy = window.__upstreamMap.cy;
            return {
                nodes: cy.nodes().map((n) => n.data('caption')).sort(),
                edges: cy.edges().map((e) => [e.source().id(), e.target().id(), e.data('flows')]),
            }; }"""
    )
    return drawn


def test_the_map_groups_the_estate_and_drills_down(server: LiveServer, page: Any) -> None:
    _map_estate(server.url)
    page.goto(f"{server.url}/#/")
    page.click("nav.topnav a:text-is('Map')")
    page.wait_for_selector("table.map-groups")
    assert _state(page) == {}
    # Level 1: every namespace, this one with its four datasets among them.
    rows = [_texts(page, f"table.map-groups tbody tr:nth-child({i}) td") for i in range(1, 50)]
    assert [MAP_NS, "4", "3"] in rows
    page.click(f"table.map-groups a:text-is('{MAP_NS}')")
    page.wait_for_selector("nav.map-trail a:text-is('postgres://mapdb:5432')")
    assert _state(page) == {"level": "2", "within": "postgres:%2F%2Fmapdb:5432"}
    assert _map_drawn(page, 2) == {
        "nodes": ["crm\n1 dataset", "sales\n3 datasets"],
        "edges": [["postgres:%2F%2Fmapdb:5432/sales", "postgres:%2F%2Fmapdb:5432/crm", 1]],
    }
    assert _texts(page, "table.map-groups tbody td") == ["crm", "1", "0", "sales", "3", "2"]
    assert _texts(page, "table.map-flows tbody td") == ["sales", "crm", "1"]
    _shot(page, "23-map", docs=True)
    # One click on a group's box shows the containers inside it.
    page.evaluate(
        "() => window.__upstreamMap.cy"
        ".getElementById('postgres:%2F%2Fmapdb:5432/sales').emit('tap')"
    )
    assert _map_drawn(page, 3)["nodes"] == ["mart\n1 dataset", "public\n2 datasets"]
    assert _state(page) == {"level": "3", "within": "postgres:%2F%2Fmapdb:5432/sales"}
    assert _texts(page, "table.map-flows tbody td") == ["public", "mart", "2"]
    # The deepest containers hold the datasets themselves: nothing to drill into.
    assert page.locator("table.map-groups a").count() == 0
    # The trail leads back up.
    page.click("nav.map-trail a:text-is('All namespaces')")
    page.wait_for_function("() => location.hash.includes('level=1')")


def test_the_map_says_when_a_level_is_too_deep(server: LiveServer, page: Any) -> None:
    _map_estate(server.url)
    page.goto(f"{server.url}/#/map?level=9&within=postgres%3A%252F%252Fmapdb%3A5432")
    page.wait_for_selector("[role=alert]")
    assert "level" in page.locator("[role=alert]").inner_text()


def test_a_job_graph_draws_its_job_dependencies_dotted(server: LiveServer, page: Any) -> None:
    """`transform` waits for `extract` (the `jobDependencies` run facet, 1-0-1) and reads what
    it wrote: a data path extract → staged → transform, and a dotted control edge between the
    two jobs."""
    upstream_run = str(uuid.uuid4())
    dependencies = {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/JobDependenciesRunFacet.json",
        "upstream": [
            {
                "job": {"namespace": "deps", "name": "extract"},
                "run": {"runId": upstream_run},
                "dependency_type": "DIRECT_INVOCATION",
            }
        ],
    }
    _post(
        server.url,
        [
            run_event(("deps", "extract"), run_id=upstream_run, time=_recent(2),
                      outputs=[ds("deps", "staged")]),
            run_event(("deps", "transform"), time=_recent(), inputs=[ds("deps", "staged")],
                      run_facets={"jobDependencies": dependencies}),
        ],
    )  # fmt: skip
    page.goto(f"{server.url}/#/graph?type=job&ns=deps&name=transform&levels=1&direction=upstream")
    drawn = _graph(page, "transform")
    assert drawn["edges"] == [
        ["extract", "staged"],
        ["extract", "transform"],
        ["staged", "transform"],
    ]
    control = page.evaluate(
        """() => window.__upstreamGraph.cy.edges('[?control]').map((e) => [
            e.source().data('name'), e.target().data('name'), e.data('dependency'),
            e.style('line-style')])"""
    )
    assert control == [["extract", "transform", "DIRECT_INVOCATION", "dotted"]]
    assert "runs before (job dependency)" in page.locator(".legend").inner_text()
