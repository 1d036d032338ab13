"""The graph index of one process (design §6): loaded once, brought to each read's snapshot by
the change log before the read walks it.

One `GraphIndex` per database engine (`index_of`), so the server's workers, the CLI with
`--db` and every test store each have their own. A read asks `graph(conn)` in its own
transaction: the change log's position in that snapshot says which version answers it. The
current version is brought forward under a lock by the changes the log lists (the rows the
changed runs and owners own, read again in that same snapshot), so a reader never sees a
half-applied change; versions are never modified, so readers walk them without a lock. A
reader whose snapshot is older than the current version answers from the newest version its
snapshot includes, of the few kept, brought to its position by the changes between (and kept
too: readers of one snapshot are many), or — none kept being that old — from a private
load: never from a newer state than its own.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from functools import partial

from sqlalchemy.engine import Connection, Engine

from upstream.model.errors import IndexLoading
from upstream.query.graph_index.graph import Graph, applied, load
from upstream.query.graph_index.names import EntityNames, Name
from upstream.store import change_log
from upstream.store import schema as t
from upstream.store.engine import Store, is_snapshot
from upstream.store.outage import is_database_outage
from upstream.store.per_engine import PerEngine

log = logging.getLogger("upstream.query")

#: Versions kept for readers whose snapshot began before the newest change.
_KEPT_VERSIONS = 8


class GraphIndex:
    """The index of one database, shared by the threads of one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._versions: dict[int, Graph] = {}
        self._current: Graph | None = None
        self._loading = threading.Event()
        self._loaded = threading.Event()
        #: Set when an announced load ends, loaded or failed: its waiting readers go on.
        self._load_ended = threading.Event()
        #: Whether versions hold the field graph. A process that asks only dataset walks
        #: (the command line's `lineage --db`) turns it off before its first read, and
        #: loads a third less; a version without it is loaded again when it is wanted.
        self.fields_wanted = True
        #: The names answers show, read once per id (`names`).
        self.dataset_names = EntityNames(t.datasets)
        self.job_names = EntityNames(t.jobs)
        #: The version each open read answers from, found at its first `graph`: a read
        #: asks several times (a notification's render, each dispatcher round's radii),
        #: and its snapshot does not move.
        self._reads: weakref.WeakKeyDictionary[Connection, Graph] = weakref.WeakKeyDictionary()

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    @property
    def position(self) -> int | None:
        """The change-log position of the newest version; None before the first load."""
        current = self._current
        return None if current is None else current.position

    @property
    def loading(self) -> bool:
        """A load `begin_loading` announced is under way: reads wait for it."""
        return self._loading.is_set() and not self._loaded.is_set()

    def begin_loading(self) -> None:
        """Say that a load is under way (`load_now`, on a thread of its own): reads wait for
        it rather than load the index themselves."""
        self._load_ended.clear()
        self._loading.set()

    def load_now(self, read: Callable[[], AbstractContextManager[Connection]]) -> None:
        """Load the index in a read transaction `read` opens. Should it fail — opening the
        read included, as when the database refuses a connection at start — the load ends all
        the same and reads load the index themselves; a load that never ended would hold
        every read to its bound and answer 503 until the process restarts."""
        try:
            with read() as conn:
                self._at_snapshot(conn)
        finally:
            if not self._loaded.is_set():
                self._loading.clear()
            self._load_ended.set()

    def graph(self, conn: Connection, wait: float | None = None) -> Graph:
        """The index exactly as `conn`'s snapshot holds the graph. While a load started
        elsewhere (`load_now`) runs, waits for it at most `wait` seconds (None: as long as
        it takes), then raises IndexLoading; should that load fail, loads it itself."""
        if self._loading.is_set() and not self._load_ended.wait(wait):
            raise IndexLoading("the lineage index is still loading; retry shortly")
        if not is_snapshot(conn):
            return self._at_snapshot(conn)
        with self._lock:
            found = self._reads.get(conn)
        if found is None or not self._complete(found):
            found = self._at_snapshot(conn)
            with self._lock:
                self._reads[conn] = found
        return found

    def _at_snapshot(self, conn: Connection) -> Graph:
        at = change_log.position(conn)
        with self._lock:
            current = self._current
            if current is not None and current.position <= at and not self._complete(current):
                current = None  # loaded again whole, with the numberings it had
            if current is None or current.position <= at:
                graph = self._brought_to(conn, current, at)
                self._keep(graph)
                return graph
            # A snapshot older than the newest version (readers on a replica behind the
            # primary, or whose snapshot began before another's read moved the index on):
            # the newest kept version it includes, brought to it by the changes between.
            older = self._newest_kept(at)
            if older is not None:
                graph = self._brought_to(conn, older, at)
                self._remember(graph)
                return graph
        return load(conn, at, current.ids, fields=self.fields_wanted)

    def _newest_kept(self, at: int) -> Graph | None:
        """The newest complete version kept at or before position `at`."""
        kept = [p for p, graph in self._versions.items() if p <= at and self._complete(graph)]
        return self._versions[max(kept)] if kept else None

    def _complete(self, graph: Graph) -> bool:
        """`graph` holds every part this index wants."""
        return graph.field_part is not None or not self.fields_wanted

    def _brought_to(self, conn: Connection, current: Graph | None, at: int) -> Graph:
        if current is not None and current.position == at:
            return current
        if current is None:
            ids = None if self._current is None else self._current.ids
            return load(conn, at, ids, fields=self.fields_wanted)
        try:
            changes = change_log.changes_since(conn, current.position)
        except change_log.ChangeLogGap:
            return load(conn, at, current.ids, fields=self.fields_wanted)
        if any(change.kind == change_log.RELOAD for change in changes):
            return load(conn, at, current.ids, fields=self.fields_wanted)
        runs = _ids(changes, change_log.RUNS)
        owners = _ids(changes, change_log.DECLARATIONS)
        entities = _ids(changes, change_log.ENTITIES)
        return applied(conn, current, at, runs, owners, entities)

    def _keep(self, graph: Graph) -> None:
        self._current = graph
        self._remember(graph)
        self._loaded.set()

    def _remember(self, graph: Graph) -> None:
        """Keep `graph` for readers at its position; the oldest positions go first."""
        self._versions[graph.position] = graph
        while len(self._versions) > _KEPT_VERSIONS:
            del self._versions[min(self._versions)]


def _ids(changes: Iterable[change_log.Change], kind: str) -> set[uuid.UUID]:
    return {i for change in changes if change.kind == kind for i in change.ids}


#: The index of the database an engine reads, made on first use.
index_of: PerEngine[GraphIndex] = PerEngine(lambda _engine: GraphIndex())


def share_index(replica: Engine, primary: Engine) -> None:
    """Reads through `replica`, an engine on a physical replica of `primary`'s database, use
    `primary`'s index: positions are the same on both, so one index answers either's
    snapshots, and a read sent to the primary finds it loaded."""
    index_of.share(replica, index_of(primary))


def load_in_background(store: Store) -> threading.Thread:
    """Load the index of `store` on a thread of its own (a server's start): reads wait for
    it, up to `LOAD_WAIT_SECONDS`. The load is a long read, bounded by no deadline: a
    large store's index takes longer than a request may, and a load cut short would leave
    every read to load it within a request's bound, which it could never do."""
    index = index_of(store.engine)
    index.begin_loading()

    def run() -> None:
        try:
            index.load_now(partial(store.read, long=True))
        except Exception as exc:  # reads load it themselves then; the cause goes to the log
            if is_database_outage(exc):
                log.warning("loading the lineage index: the database is unavailable (%s)", exc)
            else:
                log.exception("loading the lineage index failed")

    thread = threading.Thread(target=run, name="upstream-graph-index", daemon=True)
    thread.start()
    return thread


def position_view(store: Store) -> Callable[[int], int]:
    """This process's index as a view of the store (`query.positions.Views.plug`): a read
    that names a position waits until the index has applied it, not only the database. A
    look at an index that holds the wanted position already gives its position and reads
    nothing; otherwise it brings the index to the newest position the store has committed
    and gives the position it then holds. While a load started elsewhere runs, it waits for
    nothing and gives the position held before (0 for none), so the read waits within its
    own bound."""
    index = index_of(store.engine)

    def applied(wanted: int) -> int:
        held = index.position
        if index.loading or (held is not None and held >= wanted):
            return held or 0
        with store.read() as conn:
            return index.graph(conn).position

    return applied


def graph_of(conn: Connection) -> Graph:
    """The index at `conn`'s snapshot (waiting for a load in progress, within its bound)."""
    return index_of(conn.engine).graph(conn, wait=LOAD_WAIT_SECONDS)


def names_of(conn: Connection) -> tuple[EntityNames, EntityNames]:
    """The dataset and job names this process keeps for the database `conn` reads."""
    index = index_of(conn.engine)
    return index.dataset_names, index.job_names


def dataset_names_by_id(conn: Connection, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, Name]:
    """The (namespace, name) of each dataset of `ids` that has a row, as this process keeps
    them: a statement only for ids it has not named yet, never a join per read."""
    texts = {str(i): i for i in ids}
    return {
        texts[text]: name
        for text, name in index_of(conn.engine).dataset_names.of(conn, texts).items()
    }


#: Seconds a read waits for the index a server is loading before it answers 503.
LOAD_WAIT_SECONDS = 20.0
