"""Whether a database's schema is the newest this code knows, cheaply in the usual case.

Reading a database (`upstream lineage --db`, `/ready`) checks its schema every time, and
Alembic's own check imports its machinery and every migration module to find the head: a
fifth of a command's start. So the stored revision is read straight from Alembic's version
table, and the head from the migration files' `revision` and `down_revision` lines as text.
When they agree the schema is current; in every other case (an older store, no version
table, files this reading cannot follow, such as a merge of two heads) Alembic decides, as
it always did (`upstream.store.migrate`).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError

from upstream.store.engine import Store

_VERSIONS = Path(__file__).parent / "migrations" / "versions"
#: `revision = "0016"` and `down_revision = "0015"` (or None) at the start of a line.
_NAMED = re.compile(
    r"""^(down_revision|revision)\s*(?::[^=]*)?=\s*(None|"[^"]*"|'[^']*')\s*$""", re.MULTILINE
)


def is_current(store: Store) -> bool:
    """The schema is at the newest migration this code knows."""
    stored = stored_revision(store)
    if stored is not None and stored == head_from_files():
        return True
    from upstream.store.migrate import current_revision, head_revision

    return current_revision(store) == head_revision()


def stored_revision(store: Store) -> str | None:
    """The one revision Alembic's version table holds; None when it holds none or several,
    or cannot be read (no such table), for Alembic to judge."""
    try:
        with store.engine.connect() as conn:
            found = conn.execute(sa.text("SELECT version_num FROM alembic_version")).all()
    except DBAPIError:
        return None
    return str(found[0][0]) if len(found) == 1 else None


@cache
def head_from_files() -> str | None:
    """The revision no migration file names as its `down_revision`; None unless each file
    names both plainly and exactly one such revision exists."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in _VERSIONS.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        named = {m.group(1): m.group(2) for m in _NAMED.finditer(text)}
        if set(named) != {"revision", "down_revision"} or named["revision"] == "None":
            return None
        revisions.add(named["revision"][1:-1])
        if named["down_revision"] != "None":
            downs.add(named["down_revision"][1:-1])
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None
