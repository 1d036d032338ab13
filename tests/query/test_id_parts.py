"""The JSON text of ids kept by their numbers (`query.id_parts`): each id written once, as
orjson writes it, and an id numbered later written when an answer first shows it."""

from __future__ import annotations

import numpy as np
import orjson

from upstream.query.graph_index.numbering import Numbering
from upstream.query.id_parts import id_parts


def numbers(*found: int) -> np.ndarray:
    return np.array(found, dtype=np.int64)


def test_each_id_is_its_json_string_after_a_comma() -> None:
    numbering = Numbering()
    numbering.numbers(["r1", 'r"2', "é\u2028"])
    assert id_parts(numbering, numbers(2, 0, 1, 0)).tolist() == [
        b"," + orjson.dumps("é\u2028"),
        b',"r1"',
        b',"r\\"2"',
        b',"r1"',
    ]


def test_an_id_is_written_once_and_one_numbered_later_when_first_shown() -> None:
    numbering = Numbering()
    numbering.numbers(["a", "b"])
    first = id_parts(numbering, numbers(0))[0]
    assert id_parts(numbering, numbers(0))[0] is first  # kept, not written again
    numbering.numbers([f"r{n}" for n in range(10)])  # the numbering grows past what is kept
    assert id_parts(numbering, numbers(11, 1, 0)).tolist() == [b',"r9"', b',"b"', b',"a"']
    assert id_parts(numbering, numbers(0))[0] is first


def test_each_numbering_has_its_own_texts() -> None:
    """Two indexes (two databases) number the same ids differently."""
    one, other = Numbering(), Numbering()
    one.numbers(["x", "y"])
    other.numbers(["y", "x"])
    assert id_parts(one, numbers(0, 1)).tolist() == [b',"x"', b',"y"']
    assert id_parts(other, numbers(0, 1)).tolist() == [b',"y"', b',"x"']
