"""The documents of the Marquez lineage graph's nodes, kept by the process between reads
(design §6), so that a graph asked again reads and builds only the nodes that changed.

A node's document (a dataset or a job with its latest run, without facets) is most of the
graph's cost: a job's latest run carries its facets and those of every dataset it read and
wrote, parsed from JSON and rendered for every node on every read. Documents are kept by
entity id, for the position of the change log (`upstream.store.change_log`) they are exact
at, and follow it as the graph index does: a read at a newer position first drops the
documents the changes since touched, then keeps what it builds. A document is dropped when

- its entity is named by a change (its row, deletion, alias group or tags), or is the job,
  or one of the datasets, of a changed run (a run of the job; a run that read or wrote the
  dataset, or wrote a version of it: its newest version and last modification);
- for a job, one its latest run depends on changed: that run, its parent run or job, or a
  dataset it read or wrote (the version it read is the newest written before it read);
- and all of them on a reload, a gap in the log, or a changed declaration (a declaration's
  relations belong to jobs the change does not name).

A read whose snapshot is older than the documents' position builds its own and keeps none;
so does a read with a token that does not see every namespace (its documents leave out
what it may not see). Documents are shared between reads and must not be modified. At most
`KEPT` are kept, the least recently used dropped first.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Collection
from typing import Literal

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.query.marquez.common import Json
from upstream.store import change_log
from upstream.store import schema as t
from upstream.store.dialect import id_filters
from upstream.store.per_engine import PerEngine

Kind = Literal["dataset", "job"]
Build = Callable[[Connection, Collection[uuid.UUID]], dict[uuid.UUID, Json]]

#: Documents kept per database: a depth-10 graph on the medium workload has ~330 nodes,
#: ~14 KB of Python objects each.
KEPT = 2000

#: Changes after which no kept document is trusted.
_DROP_ALL = frozenset({change_log.RELOAD, change_log.DECLARATIONS})


class NodeDocuments:
    """The kept node documents of one database, shared by the threads of one process."""

    def __init__(self, kept: int = KEPT) -> None:
        self._lock = threading.Lock()
        self._kept = kept
        self._position: int | None = None
        self._documents: OrderedDict[tuple[Kind, uuid.UUID], Json] = OrderedDict()
        #: For each id a document depends on, the documents that do.
        self._dependents: defaultdict[uuid.UUID, set[tuple[Kind, uuid.UUID]]] = defaultdict(set)
        self._depends: dict[tuple[Kind, uuid.UUID], frozenset[uuid.UUID]] = {}

    def documents(
        self,
        conn: Connection,
        position: int,
        kind: Kind,
        ids: Collection[uuid.UUID],
        build: Build,
    ) -> dict[uuid.UUID, Json]:
        """The documents of `ids` (those with a row) as `conn`'s snapshot, at change-log
        `position`, holds them: kept ones, and the others built by `build` and kept."""
        if not self._follow(conn, position):
            return build(conn, ids)
        with self._lock:
            found = {}
            for i in ids:
                doc = self._documents.get((kind, i))
                if doc is not None:
                    self._documents.move_to_end((kind, i))
                    found[i] = doc
        missing = [i for i in ids if i not in found]
        if missing:
            built = build(conn, missing)
            with self._lock:
                if self._position == position:
                    for i, doc in built.items():
                        self._keep((kind, i), doc)
            found.update(built)
        return found

    def _follow(self, conn: Connection, position: int) -> bool:
        """Bring the documents to `position` (dropping those changed since); False when they
        are newer than it, and the read must build its own."""
        with self._lock:
            held = self._position
            if held is not None and held > position:
                return False
            if held is not None and held < position:
                self._apply(conn, held)
            self._position = position
            return True

    def _apply(self, conn: Connection, since: int) -> None:
        try:
            changes = change_log.changes_since(conn, since)
        except change_log.ChangeLogGap:
            self._drop_all()
            return
        if any(change.kind in _DROP_ALL for change in changes):
            self._drop_all()
            return
        changed = {i for change in changes for i in change.ids}
        runs = {i for change in changes if change.kind == change_log.RUNS for i in change.ids}
        changed |= _touched_by(conn, runs)
        for i in changed:
            for key in self._dependents.pop(i, set()):
                self._drop(key)

    def _keep(self, key: tuple[Kind, uuid.UUID], doc: Json) -> None:
        self._drop(key)
        self._documents[key] = doc
        depends = _dependencies(key, doc)
        self._depends[key] = depends
        for i in depends:
            self._dependents[i].add(key)
        while len(self._documents) > self._kept:
            self._drop(next(iter(self._documents)))

    def _drop(self, key: tuple[Kind, uuid.UUID]) -> None:
        self._documents.pop(key, None)
        for i in self._depends.pop(key, frozenset()):
            dependents = self._dependents.get(i)
            if dependents is not None:
                dependents.discard(key)
                if not dependents:
                    del self._dependents[i]

    def _drop_all(self) -> None:
        self._documents.clear()
        self._dependents.clear()
        self._depends.clear()


def _dependencies(key: tuple[Kind, uuid.UUID], doc: Json) -> frozenset[uuid.UUID]:
    """The ids whose change makes the document `key` stale (the module docstring says which):
    its entity's and, for a job, its latest run's, parent run's and parent job's, and those
    of the datasets that run read and wrote."""
    depends = {key[1]}
    run = doc.get("latestRun") if key[0] == "job" else None
    if run is not None:
        depends.add(uuid.UUID(run["id"]))
        if run["parentRunId"] is not None:
            depends.add(uuid.UUID(run["parentRunId"]))
        for side in ("inputDatasetVersions", "outputDatasetVersions"):
            for version in run[side]:
                named = version["datasetVersionId"]
                depends.add(DatasetRef(named["namespace"], named["name"]).id)
    if key[0] == "job" and doc["parentJobUuid"] is not None:
        depends.add(uuid.UUID(doc["parentJobUuid"]))
    return frozenset(depends)


def _touched_by(conn: Connection, runs: Collection[uuid.UUID]) -> set[uuid.UUID]:
    """The jobs of `runs` and the datasets they read, wrote or wrote a version of."""
    touched: set[uuid.UUID] = set()
    r, v = t.relations.c, t.dataset_versions.c
    for matches in id_filters(conn, t.runs.c.id, runs):
        touched.update(conn.execute(sa.select(t.runs.c.job_id).where(matches)).scalars())
    for matches in id_filters(conn, r.run_id, runs):
        for job, dataset in conn.execute(sa.select(r.job_id, r.dataset_id).where(matches)):
            touched.update((job, dataset))
    for matches in id_filters(conn, v.run_id, runs):
        touched.update(conn.execute(sa.select(v.dataset_id).where(matches)).scalars())
    return touched


#: The node documents this process keeps for the database an engine reads.
node_documents: PerEngine[NodeDocuments] = PerEngine(lambda _engine: NodeDocuments())
