"""Table cells that wrap where a reader expects: after a space or a path separator.

Rich wraps text only at spaces and folds a longer word at whatever character reaches the edge,
so `analytics.customer_summary` in a narrow column became `analytics.custo` / `mer_summary`.
A name is words joined by `.`, `/`, `:`, `_`, `-` (`s3://raw-bucket/users/2026.csv`), so a
line may also end after any of those. The narrowest a cell goes (its Rich measurement) is its
longest unbreakable piece, so a table squeezed into 80 columns narrows its columns down to
whole words first; a piece is cut only when it alone is wider than the whole column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

#: A piece of a line: characters up to and including a run of break characters after them.
_PIECE = re.compile(r"[^\s/.:_\-,@]*[\s/.:_\-,@]*")
#: A piece of a line that breaks only at spaces: a time or an id is one word.
_WORD = re.compile(r"\S*\s*")


class Wrapped:
    """A Rich renderable of `text` (styles kept) that breaks lines only between pieces; with
    `whole_words`, only at spaces (`2026-12-03 17:24:42` never splits inside its date)."""

    def __init__(self, text: Text | str, *, whole_words: bool = False) -> None:
        self.text = text if isinstance(text, Text) else Text(text)
        self.piece = _WORD if whole_words else _PIECE

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        lines = self.text.split("\n", allow_blank=True)
        widest = max((line.cell_len for line in lines), default=0)
        piece = max(
            (cell_len(p.rstrip()) for line in lines for p in _pieces(self.piece, line.plain)),
            default=0,
        )
        return Measurement(min(piece, options.max_width), min(widest, options.max_width))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(options.max_width, 1)
        wrapped: list[Text] = []
        for line in self.text.split("\n", allow_blank=True):
            for part in line.divide(_breaks(self.piece, line.plain, width)):
                part.rstrip()
                wrapped.append(part)
        result = Text("\n").join(wrapped)
        result.no_wrap = True
        result.overflow = "fold"
        yield result


def _pieces(piece: re.Pattern[str], plain: str) -> Iterator[str]:
    for match in piece.finditer(plain):
        if match.group():
            yield match.group()


def _breaks(pattern: re.Pattern[str], plain: str, width: int) -> list[int]:
    """Offsets in `plain` where new lines start so that each fits `width` cells, breaking
    between pieces (a trailing space may overhang: it is cut), and inside a piece only when
    the piece alone is wider than `width`."""
    breaks: list[int] = []
    used = 0
    offset = 0
    for piece in _pieces(pattern, plain):
        if used and used + cell_len(piece.rstrip()) > width:
            breaks.append(offset)
            used = 0
        for character in piece:
            size = cell_len(character)
            if used and used + size > width and not character.isspace():
                breaks.append(offset)  # a piece wider than the column: cut it
                used = 0
            used += size
            offset += 1
    return breaks
