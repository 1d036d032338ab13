"""What `--db` and `UPSTREAM_DB_URL` accept, read in one place: a database URL, or a plain file
path that names an SQLite database (what `./upstream.db`, the default, invites one to write).

A value that starts like a URL (`scheme:`) is read as one and must name a database Upstream
runs on; anything else is a file path. A Windows drive (`C:\\lineage.db`) is a path, not a
scheme. `postgresql://` and `postgres://`, as libpq and most tools write them, mean the psycopg
driver Upstream installs.
"""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import ArgumentError

#: The forms a database may be given in, as every error about one says.
ACCEPTED_FORMS = (
    "a file path (an SQLite database, e.g. ./upstream.db), sqlite:///path, "
    "or postgresql+psycopg://user@host:5432/database"
)
#: A URL's scheme: two or more characters before the colon, so a drive letter is not one.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+:")
#: The scheme each accepted one is run with.
_DRIVERS = {
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


def database_url(text: str) -> str:
    """The SQLAlchemy URL of the database `text` names; ValueError, saying which forms are
    accepted, for a value that is neither a path nor a URL of SQLite or PostgreSQL."""
    value = text.strip()
    if not value:
        raise ValueError(f"no database given; give {ACCEPTED_FORMS}")
    if not _SCHEME.match(value):
        return f"sqlite:///{Path(value).expanduser()}"
    try:
        url = sa.make_url(value)
    except ArgumentError:
        raise ValueError(f"cannot read {value!r} as a database; give {ACCEPTED_FORMS}") from None
    driver = _DRIVERS.get(url.drivername)
    if driver is None:
        raise ValueError(
            f"{url.drivername!r} is not a database Upstream runs on; give {ACCEPTED_FORMS}"
        )
    if driver == url.drivername:
        return value
    return url.set(drivername=driver).render_as_string(hide_password=False)
