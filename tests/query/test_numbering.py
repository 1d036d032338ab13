"""The index's numbering of ids (`graph_index.numbering`): it answers as a dictionary and a
list of texts would — numbers given in the order ids come, `texts[n]`, `known`, the ids'
order — while a uuid's id is kept as 16 bytes, not a Python string and a dictionary entry."""

from __future__ import annotations

import gc
import tracemalloc
import uuid
from random import Random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from upstream.query.graph_index import numbering as numbering_module
from upstream.query.graph_index.numbering import NONE, Numbering

UUIDS = [str(uuid.UUID(int=i * 0x9E3779B97F4A7C15_0123456789ABCDEF % 2**128)) for i in range(40)]

#: Uuids' texts, the forms that are not one (upper case, no hyphens, longer, another letter),
#: names and None, to be numbered as they come.
texts = st.one_of(
    st.sampled_from(UUIDS),
    st.sampled_from(UUIDS).map(str.upper),
    st.sampled_from(UUIDS).map(lambda text: text.replace("-", "")),
    st.sampled_from(UUIDS).map(lambda text: text + "\n"),
    st.sampled_from(UUIDS).map(lambda text: "g" + text[1:]),
    st.sampled_from(UUIDS).map(lambda text: "é" + text[1:]),
    st.sampled_from(["", "a", "component", "x" * 36]),
    st.none(),
)


class Model:
    """What a numbering answers: a dictionary and a list."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.texts: list[str] = []

    def number(self, text: str | None) -> int:
        if text is None:
            return NONE
        if text not in self.numbers:
            self.numbers[text] = len(self.texts)
            self.texts.append(text)
        return self.numbers[text]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(texts, max_size=12)), max_size=8))
def test_a_numbering_answers_as_a_dictionary_and_a_list(
    steps: list[tuple[bool, list[str | None]]],
) -> None:
    numbering, model = Numbering(), Model()
    for together, batch in steps:
        expected = [model.number(text) for text in batch]
        if together:
            assert numbering.numbers(iter(batch)).tolist() == expected
        else:
            assert [numbering.number(text) for text in batch] == expected
        assert len(numbering) == len(numbering.texts) == len(model.texts)
        assert list(numbering.texts) == model.texts
        assert [numbering.texts[n] for n in range(len(model.texts))] == model.texts
        assert numbering.texts[1:] == model.texts[1:]
        assert numbering.texts.take(np.arange(len(model.texts))[::-1]) == model.texts[::-1]
        repeated = np.arange(len(model.texts)).repeat(2)[::-1]
        assert numbering.texts.take_repeated(repeated) == [model.texts[n] for n in repeated]
        asked = [*model.texts, *UUIDS[:3], "absent"]
        for text in asked:
            assert numbering.known(text) == model.numbers.get(text)
        assert numbering.known_numbers(asked).tolist() == [
            model.numbers.get(text, NONE) for text in asked
        ]
        assert len(numbering) == len(model.texts)  # looking up numbers none
        order = numbering.text_order()
        assert len(order) == len(model.texts) + 1
        assert order[-1] == len(model.texts)
        by_text = sorted(range(len(model.texts)), key=lambda n: model.texts[n][:36])
        assert np.argsort(order[:-1], kind="stable").tolist() == by_text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(UUIDS), max_size=12), max_size=8), st.randoms())
def test_the_text_order_kept_as_uuids_are_numbered_is_their_sorted_order(
    steps: list[list[str]], random: Random
) -> None:
    """Uuids numbered batch after batch: the order kept (each batch merged into it) and
    the ranks of some numbers among them are those of their texts sorted."""
    numbering, model = Numbering(), Model()
    for batch in steps:
        numbering.numbers(batch)
        for text in batch:
            model.number(text)
        by_text = sorted(range(len(model.texts)), key=model.texts.__getitem__)
        assert np.argsort(numbering.text_order()[:-1]).tolist() == by_text
        some = sorted(random.sample(range(len(model.texts)), len(model.texts) // 2))
        ranks = numbering.text_ranks(np.array(some, dtype=np.int64))
        assert ranks is not None
        chosen = [model.texts[n] for n in some]
        assert [chosen[i] for i in np.argsort(ranks)] == sorted(chosen)


def test_many_ids_numbered_in_chunks_keep_their_numbers() -> None:
    ids = [str(uuid.uuid4()) for _ in range(30_000)]
    numbering = Numbering()
    for start in range(0, len(ids), 7_000):
        chunk = ids[start : start + 7_000]
        assert numbering.numbers(chunk + chunk[:10]).tolist() == [
            *range(start, start + len(chunk)),
            *range(start, start + 10),
        ]
    assert numbering.numbers(ids[::-1]).tolist() == list(range(len(ids)))[::-1]
    assert numbering.texts[:] == ids
    order = numbering.text_order()
    assert np.argsort(order[:-1]).tolist() == sorted(range(len(ids)), key=ids.__getitem__)
    assert numbering.known(str(uuid.uuid4())) is None


def test_a_uuid_costs_its_bytes_not_a_string_and_a_dictionary_entry() -> None:
    ids = [str(uuid.uuid4()) for _ in range(100_000)]
    gc.collect()
    tracemalloc.start()
    try:
        numbering = Numbering()
        for start in range(0, len(ids), 10_000):
            # Fresh strings, as rows read from the store are.
            numbering.numbers([text.upper().lower() for text in ids[start : start + 10_000]])
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 16 bytes of key, 8 to 16 of hash table, room to grow: a string and a dictionary
    # entry were 130.
    assert held / len(ids) < 48
    assert numbering.texts[12_345] == ids[12_345]


def test_a_text_asked_again_is_not_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer names one id once per row it shows: the text made for the first is kept
    (the same object comes back), and at most `MADE_KEPT` texts are kept."""
    monkeypatch.setattr(numbering_module, "MADE_KEPT", 4)
    numbering = Numbering()
    ids = [str(uuid.UUID(int=n + 1)) for n in range(10)]
    numbering.numbers(ids)
    first = numbering.texts[3]
    assert first == ids[3]
    assert numbering.texts[3] is first
    for number in range(10):
        assert numbering.texts[number] == ids[number]
    assert len(numbering._made) <= 4


def test_names_are_taken_as_held_none_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """A numbering of names (fields, components) gives back the strings it was given: an
    answer names thousands of fields together, and making texts from keys for them (then
    putting each name in its place) cost a diff more than its walk."""
    numbering = Numbering()
    names = [f"field_{n}".upper().lower() for n in range(5)]
    numbering.numbers(names)

    def made(keys: object) -> list[str]:
        raise AssertionError("a name's text made from a key")

    monkeypatch.setattr(numbering_module, "_texts_of", made)
    taken = numbering.texts.take(np.array([4, 0, 4], dtype=np.int64))
    assert taken == [names[4], names[0], names[4]]
    assert all(text is names[n] for text, n in zip(taken, [4, 0, 4], strict=True))
    assert numbering.texts.take_repeated(np.array([1, 1, 3])) == [names[1], names[1], names[3]]
