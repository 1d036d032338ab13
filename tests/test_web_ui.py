"""The web UI in a real browser: Playwright for Python driving Debian's Chromium against a live
`upstream serve` with seeded lineage (DESIGN §5).

A user's walk — search → dataset page → graph → field paths — with assertions on what is drawn
(node labels, edge counts, path steps), plus hostile names shown as text and a 1,000-node graph
whose request-to-drawn time is written to test-artifacts/. Screenshots go to test-artifacts/.
The browser tests run on SQLite only: the rest of the suite covers both stores behind the APIs
the UI reads.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.builders import PRODUCER, column_lineage, ds, run_event
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
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

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
                outputs=[ds(NS, "staging_tmp", **_temporary())],
                parent=parent,
            ),
            run_event(
                (NS, "load_users"),
                time=_recent(1.2),
                inputs=[ds(NS, "staging_tmp")],
                outputs=[ds(NS, "user_data")],
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
    # A refused API request is shown in the page (and asserted on); any other error is a bug.
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    yield page
    context.close()
    assert errors == [], f"the page reported errors: {errors}"


def _shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"web-ui-{name}.png"), full_page=True)


def _graph(page: Any, centre: str) -> dict[str, Any]:
    """Wait until the graph centred on `centre` is drawn; return what it shows."""
    page.wait_for_function(
        """(centre) => {
            const g = window.__upstreamGraph;
            if (!g || g.route !== location.hash) return false;
            return g.cy.nodes('[?centre]').map((n) => n.data('name')).includes(centre);
        }""",
        arg=centre,
        timeout=60_000,
    )
    drawn: dict[str, Any] = page.evaluate(
        """() => {
            const g = window.__upstreamGraph;
            const name = (id) => g.cy.getElementById(id).data('name');
            return {
                labels: g.cy.nodes().map((n) => n.data('label')).sort(),
                temporary: g.cy.nodes('[?temporary]').map((n) => n.data('name')),
                edges: g.cy.edges().map((e) => [name(e.data('source')), name(e.data('target'))])
                    .sort(),
                ms: g.drawnAt - g.requestedAt,
                fetchMs: g.receivedAt - g.requestedAt,
                layoutMs: g.laidOutAt - g.receivedAt,
            };
        }"""
    )
    return drawn


def _click_node(page: Any, name: str) -> None:
    """Click a node where it is drawn on the canvas, as a user would."""
    point = page.evaluate(
        """(name) => {
            const g = window.__upstreamGraph;
            const node = g.cy.nodes().filter((n) => n.data('name') === name)[0];
            const box = g.cy.container().getBoundingClientRect();
            const at = node.renderedPosition();
            return {x: box.left + at.x, y: box.top + at.y};
        }""",
        name,
    )
    page.mouse.click(point["x"], point["y"])


def _hash(page: Any) -> str:
    hash_: str = page.evaluate("() => location.hash")
    return hash_


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
    assert _texts(page, "table.runs tbody td:nth-child(3)") == ["COMPLETED", "COMPLETED"]
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
    _shot(page, "3-graph")

    page.check("input[name=rollup]")
    assert "rollup=workflow" in _hash(page)
    rolled = _graph(page, "mytableds")
    assert "⧉ nightly" in rolled["labels"]
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

    _click_node(page, "user_data")
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
    assert _texts(page, "table.runs tbody td:first-child") == ["COMPLETED"]
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
    # Three levels (the default) of job → dataset → job around the job reach everything;
    # the Marquez graph a job-centred view is drawn from has no temporary marks.
    assert drawn["labels"] == sorted(
        [
            RAW_FILE,
            "ingest_users",
            "staging_tmp",
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
    assert _graph(page, "load_users")["labels"] == sorted(
        ["ingest_users", "staging_tmp", "load_users", "user_data", "ETLMapReduce"]
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
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "web-ui-timing.json").write_text(
        json.dumps(
            {
                "nodes": nodes,
                "edges": edges,
                "fetch_ms": round(drawn["fetchMs"]),
                "layout_ms": round(drawn["layoutMs"]),
                "request_to_drawn_ms": round(drawn["ms"]),
            }
        )
    )
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
    missing = httpx.get(f"{server.url}/assets/nothing.js")
    assert missing.status_code == 404
    assert missing.json()["message"] == "name: no asset called 'nothing.js'"
    assert httpx.get(f"{server.url}/assets/..%2Findex.html").status_code == 404


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
