"""Documentation that cannot fall behind the code: the generated API reference and settings
table match the code, every setting is documented, every relative link lands somewhere."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from tests.conftest import LiveServer
from upstream.apidoc import anchor, openapi_document, render, schema_type, table_cell
from upstream.clidoc import render as render_cli
from upstream.clidoc import render_help
from upstream.settings import Settings
from upstream.settingsdoc import with_table

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*$", re.MULTILINE)


def test_api_reference_matches_the_app() -> None:
    expected = render(openapi_document())
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == expected, "docs/api.md is out of date: run `bash scripts/gen-docs`"


def test_cli_reference_matches_the_command() -> None:
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == render_cli(), "docs/cli.md is out of date: run `bash scripts/gen-docs`"


def test_settings_table_matches_the_settings() -> None:
    current = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert with_table(current) == current, (
        "the settings table in docs/configuration.md is out of date: run `bash scripts/gen-docs`"
    )


@pytest.mark.parametrize("name", sorted(Settings.model_fields))
def test_every_setting_is_documented(name: str) -> None:
    field = Settings.model_fields[name]
    assert field.description, f"{name} needs a description"
    assert len(field.description) > 10, f"{name} needs a real description"
    guide = (DOCS / "configuration.md").read_text(encoding="utf-8")
    assert f"`UPSTREAM_{name.upper()}`" in guide


def test_a_missing_marker_is_reported() -> None:
    with pytest.raises(ValueError, match="markers are missing"):
        with_table("# Configuration\n\nno table here\n")


def _headings(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {anchor(h.replace("`", "")) for h in HEADING.findall(text)}


def _links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z]+:", target):
            continue  # http(s), mailto: checked by people, not by an offline test
        path_part, _, fragment = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        missing_anchor = bool(fragment) and linked.suffix == ".md"
        if not linked.exists() or (missing_anchor and fragment not in _headings(linked)):
            broken.append(target)
    assert not broken, f"{page.name} links to what does not exist: {broken}"


def test_docs_index_lists_every_page() -> None:
    index = (DOCS / "index.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in _links(DOCS / "index.md")}
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "index.md" and p.name not in linked]
    assert not missing, f"docs/index.md does not link {missing}"
    assert index.startswith("# ")


def test_readme_keeps_the_two_command_quick_start() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install . && upstream serve" in readme
    assert "bash scripts/test" in readme
    assert "docs/index.md" in readme


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


@pytest.mark.slow
def test_quick_start_examples_run(
    live_server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Python block of the two quick starts, run as written against a live server."""
    monkeypatch.chdir(tmp_path)  # the file-transport example writes its file here
    for name in ("quickstart-openlineage.md", "quickstart-recorder.md"):
        for number, block in enumerate(_python_blocks(DOCS / name)):
            code = block.replace("http://127.0.0.1:5000", live_server.url)
            exec(compile(code, f"{name}, python block {number + 1}", "exec"), {})
    # The OpenLineage example's exact edges: customer_summary comes from customers only.
    warehouse = quote("postgres://db.example.com:5432", safe="")
    upstream = httpx.get(
        f"{live_server.url}/v3/namespaces/{warehouse}/datasets/analytics.customer_summary/lineage",
        params={"direction": "upstream"},
    ).json()
    assert sorted(upstream["data"]) == [
        "dataset.postgres://db%2Eexample%2Ecom:5432.analytics.customer_summary",
        "dataset.postgres://db%2Eexample%2Ecom:5432.shop.customers",
    ]
    # The recorder example: uniqueId was made by read -> parse -> concat -> create.
    made = httpx.get(
        f"{live_server.url}/v3/namespaces/myns/datasets/mytableds/fields/uniqueId/lineage",
        params={"start": "now-1h"},
    ).json()
    assert [[op["name"] for op in path["operations"]] for path in made["paths"]] == [
        ["read", "parse", "concat", "create"]
    ]
    # The workflow example rolled up: employees -> EmpWorkflow -> salary_stats, no scratch table.
    rolled = httpx.get(
        f"{live_server.url}/v3/namespaces/default/datasets/salary_stats/lineage",
        params={"start": "now-1h", "rollup": "workflow"},
    ).json()
    assert sorted(rolled["data"]) == ["dataset.default.employees", "dataset.default.salary_stats"]
    assert sorted(rolled["programs"]) == ["workflow.default.EmpWorkflow"]


@pytest.mark.parametrize(
    ("schema", "rendered"),
    [
        ({"type": "integer"}, "integer"),
        ({"type": "string", "format": "uuid"}, "string (uuid)"),
        ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "integer"),
        ({"type": "array", "items": {"type": "string"}}, "array of string"),
        ({"enum": ["json", "text"]}, "`json` \\| `text`"),
        ({"$ref": "#/components/schemas/Lineage"}, "[Lineage](#lineage)"),
        ({"type": "object", "title": "RunEvent"}, "`RunEvent`"),
        (
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
            "array of (string \\| integer)",
        ),
        ({}, "any"),
    ],
)
def test_schema_types_read_well(schema: dict[str, object], rendered: str) -> None:
    assert schema_type(schema) == rendered


def test_table_cells_stay_one_safe_line() -> None:
    assert table_cell("a |\n b <hex>") == "a \\| b &lt;hex&gt;"


def test_anchors_follow_the_repository_host() -> None:
    assert anchor("GET /api/v1/lineage") == "get-apiv1lineage"
    assert anchor("Notes on some settings") == "notes-on-some-settings"


def test_command_help_becomes_prose_and_code() -> None:
    rendered = render_help(
        "Start it.\n\nExample: upstream serve --workers 4\n\nExamples:\n\n\b\n"
        "  upstream lineage a b\n  upstream lineage c d"
    )
    assert rendered == [
        "Start it.",
        "",
        "Example:",
        "",
        "```sh",
        "upstream serve --workers 4",
        "```",
        "",
        "Examples:",
        "",
        "```sh",
        "upstream lineage a b",
        "upstream lineage c d",
        "```",
        "",
    ]


#: "seed 000" was the design's shorthand for its origin documents; users see what the thing is
#: (CDAP's field operations, the EmployeePipe workflow). dbt's `seed` command keeps its name,
#: and the benchmarks' random generator really has a seed (docs/performance.md).
SHORTHAND = re.compile(r"\bseed", re.IGNORECASE)


def _shorthand_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if SHORTHAND.search(line) and "dbt" not in line]


def test_user_facing_text_does_not_say_seed() -> None:
    from upstream.commands.demo import instructions
    from upstream.commands.target import Target

    texts = {
        page.name: page.read_text(encoding="utf-8")
        for page in PAGES
        if page.name != "performance.md"
    }
    texts["CLI help"] = render_cli()
    texts["API document"] = str(openapi_document())
    texts["upstream demo"] = instructions(Target(url="http://127.0.0.1:5000"), "run-id")
    found = {name: _shorthand_lines(text) for name, text in texts.items()}
    assert not {name: lines for name, lines in found.items() if lines}


#: Inline code naming a module, function or constant of Upstream: `store.writer.write_facts`,
#: `upstream.model.keys`. The first part must be one of the package's own subpackages, so
#: names of other things (Kafka headers such as `upstream.offset`) are not taken for code.
_CODE_NAME = re.compile(
    r"`(?:upstream\.)?((?:api|client|commands|ingest|kafka|model|query|render|store|web)"
    r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`"
)


def _resolves(dotted: str) -> bool:
    """`dotted` (inside `upstream`) is a module, or a name reached from the longest module
    prefix of it by attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module("upstream." + ".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_code_names_in_the_docs_exist() -> None:
    """A page that points the reader at `store.writer.write_facts` must not outlive it."""
    stale = sorted(
        f"{page.name}: {name}"
        for page in [*DOCS.glob("*.md"), ROOT / "README.md"]
        for name in _CODE_NAME.findall(page.read_text(encoding="utf-8"))
        if not _resolves(name)
    )
    assert not stale, f"these names are gone from the code: {stale}"


def test_a_stale_code_name_is_caught() -> None:
    assert _resolves("store.writer.write_facts")
    assert _resolves("model.facts.ORIGIN_RANK")
    assert not _resolves("store.writer.no_such_function")
    assert not _resolves("model.no_such_module")


_SECTION = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
_CITATION = re.compile(r"design(?:\.md\))? §\s?(\d+(?:\.\d+)?)")


def _cited_sections() -> dict[str, set[str]]:
    """Every `design §N` cited in the source, the tests and the docs, with where."""
    roots = [ROOT / "src", ROOT / "tests", ROOT / "benchmarks", ROOT / "frontend" / "src", DOCS]
    cited: dict[str, set[str]] = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.suffix not in {".py", ".md", ".ts"} or path.name == "design.md":
                continue
            for section in _CITATION.findall(path.read_text(encoding="utf-8")):
                cited.setdefault(section, set()).add(str(path.relative_to(ROOT)))
    return cited


def test_design_citations_name_sections_of_the_design_page() -> None:
    """`design §3.2` in a docstring must lead to a section of docs/design.md."""
    sections = set(_SECTION.findall((DOCS / "design.md").read_text(encoding="utf-8")))
    cited = _cited_sections()
    assert cited, "nothing cites the design: the pattern no longer matches"
    missing = {
        section: sorted(where)[:3] for section, where in cited.items() if section not in sections
    }
    assert not missing, f"sections docs/design.md does not have: {missing}"


def test_nothing_cites_a_design_file_outside_the_repository() -> None:
    old_citation = "DESIGN §"  # written apart, so that this test does not cite it itself
    stale = [
        str(path.relative_to(ROOT))
        for root in (ROOT / "src", DOCS, ROOT / "benchmarks")
        for path in root.rglob("*")
        if path.suffix in {".py", ".md"} and old_citation in path.read_text(encoding="utf-8")
    ]
    assert not stale, stale
