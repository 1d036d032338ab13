"""One frozen object per lineage question goes from the command line and the routes to the
services (issue 33): the HTTP client writes it as URL parameters in one place, the routes
declare their parameters from its fields, and every reader takes it whole, so a new parameter
is a field of the question (with its parsing) and the option that sets it."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Annotated, Any

import pytest
from fastapi import Depends, FastAPI
from fastapi.testclient import TestClient

from upstream.api.app import create_app
from upstream.api.lineage_query import asked
from upstream.api.openapi import questions_documented
from upstream.client.http import UpstreamClient, url_parameters
from upstream.client.reader import LineageReader
from upstream.commands.database_reader import DatabaseReader
from upstream.query.lineage_query import (
    DiffQuery,
    FieldLineageQuery,
    LineageQuery,
    RunQuery,
    parameter,
)
from upstream.settings import Settings


def test_the_client_writes_each_field_under_its_parameter() -> None:
    query = LineageQuery(
        start="now-1d",
        end="now",
        levels="3",
        direction="upstream",
        collapse=("run", "access"),
        rollup="workflow",
        as_of="2026-11-24T09:00:00Z",
    )
    assert url_parameters(query) == [
        ("start", "now-1d"),
        ("end", "now"),
        ("levels", "3"),
        ("direction", "upstream"),
        ("collapse", "run"),
        ("collapse", "access"),
        ("rollup", "workflow"),
        ("asOf", "2026-11-24T09:00:00Z"),
    ]
    assert url_parameters(LineageQuery()) == []
    diff = DiffQuery(from_window="now-14d..now-7d", to_window="now-7d..now", against="now-1d")
    assert url_parameters(diff) == [
        ("from", "now-14d..now-7d"),
        ("to", "now-7d..now"),
        ("against", "now-1d"),
    ]


def _query_parameters(path: str) -> list[str]:
    document = create_app(Settings(db_url="sqlite://")).openapi()
    operation = document["paths"][path]["get"]
    # `after` (read after a write's position) is every read route's, not the question's.
    return [
        p["name"] for p in operation["parameters"] if p["in"] == "query" and p["name"] != "after"
    ]


def _names(question: type[Any]) -> list[str]:
    return [f.metadata["param"] for f in dataclasses.fields(question)]


@pytest.mark.parametrize(
    ("path", "question"),
    [
        ("/v3/namespaces/{namespace}/datasets/{dataset}/lineage", LineageQuery),
        ("/v3/namespaces/{namespace}/jobs/{job}/lineage", LineageQuery),
        ("/v3/namespaces/{namespace}/datasets/{dataset}/lineage/diff", DiffQuery),
        ("/v3/runs/{runId}/lineage", RunQuery),
    ],
)
def test_routes_declare_the_fields_of_their_question(path: str, question: type[Any]) -> None:
    assert _query_parameters(path) == _names(question)


def test_every_reader_takes_each_question_whole() -> None:
    """The protocol, the HTTP client and the database reader have the same methods with the
    same parameters: the question's values are never spelled out again."""
    for name in ("dataset_lineage", "lineage_diff", "run_lineage", "field_lineage"):
        expected = list(inspect.signature(getattr(LineageReader, name)).parameters)
        assert expected[-1] == "query"
        for reader in (UpstreamClient, DatabaseReader):
            assert list(inspect.signature(getattr(reader, name)).parameters) == expected


@dataclasses.dataclass(frozen=True)
class _Tagged(LineageQuery):
    """A question with one more parameter, as a new one would be added."""

    tag: str | None = parameter(
        "tag", "Only lineage through datasets tagged so", "choice", ("pii",)
    )


def test_a_new_field_is_a_route_parameter_and_a_url_parameter() -> None:
    app = FastAPI()

    @app.get("/probe")
    def probe(query: Annotated[_Tagged, Depends(asked(_Tagged))]) -> dict[str, Any]:
        return dataclasses.asdict(query)

    client = TestClient(app)
    answer = client.get("/probe", params=[("tag", "pii"), ("collapse", "run"), ("asOf", "now")])
    assert answer.status_code == 200, answer.text
    assert answer.json() == {
        **dataclasses.asdict(LineageQuery(collapse=("run",), as_of="now")),
        "collapse": ["run"],
        "include": [],
        "tag": "pii",
    }
    assert client.get("/probe", params={"tag": "secret"}).status_code == 422
    assert url_parameters(_Tagged(tag="pii", levels="2")) == [("levels", "2"), ("tag", "pii")]
    document = app.openapi()
    questions_documented(app.routes, document)
    declared = document["paths"]["/probe"]["get"]["parameters"]
    assert [p["name"] for p in declared] == [*_names(LineageQuery), "tag"]


def test_questions_are_frozen() -> None:
    for question in (LineageQuery(), DiffQuery(), RunQuery(), FieldLineageQuery()):
        with pytest.raises(dataclasses.FrozenInstanceError):
            question.levels = "2"  # type: ignore[misc]


def test_a_question_is_read_as_fastapi_read_its_parameters() -> None:
    """`Asked` reads the query string itself: a repeated parameter is its last value, a list
    parameter every value, and a value out of its choices FastAPI's own error at that
    parameter (the message the 400 of the server repeats)."""
    app = FastAPI()

    @app.get("/probe")
    def probe(query: Annotated[LineageQuery, Depends(asked(LineageQuery))]) -> dict[str, Any]:
        return dataclasses.asdict(query)

    client = TestClient(app)
    given = [("direction", "both"), ("direction", "upstream"), ("include", "owners")]
    answer = client.get("/probe", params=[*given, ("collapse", "run"), ("collapse", "access")])
    assert answer.json() == {
        **dataclasses.asdict(LineageQuery(direction="upstream")),
        "collapse": ["run", "access"],
        "include": ["owners"],
    }
    refused = client.get("/probe", params={"direction": "sideways", "rollup": ""}).json()
    assert [(e["loc"], e["msg"]) for e in refused["detail"]] == [
        (["query", "direction"], "Input should be 'both', 'upstream' or 'downstream'"),
        (["query", "rollup"], "Input should be 'workflow' or 'jobs'"),
    ]
