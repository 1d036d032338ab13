"""The store's facts about itself (`store_state`), and clearing what is derived from events.

`derived_version` names the derivation rules that built the derived tables; while a rebuild
runs, `rebuild_version` and `rebuild_seq` say which rules it applies and how far through the
events it got, so an interrupted rebuild continues where it stopped.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.store import schema as t
from upstream.store.flow_writer import DERIVED_VERSION

DERIVED_VERSION_KEY = "derived_version"
REBUILD_VERSION_KEY = "rebuild_version"
REBUILD_SEQ_KEY = "rebuild_seq"

#: Every table derived from the raw events, children before the tables they refer to.
DERIVED_TABLES = (
    t.declared_flows,
    t.declared_edges,
    t.declared_relations,
    t.declarations,
    t.flows,
    t.job_dependencies,
    t.run_operation_sets,
    t.operation_sets,
    t.dataset_versions,
    t.dataset_symlinks,
    t.dataset_aliases,
    t.lineage_links,
    t.lineage_set_edges,
    t.lineage_sets,
    t.relations,
    t.runs,
    t.datasets,
    t.jobs,
    t.namespaces,
)


def read_state(conn: Connection) -> dict[str, str]:
    return {row.key: row.value for row in conn.execute(sa.select(t.store_state))}


def write_state(conn: Connection, **values: str | None) -> None:
    """Set each key to its value (None removes the key)."""
    for key, value in values.items():
        conn.execute(t.store_state.delete().where(t.store_state.c.key == key))
        if value is not None:
            conn.execute(t.store_state.insert().values(key=key, value=value))


def clear_derived(conn: Connection) -> None:
    """Empty every table derived from the events; the events themselves stay."""
    for table in DERIVED_TABLES:
        conn.execute(table.delete())


def stamp_if_empty(conn: Connection) -> None:
    """A store that holds no events has nothing to derive: its (empty) derived tables are
    what the running rules build, so say so. Otherwise a database created by `upstream db
    upgrade` (or a command's `--db`) and then filled by `upstream ingest --db` would be
    derived again from every event when a server first starts on it."""
    if conn.execute(sa.select(t.events.c.seq).limit(1)).first() is not None:
        return
    if read_state(conn).get(DERIVED_VERSION_KEY) != DERIVED_VERSION:
        write_state(
            conn,
            **{
                DERIVED_VERSION_KEY: DERIVED_VERSION,
                REBUILD_VERSION_KEY: None,
                REBUILD_SEQ_KEY: None,
            },
        )
