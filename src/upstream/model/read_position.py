"""The position a write answers with and a read may wait for (design §6), as text.

Two kinds travel in one value. A store position is the change-log position a write committed
at (`12`). A publishing front stores nothing itself: it answers with where Kafka put the
post's events, the newest offset in each partition it wrote to
(`kafka:openlineage:0:41,kafka:openlineage:3:7`). A value may hold both, comma-separated: a
client that wrote to a storing server and to a front carries both into its next read.

Combining two values (`ReadPosition.then`) keeps the later store position — a client's newest
write is committed after its earlier ones — and the larger offset of each partition, whose
offsets only grow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from upstream.model.errors import InvalidParameter, Problem

#: A Kafka topic name, as Kafka allows it (letters, digits, `.`, `_` and `-`, at most 249).
_TOPIC = r"[A-Za-z0-9._-]{1,249}"
#: One item of a position: a store position or one partition's offset.
ITEM = rf"[0-9]+|kafka:{_TOPIC}:[0-9]+:[0-9]+"
#: A whole position, as `?after=` and the `X-Upstream-Position` header take it.
PATTERN = rf"^({ITEM})(,({ITEM}))*$"
#: Items one position may hold: a topic has at most a few hundred partitions.
MOST_ITEMS = 1024

_KAFKA = re.compile(rf"kafka:({_TOPIC}):([0-9]+):([0-9]+)")


class KafkaOffset(NamedTuple):
    """The offset of a message in one partition of a topic."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class ReadPosition:
    """A store position (`change`) and Kafka offsets (at most one per partition, sorted)."""

    change: int | None = None
    offsets: tuple[KafkaOffset, ...] = ()

    @classmethod
    def of_offsets(cls, offsets: Iterable[KafkaOffset]) -> ReadPosition:
        """The newest offset of each partition among `offsets`."""
        return cls(offsets=_newest(offsets))

    @classmethod
    def parse(cls, text: str) -> ReadPosition:
        """A position as a client sends it; refused naming `after` when it is none."""
        items = text.split(",")
        if not re.fullmatch(PATTERN, text) or len(items) > MOST_ITEMS:
            raise InvalidParameter(
                [
                    Problem(
                        "after",
                        "must be a change-log position (0 or more) or Kafka offsets "
                        f"(kafka:<topic>:<partition>:<offset>, comma-separated), not {text!r}",
                    )
                ]
            )
        changes = [int(item) for item in items if item.isdigit()]
        kafka = [_KAFKA.fullmatch(item) for item in items if not item.isdigit()]
        return cls(
            change=max(changes, default=None),
            offsets=_newest(
                KafkaOffset(m[1], int(m[2]), int(m[3])) for m in kafka if m is not None
            ),
        )

    def then(self, later: ReadPosition) -> ReadPosition:
        """This position followed by a later write's: its store position, else this one's,
        and the newest offset of each partition of either."""
        change = self.change if later.change is None else later.change
        return ReadPosition(change, _newest(self.offsets + later.offsets))

    def together(self, other: ReadPosition) -> ReadPosition:
        """Both at once (a read naming two positions waits for both): the larger store
        position and the newest offset of each partition."""
        changes = [c for c in (self.change, other.change) if c is not None]
        return ReadPosition(max(changes, default=None), _newest(self.offsets + other.offsets))

    def __str__(self) -> str:
        items = [] if self.change is None else [str(self.change)]
        items += [f"kafka:{o.topic}:{o.partition}:{o.offset}" for o in self.offsets]
        return ",".join(items)


def _newest(offsets: Iterable[KafkaOffset]) -> tuple[KafkaOffset, ...]:
    newest: dict[tuple[str, int], int] = {}
    for topic, partition, offset in offsets:
        newest[(topic, partition)] = max(newest.get((topic, partition), offset), offset)
    return tuple(KafkaOffset(t, p, o) for (t, p), o in sorted(newest.items()))
