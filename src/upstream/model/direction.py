"""Which way lineage is followed: the one vocabulary of every walk (design §4.1, §4.5).

`Direction` is what a question asks for (dataset, job and run lineage, diffs); `Step` is the
way one step of a walk goes, so `both` is two walks, one per step.
"""

from __future__ import annotations

from typing import Literal, get_args

Direction = Literal["both", "upstream", "downstream"]
Step = Literal["upstream", "downstream"]

#: Each accepted value by its text, for the parsers that read a parameter.
DIRECTIONS: dict[str, Direction] = {d: d for d in get_args(Direction)}
