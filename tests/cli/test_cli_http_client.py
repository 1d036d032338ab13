"""The HTTP client the CLI talks through: encoded paths, the token, gzip for large batches,
and every failure as one readable exception."""

from __future__ import annotations

import gzip
import json
from typing import Any

import httpx
import pytest

from upstream.client.errors import ApiRejected, UpstreamError
from upstream.client.http import UpstreamClient
from upstream.query.lineage_query import FieldLineageQuery, LineageQuery


class Recorder:
    """A transport that remembers requests and answers what the test says."""

    def __init__(self, response: httpx.Response | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.response = response or httpx.Response(200, json={})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.response


def client_with(recorder: Recorder, token: str | None = None) -> UpstreamClient:
    return UpstreamClient(
        "http://lineage:5000/", token=token, transport=httpx.MockTransport(recorder)
    )


def test_names_are_one_encoded_path_segment_each_and_params_repeat() -> None:
    recorder = Recorder()
    with client_with(recorder, token="s3cret") as client:
        asked = LineageQuery(levels="2", collapse=("run", "access"), rollup="workflow")
        client.dataset_lineage("s3://bucket", "dir/file 1%.csv", asked)
    request = recorder.requests[0]
    assert request.url.raw_path.decode() == (
        "/v3/namespaces/s3%3A%2F%2Fbucket/datasets/dir%2Ffile%201%25.csv/lineage"
        "?levels=2&collapse=run&collapse=access&rollup=workflow"
    )
    assert request.headers["Authorization"] == "Bearer s3cret"


def test_field_paths_and_summaries_paths() -> None:
    recorder = Recorder()
    with client_with(recorder) as client:
        client.field_lineage("myns", "mytableds", "a/b", FieldLineageQuery(start="now-1d"))
        asked = FieldLineageQuery(direction="incoming", levels="3")
        client.field_lineage_summary("myns", "mytableds", "uniqueId", asked)
    assert [r.url.raw_path.decode() for r in recorder.requests] == [
        "/v3/namespaces/myns/datasets/mytableds/fields/a%2Fb/lineage?start=now-1d",
        "/v3/namespaces/myns/datasets/mytableds/lineage/fields/uniqueId?direction=incoming&levels=3",
    ]
    assert "Authorization" not in recorder.requests[0].headers


def test_small_batches_go_plain_and_large_ones_gzipped() -> None:
    recorder = Recorder(httpx.Response(201))
    small = [{"eventType": "START"}]
    large = [{"padding": "x" * 1000, "n": n} for n in range(400)]
    with client_with(recorder) as client:
        client.post_events(small)
        client.post_events(large)
    plain, packed = recorder.requests
    assert "Content-Encoding" not in plain.headers
    assert json.loads(plain.content) == small
    assert packed.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(packed.content)) == large


@pytest.mark.parametrize(
    ("response", "status", "message", "errors"),
    [
        (
            httpx.Response(
                422,
                json={
                    "code": 422,
                    "message": "[1].run.runId: bad",
                    "errors": [{"path": "[1].run.runId", "message": "bad"}],
                },
            ),
            422,
            "[1].run.runId: bad",
            [{"path": "[1].run.runId", "message": "bad"}],
        ),
        (
            httpx.Response(502, text="<html>Bad Gateway</html>\nnginx"),
            502,
            "<html>Bad Gateway</html>",
            [],
        ),
        (httpx.Response(500, text=""), 500, "Internal Server Error", []),
    ],
)
def test_errors_carry_status_message_and_located_problems(
    response: httpx.Response, status: int, message: str, errors: list[dict[str, Any]]
) -> None:
    with client_with(Recorder(response)) as client, pytest.raises(ApiRejected) as caught:
        client.post_events([{}])
    assert (caught.value.status, caught.value.message, caught.value.errors) == (
        status,
        message,
        errors,
    )
    assert str(caught.value) == f"{message} (HTTP {status})"


def test_unreachable_and_non_json_answers_are_upstream_errors() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    unreachable = UpstreamClient("http://nowhere:1", transport=httpx.MockTransport(refuse))
    with unreachable, pytest.raises(UpstreamError, match="cannot reach http://nowhere:1: conn"):
        unreachable.health()
    text = client_with(Recorder(httpx.Response(200, text="hello")))
    with text, pytest.raises(UpstreamError, match="did not answer with JSON"):
        text.lineage_graph()
    listing = client_with(Recorder(httpx.Response(200, json=[1])))
    with listing, pytest.raises(UpstreamError, match="answered with a JSON list"):
        listing.health()
