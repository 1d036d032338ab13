"""Dense integer numbers for the ids of one kind (datasets, jobs, runs, components), so the
index's columns are small integer arrays and a walk compares integers, not uuids.

A numbering only grows: an id keeps its number for the life of the process, and the versions
of the index that share a numbering never meet a number they do not hold, so it is shared
between them rather than copied. Ids are answered as their hyphenated text, the form answers
show.

The ids are kept compactly, because on a large store they are a million (runs and the owners
of rows): an id that is a uuid's canonical text (lower-case, hyphenated: what the store's
readers give) is 16 bytes in one array, found by an open-addressing hash table of numbers
(`_Table`), not a Python string and a dictionary entry each (about 130 bytes, and strings
made among a load's rows kept the allocator's arenas of those rows alive). Any other text
(a component's name, a version, a field's name) is kept as a string in a dictionary. A text is
made when it is asked for (`texts[n]`, `texts.take`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import cast, overload

import numpy as np
import numpy.typing as npt

#: The number standing for "no id" (a declared relation's run, a flow without a job).
NONE = -1

Keys = npt.NDArray[np.uint8]
#: Keys as (first, second) 64-bit halves.
Halves = npt.NDArray[np.uint64]
_UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: Where a uuid's text has its hex digits and its hyphens.
_DIGIT_PLACES = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])
_HYPHEN_PLACES = np.array([8, 13, 18, 23])
#: Each byte's value as a lower-case hex digit (255: not one), and each digit's byte.
_NIBBLE = np.full(256, 255, dtype=np.uint8)
_NIBBLE[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = np.arange(16, dtype=np.uint8)
_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_MIX_INTS = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F)
_MIX = (np.uint64(_MIX_INTS[0]), np.uint64(_MIX_INTS[1]))
_MASK64 = (1 << 64) - 1
_HALVES = np.dtype("<u8")


def _uuid_keys(texts: Sequence[str]) -> tuple[npt.NDArray[np.bool_], Keys]:
    """Which of `texts` (strings of 36 characters) are a uuid's canonical text, and those
    ones' 16 bytes."""
    joined = "".join(texts)
    if not joined.isascii():
        ascii_ = np.fromiter(map(str.isascii, texts), dtype=np.bool_, count=len(texts))
        canonical = np.zeros(len(texts), dtype=np.bool_)
        places = np.flatnonzero(ascii_)
        found, ascii_keys = _uuid_keys([texts[place] for place in places.tolist()])
        canonical[places[found]] = True
        return canonical, ascii_keys
    raw = np.frombuffer(joined.encode("ascii"), dtype=np.uint8).reshape(-1, 36)
    hyphens = (raw[:, _HYPHEN_PLACES] == ord("-")).all(axis=1)
    if hyphens.all() and joined.count("-") == 4 * len(texts):
        # Every text is hyphenated as a uuid is: its digits read at once, and kept if the
        # bytes read give the same text back (lower case, no blanks).
        digits = joined.replace("-", "")
        try:
            read = bytes.fromhex(digits)
        except ValueError:
            read = b""
        if len(read) == 16 * len(texts) and read.hex() == digits:
            return hyphens, np.frombuffer(read, dtype=np.uint8).reshape(-1, 16)
    nibbles = _NIBBLE[raw[:, _DIGIT_PLACES]]
    canonical = hyphens & (nibbles != 255).all(axis=1)
    nibbles = nibbles[canonical]
    keys: Keys = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    return canonical, keys


def _key(text: str) -> bytes | None:
    """The 16 bytes of a uuid's canonical text; None for any other text."""
    if len(text) != 36 or not _UUID_TEXT.fullmatch(text):
        return None
    return bytes.fromhex(text.replace("-", ""))


def _text_rows(keys: Keys) -> Keys:
    """The canonical text of each 16-byte key, as a row of 36 bytes."""
    digits = np.empty((len(keys), 32), dtype=np.uint8)
    digits[:, 0::2] = _DIGITS[keys >> 4]
    digits[:, 1::2] = _DIGITS[keys & 15]
    raw = np.full((len(keys), 36), ord("-"), dtype=np.uint8)
    raw[:, _DIGIT_PLACES] = digits
    return raw


def _texts_of(keys: Keys) -> list[str]:
    """The canonical text of each 16-byte key, made together."""
    if not len(keys):
        return []
    joined = _text_rows(keys).tobytes().decode("ascii")
    return [joined[at : at + 36] for at in range(0, len(joined), 36)]


def _halves(keys: Keys) -> Halves:
    """16-byte keys as two 64-bit integers each, to compare and hash."""
    found: Halves = np.ascontiguousarray(keys).view(_HALVES)
    return found


def _homes(halves: Halves, bits: int) -> npt.NDArray[np.int64]:
    """Each key's first slot in a table of 2**bits slots."""
    mixed = (halves[:, 0] * _MIX[0]) ^ (halves[:, 1] * _MIX[1])
    return (mixed >> np.uint64(64 - bits)).astype(np.int64)


class _Table:
    """An open-addressing hash table (linear probing, at most half full) from 16-byte keys to
    the numbers that index them in `keys`; 4 bytes a slot."""

    def __init__(self, bits: int) -> None:
        self.bits = bits
        self.slots = np.full(1 << bits, NONE, dtype=np.int32)

    def find(self, keys: Halves, held: Halves) -> npt.NDArray[np.int64]:
        """The number of each of `keys` (NONE: not held); `held` is every number's key."""
        found = np.full(len(keys), NONE, dtype=np.int64)
        waiting = np.arange(len(keys))
        at = _homes(keys, self.bits)
        mask = len(self.slots) - 1
        while len(waiting):
            numbers = self.slots[at].astype(np.int64)
            empty = numbers == NONE
            known = held[np.maximum(numbers, 0)]
            same = ~empty & (known[:, 0] == keys[waiting, 0]) & (known[:, 1] == keys[waiting, 1])
            found[waiting[same]] = numbers[same]
            going_on = ~empty & ~same
            waiting, at = waiting[going_on], (at[going_on] + 1) & mask
        return found

    def place(self, keys: Halves, numbers: npt.NDArray[np.int64]) -> None:
        """Put `numbers` (of distinct keys, none held) in their slots."""
        at = _homes(keys, self.bits)
        mask = len(self.slots) - 1
        while len(numbers):
            free = np.flatnonzero(self.slots[at] == NONE)
            # Of the numbers meeting at one free slot the first takes it; the others go on.
            _, first = np.unique(at[free], return_index=True)
            taken = free[first]
            self.slots[at[taken]] = numbers[taken]
            going_on = np.ones(len(numbers), dtype=np.bool_)
            going_on[taken] = False
            numbers, at = numbers[going_on], (at[going_on] + 1) & mask

    def get(self, key: bytes, held: Halves) -> int | None:
        """The number of one key, probed in Python (for a single look-up)."""
        first = int.from_bytes(key[:8], "little") * _MIX_INTS[0]
        second = int.from_bytes(key[8:], "little") * _MIX_INTS[1]
        at = ((first ^ second) & _MASK64) >> (64 - self.bits)
        mask = len(self.slots) - 1
        while True:
            number = int(self.slots[at])
            if number == NONE:
                return None
            if held[number].tobytes() == key:
                return number
            at = (at + 1) & mask


#: At most this many texts made by `Numbering.text` are kept (a few MB); past it, they are
#: made again.
MADE_KEPT = 65_536


class IdTexts(Sequence[str]):
    """The texts of a numbering's ids, by number, made when asked for; it grows with the
    numbering."""

    def __init__(self, numbering: Numbering) -> None:
        self._numbering = numbering

    def __len__(self) -> int:
        return len(self._numbering)

    @overload
    def __getitem__(self, number: int) -> str: ...

    @overload
    def __getitem__(self, number: slice) -> list[str]: ...

    def __getitem__(self, number: int | slice) -> str | list[str]:
        if isinstance(number, slice):
            places = range(len(self))[number]
            return self.take(np.arange(places.start, places.stop, places.step))
        return self._numbering.text(int(number))

    def __iter__(self) -> Iterator[str]:
        step = 65_536
        for start in range(0, len(self), step):
            yield from self[start : start + step]

    def take(self, numbers: npt.NDArray[np.integer] | Sequence[int]) -> list[str]:
        """The texts of `numbers`, made together."""
        return self._numbering.take(np.asarray(numbers, dtype=np.int64))

    def ranks(self, numbers: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        """`Numbering.text_ranks` of `numbers`."""
        return self._numbering.text_ranks(numbers)

    def take_repeated(self, numbers: npt.NDArray[np.integer]) -> list[str]:
        """`take` of numbers that repeat (the few datasets of many field edges): each
        distinct one's text made once."""
        distinct, places = np.unique(numbers, return_inverse=True)
        texts = self.take(distinct)
        return list(map(texts.__getitem__, places.ravel().tolist()))


class Numbering:
    """Ids of one kind and their numbers."""

    def __init__(self) -> None:
        self._count = 0
        #: Each number's uuid as 16 bytes (zeros for a number whose id is other text).
        self._keys: Halves = np.zeros((16, 2), dtype=_HALVES)
        self._table = _Table(5)
        self._uuids = 0
        #: Ids that are not a uuid's canonical text, both ways.
        self._others: dict[str, int] = {}
        self._other_texts: dict[int, str] = {}
        #: The numbers in their ids' text order and each number's place in it (one place
        #: more, the last, for numbers given later), as of the first numbers; one tuple, so
        #: a reader sees both parts of one state.
        self._text_order: tuple[npt.NDArray[np.int64] | None, npt.NDArray[np.int64]] = (
            np.zeros(0, dtype=np.int64),
            np.zeros(1, dtype=np.int64),
        )
        #: Texts made lately, by number: an answer names the same few ids once for every
        #: row it shows, and making one from its bytes each time slowed answers by a third.
        self._made: dict[int, str] = {}
        self.texts = IdTexts(self)

    def __len__(self) -> int:
        return self._count

    def text(self, number: int) -> str:
        """The text of the id numbered `number`."""
        if number < 0:
            number += self._count
        if not 0 <= number < self._count:
            raise IndexError(number)
        if self._other_texts:
            other = self._other_texts.get(number)
            if other is not None:
                return other
        made = self._made.get(number)
        if made is None:
            hexed = self._keys[number].tobytes().hex()
            made = f"{hexed[:8]}-{hexed[8:12]}-{hexed[12:16]}-{hexed[16:20]}-{hexed[20:]}"
            if len(self._made) >= MADE_KEPT:
                self._made.clear()
            self._made[number] = made
        return made

    def take(self, numbers: npt.NDArray[np.int64]) -> list[str]:
        """The texts of `numbers` (each one held)."""
        if len(numbers) and (numbers.min() < 0 or numbers.max() >= self._count):
            raise IndexError("a number the numbering does not hold")
        if not self._uuids:
            # Names only (fields, components): every text is held as given, none is made.
            return list(map(self._other_texts.__getitem__, numbers.tolist()))
        found = _texts_of(self._keys[numbers].view(np.uint8).reshape(-1, 16))
        if self._other_texts:
            for place, number in enumerate(numbers.tolist()):
                other = self._other_texts.get(number)
                if other is not None:
                    found[place] = other
        return found

    def text_rows(self, numbers: npt.NDArray[np.int64]) -> Keys | None:
        """The texts of `numbers` (each held) as rows of 36 ASCII bytes, made together from
        their keys; None when the numbering holds an id that is no uuid's text (whose text
        may be of any length)."""
        if self._other_texts:
            return None
        return _text_rows(self._keys[numbers].view(np.uint8).reshape(-1, 16))

    def number(self, text: str | None) -> int:
        """The number of `text` (given one if new); NONE for None."""
        if text is None:
            return NONE
        found = self.known(text)
        if found is None:
            key = _key(text)
            found = self._count
            if key is None:
                self._grow(found + 1)
                self._others[text] = found
                self._other_texts[found] = text
                self._count += 1
            else:
                self._add(np.frombuffer(key, dtype=_HALVES).reshape(1, 2))
        return found

    def numbers(self, texts: Iterable[str | None]) -> npt.NDArray[np.int32]:
        """The number of each of `texts` (new ones numbered in the order they come), found
        together: the ids that are uuids by one look-up of their keys in the table."""
        texts = list(texts)
        found = np.full(len(texts), NONE, dtype=np.int32)
        try:
            sizes = np.fromiter(
                map(len, cast("list[str]", texts)), dtype=np.int64, count=len(texts)
            )
        except TypeError:  # a None among them
            sizes = np.fromiter(
                (-1 if text is None else len(text) for text in texts),
                dtype=np.int64,
                count=len(texts),
            )
        places = np.flatnonzero(sizes == 36)
        candidates = cast(
            "list[str]", texts if len(places) == len(texts) else [texts[p] for p in places.tolist()]
        )
        canonical, keys = _uuid_keys(candidates)
        known, number = self._others, self.number
        if not len(keys):  # no uuid among them (names): a dictionary's look-up each
            return np.fromiter(
                (known[text] if text in known else number(text) for text in texts),
                dtype=np.int32,
                count=len(texts),
            )
        halves = _halves(keys)
        places = places[canonical]
        numbers = self._table.find(halves, self._keys) if self._uuids else np.full(len(keys), -1)
        missing = numbers == NONE
        others = np.ones(len(texts), dtype=np.bool_)
        others[places] = False
        others &= sizes >= 0
        rest = np.flatnonzero(others)
        if missing.any() and len(rest):
            # New uuids among other texts: numbered one at a time, in the order they come.
            return np.fromiter(map(self.number, texts), dtype=np.int32, count=len(texts))
        if missing.any():
            # Each new key numbered in the order of its first place.
            new = halves[missing]
            _, first, inverse = np.unique(
                np.ascontiguousarray(new).view("S16").ravel(),
                return_index=True,
                return_inverse=True,
            )
            rank = np.empty(len(first), dtype=np.int64)
            rank[np.argsort(first, kind="stable")] = np.arange(len(first))
            numbers[missing] = self._count + rank[inverse.ravel()]
            self._add(new[np.sort(first)])
        found[places] = numbers
        for place in rest.tolist():
            text = texts[place]
            found[place] = known[text] if text in known else number(text)
        return found

    def _grow(self, count: int) -> None:
        """Room for `count` numbers' keys (a quarter more than asked, to grow in steps)."""
        if count > len(self._keys):
            grown = np.zeros((max(count, len(self._keys) * 5 // 4 + 1024), 2), dtype=_HALVES)
            grown[: self._count] = self._keys[: self._count]
            self._keys = grown

    def _add(self, keys: Halves) -> None:
        """Number `keys` (distinct uuids, none held) from the next number on."""
        count = self._count + len(keys)
        self._grow(count)
        self._keys[self._count : count] = keys
        numbers = np.arange(self._count, count, dtype=np.int64)
        self._count = count
        self._uuids += len(keys)
        if self._uuids * 2 > len(self._table.slots):
            table = _Table(max(5, (self._uuids * 2).bit_length()))
            held = np.ones(count, dtype=np.bool_)
            held[list(self._other_texts)] = False
            every = np.flatnonzero(held)
            table.place(self._keys[every], every)
            self._table = table
        else:
            self._table.place(keys, numbers)

    def known(self, text: str) -> int | None:
        """The number of `text` if it has one."""
        if self._others:
            found = self._others.get(text)
            if found is not None:
                return found
        if not self._uuids:
            return None
        key = _key(text)
        return None if key is None else self._table.get(key, self._keys)

    def known_numbers(self, texts: Sequence[str]) -> npt.NDArray[np.int64]:
        """The number of each of `texts` that has one, NONE for the others: `known` for
        many ids at once (the uuids by one look-up of their keys), numbering none."""
        found = np.full(len(texts), NONE, dtype=np.int64)
        places = np.array([p for p, text in enumerate(texts) if len(text) == 36], dtype=np.int64)
        if len(places) and self._uuids:
            canonical, keys = _uuid_keys([texts[place] for place in places.tolist()])
            if len(keys):
                found[places[canonical]] = self._table.find(_halves(keys), self._keys)
        if self._others:
            for place, text in enumerate(texts):
                other = self._others.get(text)
                if other is not None:
                    found[place] = other
        return found

    def text_order(self) -> npt.NDArray[np.int64]:
        """The place of each number's id in the sorted ids, with one place more (the last)
        for ids numbered later. Kept until an id is numbered, and then brought up to date
        by merging the new ids into the order kept (a binary search each), not by sorting
        every id again: every version of the index shares it, where sorting half a million
        run ids took each change a fifth of a second. Uuids sort by their bytes as their
        canonical texts do."""
        ordered, order = self._text_order
        known = len(order) - 1
        count = self._count
        if known == count:
            return order
        keys = self._keys
        if self._other_texts:
            # Texts that are not all uuids: sorted as texts, every time.
            texts = np.array(self.texts[:count], dtype="U36")
            ordered, kept = np.argsort(texts, kind="stable"), None
        else:
            halves = keys[known:count].view(">u8")
            new = known + np.lexsort((halves[:, 1], halves[:, 0]))
            if ordered is not None and known:
                # Each new key after the held keys that sort before it (keys are distinct).
                held = np.ascontiguousarray(keys[:known]).view("S16").ravel()[ordered]
                places = np.searchsorted(held, keys[new].view("S16").ravel())
                new = np.insert(ordered, places, new)
            ordered = kept = new
        order = np.empty(count + 1, dtype=np.int64)
        order[ordered] = np.arange(count)
        order[-1] = count
        self._text_order = (kept, order)
        return order

    def text_ranks(self, numbers: npt.NDArray[np.int64]) -> npt.NDArray[np.int64] | None:
        """The place of each of `numbers` (distinct, each held) among them when sorted by
        their ids' text, from the kept text order (`text_order`): no text made and none
        compared. None when some id is not a uuid's text (the caller sorts the texts)."""
        if self._other_texts:
            return None
        order = self.text_order()
        return places_among(order[numbers], len(order))


def places_among(values: npt.NDArray[np.int64], size: int) -> npt.NDArray[np.int64]:
    """Each of `values`' (distinct, each below `size`) place among them sorted: by flags
    over `size` when they are many of it (a walk's thousands of runs: linear time, a sixth
    of a sort's), else by a sort."""
    if len(values) * 32 < size:
        places = np.empty(len(values), dtype=np.int64)
        places[np.argsort(values)] = np.arange(len(values))
        return places
    seen = np.zeros(size, dtype=np.bool_)
    seen[values] = True
    found: npt.NDArray[np.int64] = (np.cumsum(seen) - 1)[values]
    return found
