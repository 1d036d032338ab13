"""A malformed JSON body is answered with a whole sentence: where (line and column) and why,
never the json module's phrases that stop mid-sentence ("Invalid control character at")."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from upstream.api.app import create_app
from upstream.settings import Settings


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    path = tmp_path_factory.mktemp("malformed") / "upstream.db"
    with TestClient(create_app(Settings(db_url=f"sqlite:///{path}"))) as test_client:
        yield test_client


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"eventType": "START\n', "at line 1 column 21: Invalid control character"),
        (b'{"eventType": "START', "at line 1 column 15: Unterminated string"),
        (b'{"a": "\\q"}', "at line 1 column 8: Invalid \\escape"),
        (b'{"a": "\\u12"}', "at line 1 column 9: Invalid \\uXXXX escape"),
        (b'{\n  "a" 1}', "at line 2 column 7: Expecting ':' delimiter"),
        (
            b'{"eventType": "START", trunc',
            "at line 1 column 24: Expecting property name enclosed in double quotes",
        ),
    ],
)
def test_a_malformed_body_is_answered_in_a_whole_sentence(
    client: TestClient, body: bytes, message: str
) -> None:
    response = client.post(
        "/api/v1/lineage", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["message"] == f"body: malformed JSON {message}"
