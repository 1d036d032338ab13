"""Answers are written by orjson, byte for byte as FastAPI's encoder and `json.dumps` wrote
them (`upstream.model.json_text.answer_bytes`, `upstream.api.json_answer`)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import orjson
import pytest
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.json_values import SCALARS, json_values
from upstream.api.json_answer import JsonAnswer
from upstream.model.json_text import Written, answer_bytes


@dataclass
class Point:
    x: int
    label: str


class Model(BaseModel):
    name: str
    at: datetime


RUN = uuid.UUID("6f1a1b9e-0b7c-4f43-9a55-2f0d3c8b1e11")
MOMENT = datetime(2026, 10, 1, 7, 3, 0, 250000, tzinfo=UTC)


def standard(value: Any) -> bytes:
    """What a route returning `value` answered before: Starlette's JSONResponse."""
    return bytes(JSONResponse(jsonable_encoder(value)).body)


@pytest.mark.parametrize(
    "value",
    [
        {"relations": [{"data": "dataset.ns.é ✓", "runs": [str(RUN)]}], "truncated": True},
        {"run": RUN, "at": MOMENT, "naive": datetime(2026, 10, 1), "day": date(2026, 10, 1)},
        {"small": 1e-05, "tiny": [-2.9e-08, 0.0001], "big": 1e16, "int": 2**70},
        {
            "set": {3},
            "tuple": (1, "a"),
            "point": Point(1, "p"),
            "model": Model(name="m", at=MOMENT),
        },
        {RUN: "a key that is no string"},
        [None, False, '\u2028 \x7f \n \t " \\', {"nested": {"deep": [{}]}}],
    ],
)
def test_answers_have_the_bytes_the_standard_encoder_wrote(value: Any) -> None:
    assert answer_bytes(value, jsonable_encoder) == standard(value)
    assert JsonAnswer(value).body == standard(value)
    assert JsonAnswer(value).headers["content-type"] == "application/json"


@given(json_values(SCALARS | st.uuids()))
def test_any_answer_has_the_standard_bytes(value: Any) -> None:
    assert answer_bytes(value, jsonable_encoder) == standard(value)


def test_the_fallback_is_the_standard_library_itself() -> None:
    assert (
        answer_bytes({"n": -(2**63) - 1}, jsonable_encoder)
        == json.dumps({"n": -(2**63) - 1}, separators=(",", ":")).encode()
    )


def test_written_parts_are_placed_as_they_are_and_read_back_where_json_writes() -> None:
    """An answer's part written already (`Written`) is placed as it is; where the answer
    is written by `json` (here an integer beyond 64 bits), the part is read back."""
    entries = [{"data": "dataset.n.a", "runs": ["6f1a1b9e-4e-1"]}, {"data": 'x"\u2028'}]
    written = Written(orjson.dumps(entries), len(entries))
    answer = {"relations": written, "data": {"a": [1, 2]}, "n": 2}
    assert answer_bytes(answer, jsonable_encoder) == standard({**answer, "relations": entries})
    huge = {**answer, "n": 2**70}
    assert answer_bytes(huge, jsonable_encoder) == standard({**huge, "relations": entries})
