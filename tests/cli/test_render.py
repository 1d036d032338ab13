"""Renderers: graphs built from lineage responses, drawn as DOT (checked by Graphviz itself),
Mermaid (checked against the flowchart grammar we emit) and Rich tables."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from tests.conftest import system_program
from upstream.render.dot import to_dot
from upstream.render.graph import (
    Edge,
    Node,
    dataset_lineage_graph,
    field_summary_graph,
    whole_graph,
)
from upstream.render.mermaid import to_mermaid
from upstream.render.tables import (
    dataset_lineage_tables,
    field_paths_tables,
    field_summary_tables,
    graph_tables,
)
from upstream.render.wrap import Wrapped

#: Names that break naive DOT or Mermaid output: quotes, backslashes, brackets, markup,
#: keywords, separators and non-ASCII text.
NASTY = [
    'we"ird',
    "back\\slash\\n",
    "<script>alert(1)</script>",
    "a[b]{c}(d)",
    "end",
    "pipe|name --> arrow",
    "#35; not an entity",
    "ünïcödé 数据 🚀",
    "line\nbreak",
    "s3://bucket/path with space",
]


def entity(kind: str, namespace: str, name: str) -> dict[str, Any]:
    return {"entityId": {"type": kind, "namespace": namespace, "name": name}}


def lineage_response(names: list[str], namespace: str = "ns") -> dict[str, Any]:
    """A chain names[0] -> job0 -> names[1] -> job1 -> … in the design §4.2 shape."""
    data = {f"dataset.{namespace}.{n}": entity("dataset", namespace, n) for n in names}
    programs = {
        f"job.{namespace}.job{i}": entity("job", namespace, f"job{i}")
        for i in range(len(names) - 1)
    }
    relations = []
    for i in range(len(names) - 1):
        relations.append(
            {
                "data": f"dataset.{namespace}.{names[i]}",
                "program": f"job.{namespace}.job{i}",
                "accesses": ["read"],
                "runs": ["r"],
                "components": [],
            }
        )
        relations.append(
            {
                "data": f"dataset.{namespace}.{names[i + 1]}",
                "program": f"job.{namespace}.job{i}",
                "accesses": ["write"],
                "runs": ["r"],
                "components": [],
            }
        )
    return {"start": 0, "end": 60, "relations": relations, "data": data, "programs": programs}


SEED_002_ROLLED_UP = {
    "start": 1476321533,
    "end": 1476926333,
    "relations": [
        {
            "data": "dataset.default.EmpAgg",
            "program": "workflow.default.EmployeePipe",
            "accesses": ["write"],
            "runs": ["w1"],
            "components": [],
        },
        {
            "data": "dataset.default.Employees",
            "program": "workflow.default.EmployeePipe",
            "accesses": ["read"],
            "runs": ["w1"],
            "components": [],
        },
        {
            "data": "dataset.default.EmpAgg",
            "program": "job.default.report",
            "accesses": ["read", "write"],
            "runs": ["r2", "r3"],
            "components": ["mapper"],
        },
    ],
    "data": {
        "dataset.default.EmpAgg": entity("dataset", "default", "EmpAgg"),
        "dataset.default.Employees": entity("dataset", "default", "Employees"),
    },
    "programs": {
        "job.default.report": entity("job", "default", "report"),
        "workflow.default.EmployeePipe": entity("workflow", "default", "EmployeePipe"),
    },
}


# -- the neutral graph ------------------------------------------------------------------------


def test_dataset_lineage_graph_turns_reads_and_writes_into_directed_edges() -> None:
    graph = dataset_lineage_graph(SEED_002_ROLLED_UP, ("default", "EmpAgg"))
    assert [(n.kind, n.name, n.focus) for n in graph.nodes] == [
        ("dataset", "EmpAgg", True),
        ("dataset", "Employees", False),
        ("workflow", "EmployeePipe", False),
        ("job", "report", False),
    ]
    emp_agg, employees = (
        ("dataset", "default", "EmpAgg", ""),
        ("dataset", "default", "Employees", ""),
    )
    report, pipe = ("job", "default", "report", ""), ("job", "default", "EmployeePipe", "")
    assert set(graph.edges) == {
        Edge(employees, pipe),
        Edge(pipe, emp_agg),
        Edge(emp_agg, report),  # read
        Edge(report, emp_agg),  # and write
    }


def test_field_summary_graph_puts_the_field_between_its_sources_and_destinations() -> None:
    response = {
        "incoming": [{"dataset": {"namespace": "myns", "name": "user_data"}, "fields": ["body"]}],
        "outgoing": [{"dataset": {"namespace": "myns", "name": "report"}, "fields": ["id", "key"]}],
    }
    graph = field_summary_graph(response, "myns", "mytableds", "uniqueId")
    centre = ("field", "myns", "mytableds", "uniqueId")
    assert {(e.source, e.target) for e in graph.edges} == {
        (("field", "myns", "user_data", "body"), centre),
        (centre, ("field", "myns", "report", "id")),
        (centre, ("field", "myns", "report", "key")),
    }
    assert [n.title for n in graph.nodes if n.focus] == ["mytableds.uniqueId"]


def test_whole_graph_labels_each_flow_with_its_jobs_and_keeps_job_links() -> None:
    response = {
        "data": {
            "dataset.w.a": entity("dataset", "w", "a"),
            "dataset.w.b": entity("dataset", "w", "b"),
            "dataset.w.lonely": entity("dataset", "w", "lonely"),
        },
        "programs": {f"job.j.{n}": entity("job", "j", n) for n in ("p1", "p2", "p3", "p4", "p5")},
        "flows": [
            {
                "source": "dataset.w.a",
                "target": "dataset.w.b",
                "program": f"job.j.{n}",
                "runs": 1,
                "inferred": False,
            }
            for n in ("p5", "p1", "p3", "p2")
        ],
        "links": [{"source": "job.j.p1", "target": "job.j.p2"}],
    }
    graph = whole_graph(response)
    assert [n.name for n in graph.nodes] == ["a", "b", "lonely", "p1", "p2"]
    labels = {(e.source[2], e.target[2]): e.label for e in graph.edges}
    assert labels == {("a", "b"): "p1, p2, p3 (+1)", ("p1", "p2"): ""}


def test_a_node_mentioned_twice_is_one_node_and_the_focused_mention_wins() -> None:
    response = lineage_response(["x", "y"])
    graph = dataset_lineage_graph(response, ("ns", "y"))
    assert [(n.name, n.focus) for n in graph.nodes] == [("x", False), ("y", True), ("job0", False)]


# -- DOT ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graphviz() -> str:
    return system_program("dot")


def svg_texts(graphviz: str, dot_source: str) -> list[str]:
    done = subprocess.run(
        [graphviz, "-Tsvg"], input=dot_source.encode(), capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    root = ET.fromstring(done.stdout)
    return [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]


def test_dot_renders_with_graphviz_and_shows_every_name_literally(graphviz: str) -> None:
    graph = dataset_lineage_graph(lineage_response(NASTY), ("ns", NASTY[0]))
    texts = svg_texts(graphviz, to_dot(graph))
    for name in NASTY:
        lines = name.split("\n")
        for line in lines:
            assert line in texts, (line, texts)
    assert texts.count("ns") == len(NASTY) + len(NASTY) - 1  # datasets and jobs
    assert len(graph.edges) == 2 * (len(NASTY) - 1)


def test_dot_draws_every_edge_and_marks_focus_and_workflows(graphviz: str) -> None:
    source = to_dot(dataset_lineage_graph(SEED_002_ROLLED_UP, ("default", "EmpAgg")))
    assert source.startswith('digraph "lineage of default/EmpAgg" {\n')
    assert source.count(" -> ") == 4
    focus = 'label="EmpAgg\\ndefault", shape=box, style="rounded,filled", fillcolor="#dbeafe"'
    assert f"{focus}, penwidth=3" in source
    assert 'label="EmployeePipe (workflow)\\ndefault", shape=box3d' in source
    svg_texts(graphviz, source)


def test_dot_quoting_escapes_quotes_and_backslashes() -> None:
    from upstream.render.dot import quoted

    assert quoted('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


# -- Mermaid --------------------------------------------------------------------------------

_LABEL = r'"(?:[A-Za-z0-9 _.,:/@+=-]|#\d+;|<br/>)*"'
_NODE = re.compile(rf"  n\d+(?:\[\({_LABEL}\)\]|\[\[{_LABEL}\]\]|\(\[{_LABEL}\]\)|\[{_LABEL}\])")
_EDGE = re.compile(rf"  n\d+ -->(?:\|{_LABEL}\|)? n\d+")
_CLASS_DEF = re.compile(r"  classDef [a-z]+ [a-z-]+:[0-9a-z ]+")
_CLASS = re.compile(r"  class n\d+(?:,n\d+)* [a-z]+")
_LINK_STYLE = re.compile(r"  linkStyle (\d+(?:,\d+)*) stroke:#[0-9a-f]{6},stroke-width:\dpx")


def assert_valid_flowchart(text: str) -> list[str]:
    """Every line is one statement of Mermaid's flowchart grammar; the labels, decoded."""
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "flowchart LR"
    for line in lines[1:]:
        patterns = (_NODE, _EDGE, _CLASS_DEF, _CLASS, _LINK_STYLE)
        assert any(p.fullmatch(line) for p in patterns), line
    edges = sum(bool(_EDGE.fullmatch(line)) for line in lines)
    for line in lines:  # a link style names edges by their position
        if styled := _LINK_STYLE.fullmatch(line):
            assert all(int(i) < edges for i in styled.group(1).split(",")), line
    declared = {m.group(1) for m in re.finditer(r"^  (n\d+)[\[(]", text, re.MULTILINE)}
    for line in lines:
        if _EDGE.fullmatch(line):
            assert set(re.findall(r"(?<![#\w])n\d+", line)) <= declared, line
    return [
        re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), label)
        for label in re.findall(r'"([^"]*)"', text)
    ]


def test_mermaid_is_valid_flowchart_syntax_for_any_name() -> None:
    graph = dataset_lineage_graph(lineage_response(NASTY, namespace="ns:ü"), None)
    text = to_mermaid(graph)
    labels = assert_valid_flowchart(text)
    for name in NASTY:
        assert f"{name}<br/>ns:ü" in labels
    assert "<script>" not in text


def test_mermaid_shapes_edges_and_classes() -> None:
    text = to_mermaid(dataset_lineage_graph(SEED_002_ROLLED_UP, ("default", "EmpAgg")))
    assert text == (
        "flowchart LR\n"
        '  n0[("EmpAgg<br/>default")]\n'
        '  n1[("Employees<br/>default")]\n'
        '  n2[["EmployeePipe #40;workflow#41;<br/>default"]]\n'
        '  n3["report<br/>default"]\n'
        "  n0 --> n3\n"
        "  n1 --> n2\n"
        "  n2 --> n0\n"
        "  n3 --> n0\n"
        "  classDef focus stroke-width:3px\n"
        "  class n0 focus\n"
    )
    assert_valid_flowchart(text)


def test_mermaid_edge_labels_and_temporary_datasets() -> None:
    graph = whole_graph(
        {
            "data": {
                "dataset.d.a": entity("dataset", "d", "a"),
                "dataset.d.t": {**entity("dataset", "d", "t"), "temporary": True},
            },
            "programs": {"job.d.p|q": entity("job", "d", "p|q")},
            "flows": [{"source": "dataset.d.a", "target": "dataset.d.t", "program": "job.d.p|q"}],
            "links": [],
        }
    )
    text = to_mermaid(graph)
    assert '  n0 -->|"p#124;q"| n1\n' in text
    assert "  class n1 temporary\n" in text
    assert_valid_flowchart(text)


# -- tables ---------------------------------------------------------------------------------


def printed(renderable: Any) -> str:
    console = Console(record=True, width=200, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_lineage_table_lists_each_relation_with_names_verbatim() -> None:
    response = lineage_response(["[bold]x[/bold]", "y"])
    text = printed(dataset_lineage_tables(response, "ns", "y"))
    assert "[bold]x[/bold]" in text
    assert "2 relations, 2 datasets, 1 program" in text
    assert "1970-01-01 00:00 UTC → 1970-01-01 00:01 UTC" in text


def test_lineage_table_marks_temporary_datasets() -> None:
    response = lineage_response(["a", "conn-0.w1"])
    response["data"]["dataset.ns.conn-0.w1"]["temporary"] = True
    text = printed(dataset_lineage_tables(response, "ns", "a"))
    assert "conn-0.w1 (temporary)" in text
    assert "a (temporary)" not in text
    graph = dataset_lineage_graph(response, ("ns", "a"))
    assert [n.name for n in graph.nodes if n.temporary] == ["conn-0.w1"]
    assert 'style="rounded,filled,dashed"' in to_dot(graph)


def test_lineage_table_marks_workflows_runs_and_truncation() -> None:
    text = printed(
        dataset_lineage_tables({**SEED_002_ROLLED_UP, "truncated": True}, "default", "EmpAgg")
    )
    assert "EmployeePipe (workflow)" in text
    assert "2: r2, r3" in text
    assert "mapper" in text
    assert "truncated" in text


def test_field_tables_show_both_sides_and_paths() -> None:
    summary = {
        "incoming": [{"dataset": {"namespace": "myns", "name": "user_data"}, "fields": ["body"]}],
        "outgoing": [],
    }
    text = printed(field_summary_tables(summary, "myns", "mytableds", "uniqueId"))
    assert "myns / mytableds . uniqueId comes from" in text
    assert "user_data" in text
    assert "body" in text
    assert "(none)" in text
    paths = {
        "fieldName": "uniqueId",
        "paths": [
            {
                "operations": [
                    {
                        "name": "read",
                        "description": "Reading",
                        "outputs": ["body"],
                        "inputs": [{"type": "source", "namespace": "myns", "name": "user_data"}],
                    },
                    {
                        "name": "create",
                        "description": "unique id",
                        "outputs": ["uniqueId"],
                        "inputs": [{"type": "field", "name": "body", "origin": 0}],
                    },
                ],
                "runs": [{"runId": "0123456789", "job": {"namespace": "myns", "name": "ETL"}}],
            }
        ],
    }
    text = printed(field_paths_tables(paths, "myns", "mytableds"))
    assert "Path 1 of 1 to myns / mytableds . uniqueId" in text
    assert "myns/user_data" in text
    assert "1 run: 01234567 (ETL)" in text


def test_graph_table_lists_flows() -> None:
    response = {
        "data": {
            "dataset.w.a": entity("dataset", "w", "a"),
            "dataset.w.b": entity("dataset", "w", "b"),
        },
        "programs": {"job.j.p": entity("job", "j", "p")},
        "flows": [
            {
                "source": "dataset.w.a",
                "target": "dataset.w.b",
                "program": "job.j.p",
                "runs": 2,
                "inferred": True,
            }
        ],
        "links": [],
    }
    text = printed(graph_tables(response))
    assert re.search(r"a\s+│ p\s+│ b\s+│ 2\s+│ inferred", text), text
    assert "2 datasets, 1 job, 1 flow" in text


def test_node_titles() -> None:
    assert Node("field", "n", "d", "f").title == "d.f"
    assert Node("dataset", "n", "d").title == "d"


def lines_of(renderable: Any, width: int) -> list[str]:
    console = Console(record=True, width=width, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return [line.rstrip() for line in console.export_text().splitlines()]


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        (12, ["s3://raw-", "bucket/", "users/2026", "export.csv"]),
        (20, ["s3://raw-bucket/", "users/2026 export.", "csv"]),
        (40, ["s3://raw-bucket/users/2026 export.csv"]),
        (4, ["s3:/", "/", "raw-", "buck", "et/", "user", "s/", "2026", "expo", "rt.", "csv"]),
    ],
)
def test_a_cell_wraps_after_spaces_and_path_separators(width: int, expected: list[str]) -> None:
    """At 4 columns `s3://` and `bucket/` are wider than the column: only then is a piece cut."""
    assert lines_of(Wrapped("s3://raw-bucket/users/2026 export.csv"), width) == expected


LONG_NAMESPACE = "postgresql://warehouse-prod.internal.example.com:5432"
LONG_NAMES = [
    "analytics.customer_lifetime_value_by_region_and_quarter",
    "raw.crm_contacts_export_2026",
    "staging.orders_enriched_with_currency_rates",
]
LONG_FIELDS = ["customer_identifier", "lifetime_value_amount"]


def long_named_table(table: str) -> Any:
    """Each kind of table, full of names as long as real warehouses have."""
    if table == "lineage":
        response = lineage_response(LONG_NAMES, namespace=LONG_NAMESPACE)
        for relation in response["relations"]:
            relation["runs"] = ["0f8c2d7e-1", "9a1b2c3d-2", "77aa88bb-3", "12345678-4"]
            relation["components"] = ["extract_orders_stage", "load_warehouse_stage"]
        return dataset_lineage_tables(response, LONG_NAMESPACE, LONG_NAMES[0])
    if table == "field summary":
        sides = [
            {"dataset": {"namespace": LONG_NAMESPACE, "name": name}, "fields": LONG_FIELDS}
            for name in LONG_NAMES
        ]
        summary = {"incoming": sides, "outgoing": sides[:1]}
        return field_summary_tables(summary, LONG_NAMESPACE, LONG_NAMES[0], LONG_FIELDS[1])
    if table == "field paths":
        operation = {
            "name": "aggregate_by_customer_and_region",
            "description": "summing every order of the customer over the whole quarter",
            "outputs": LONG_FIELDS,
            "inputs": [{"type": "source", "namespace": LONG_NAMESPACE, "name": LONG_NAMES[1]}],
        }
        paths = {"fieldName": LONG_FIELDS[1], "paths": [{"operations": [operation], "runs": []}]}
        return field_paths_tables(paths, LONG_NAMESPACE, LONG_NAMES[0])
    keys = {f"dataset.w.{name}": name for name in LONG_NAMES}
    target, source, _ = keys
    flow = {"source": source, "target": target, "program": "job.j.p", "runs": 12}
    return graph_tables(
        {
            "data": {key: entity("dataset", LONG_NAMESPACE, name) for key, name in keys.items()},
            "programs": {"job.j.p": entity("job", LONG_NAMESPACE, "build_customer_value_daily")},
            "flows": [{**flow, "inferred": False}],
            "links": [],
        }
    )


def _words(lines: list[str]) -> Counter[str]:
    return Counter(re.findall(r"[^\W_]+", "\n".join(lines)))


@pytest.mark.parametrize("table", ["lineage", "field summary", "field paths", "graph"])
def test_tables_at_80_columns_never_split_a_word(table: str) -> None:
    """Rendered 80 columns wide, every line fits and the words are exactly those of the same
    table rendered wide enough not to wrap: a word cut in two would be two other words."""
    narrow, wide = lines_of(long_named_table(table), 80), lines_of(long_named_table(table), 400)
    assert max(cell_len(line) for line in narrow) <= 80
    assert _words(narrow) == _words(wide)
    assert len(narrow) > len(wide)  # it did wrap
