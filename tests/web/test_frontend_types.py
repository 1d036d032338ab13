"""The web UI's declared answer shapes (`frontend/src/api.ts`) against the OpenAPI document.

The UI is written against TypeScript interfaces; the server declares each answer's shape in
OpenAPI (`query.answers`, `query.marquez.answers`). An interface may leave out keys the UI
does not read, but each key it names must be in its schema, and a key it assumes is always
there (no `?`) must be one the schema requires: a key renamed or dropped on either side, or
made optional by the server, fails here rather than in a browser.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from upstream.api.app import create_app
from upstream.settings import Settings

API_TS = Path(__file__).resolve().parents[2] / "frontend" / "src" / "api.ts"
#: The interface of api.ts and the OpenAPI schema that declares the same answer.
SHAPES = {
    "LineageResponse": "LineageAnswer",
    "JobDependency": "JobDependencyEntry",
    "Relation": "RelationEntry",
    "DataEntry": "DataEntry",
    "EntityId": "EntityId",
    "DatasetRef": "DatasetName",
    "RunLineage": "RunLineageAnswer",
    "RunNode": "RunOfRunLineage",
    "RunDatasetVersion": "DatasetVersion",
    "DatasetVersion": "DatasetVersionAnswer",
    "DatasetVersions": "DatasetVersionsAnswer",
    "NamespaceCounts": "NamespaceCountsAnswer",
    "WrittenDatasets": "WrittenDatasetsAnswer",
    "LatestRuns": "LatestRunsAnswer",
    "VersionRef": "DatasetVersionRef",
    "FieldSummary": "FieldSummaryAnswer",
    "FieldsOfDataset": "FieldsOfDataset",
    "TagReach": "TagReachAnswer",
    "HierarchyMap": "HierarchyMapAnswer",
    "MapGroup": "MapGroup",
    "MapEdge": "MapEdge",
    "FieldPaths": "FieldPathsAnswer",
    "FieldPath": "FieldPath",
    "Operation": "OperationEntry",
    "WorkflowContents": "WorkflowContentsAnswer",
    "RunSummary": "RunSummary",
    "LineageDiff": "LineageDiffAnswer",
    "DiffSide": "DiffSide",
    "FieldEnd": "FieldEnd",
    "FieldWithLineage": "FieldWithLineage",
    "SearchResponse": "SearchAnswer",
    "SearchResult": "SearchResult",
    "Run": "RunAnswer",
    "RunsResponse": "RunsAnswer",
    "ColumnGraph": "ColumnLineageAnswer",
    "ColumnNode": "ColumnNode",
    "Dataset": "DatasetAnswer",
    "SchemaField": "SchemaField",
    "Job": "JobAnswer",
    "Subscription": "Subscription",
}
_INTERFACE = re.compile(r"^export interface (\w+) \{$", re.MULTILINE)
_PROPERTY = re.compile(r"^(\w+)(\??):")


def interfaces(text: str) -> dict[str, dict[str, bool]]:
    """Each `export interface` of `text`: its own keys, each with whether it is optional.
    Keys of nested object types (deeper braces) are not the interface's own."""
    found: dict[str, dict[str, bool]] = {}
    for match in _INTERFACE.finditer(text):
        depth, keys = 1, {}
        position = match.end()
        for line in text[position:].splitlines()[1:]:
            stripped = line.strip()
            if depth == 1 and (own := _PROPERTY.match(stripped)):
                keys[own.group(1)] = own.group(2) == "?"
            depth += stripped.count("{") - stripped.count("}")
            if depth <= 0:
                break
        found[match.group(1)] = keys
    return found


def test_interfaces_are_read_with_their_optional_keys() -> None:
    text = "export interface A {\n  a: string;\n  b?: { c: number };\n  /** d */\n  e?: X;\n}\n"
    assert interfaces(text) == {"A": {"a": False, "b": True, "e": True}}


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    document = create_app(Settings.model_construct(), migrate=False).openapi()
    return dict(document["components"]["schemas"])


@pytest.mark.parametrize(("interface", "schema"), sorted(SHAPES.items()))
def test_interface_matches_the_answer_schema(
    interface: str, schema: str, schemas: dict[str, Any]
) -> None:
    declared = interfaces(API_TS.read_text(encoding="utf-8"))[interface]
    properties = set(schemas[schema]["properties"])
    required = set(schemas[schema].get("required", ()))
    assert set(declared) - properties == set(), f"{interface} names keys {schema} lacks"
    always = {key for key, optional in declared.items() if not optional}
    assert always - required == set(), f"{interface} assumes keys {schema} may leave out"
