"""One node per dataset whatever it is called: the groups `symlinks` facets make (design §3.3).

Every identity a symlinks facet names, and every identity that reported one, belongs to a
group (the union of all claims: a claim is symmetric and transitive). Each group has one
canonical identity: among the identities that reported a symlinks facet, the smallest by
(namespace, name). It depends only on the set of claims, so the order events arrive in never
changes it. `dataset_aliases` holds the groups; docs/concepts.md states the rule for users.

Writes canonicalise before anything is derived: every dataset a relation, an edge, a
version, an operation set or a dataset's declaration names is replaced by its canonical
identity, so the derived tables (and the walks over them) know one node. The dataset rows
themselves keep their own names, facets and schemas; lists and search hide the aliases.

A claim can make an identity that derived rows already name an alias (the Hive read stored
before the table's writer said it is the Hive table). `apply_facts` then reports those
identities as stale; `forget_stale` deletes what the runs and declarations that named them
derived and returns their events, which the caller replays (`upstream.ingest.recipe`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.facts import DatasetNode, EdgeFact, EventFacts, Node
from upstream.model.identity import DatasetRef, stable_id
from upstream.store import schema as t
from upstream.store.change_log import DECLARATIONS, ENTITIES, RUNS, record
from upstream.store.dialect import ByIds, advisory_xact_locks, id_filters
from upstream.store.edge_rows import EDGES
from upstream.store.lineage_writer import delete_links
from upstream.store.payloads import StoredEvent, stored_events

_LOCK = stable_id("lock", "dataset_aliases")
#: Names are locked by bucket, so a write of thousands of datasets takes at most this many
#: locks (PostgreSQL's lock table is small); a regrouping waits for more writes than needed.
LOCK_BUCKETS = 64
a = t.dataset_aliases.c


@dataclasses.dataclass(frozen=True)
class _Member:
    ref: DatasetRef
    reported: bool
    canonical: uuid.UUID


def canonical_batch(
    conn: Connection, batch: list[EventFacts]
) -> tuple[list[EventFacts], frozenset[uuid.UUID]]:
    """`batch` with every derived reference to a dataset made canonical, after recording its
    symlink claims; and the identities the claims turned from canonical into aliases."""
    stale = _record_claims(conn, batch)
    named: set[uuid.UUID] = set()
    for facts in batch:
        _referenced(facts, named)
    # Shared against a concurrent regrouping of these names (`_record_claims`): it waits
    # until this write commits, so its relink sees these rows; or this waits for it, and
    # reads its groups (PostgreSQL writes read committed rows statement by statement).
    advisory_xact_locks(conn, _buckets(named), shared=True)
    canonical = canonical_refs(conn, named)
    if not canonical:
        return batch, stale
    return [_canonical_facts(facts, canonical) for facts in batch], stale


def _buckets(ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    return {stable_id("dataset_aliases bucket", i.int % LOCK_BUCKETS) for i in ids}


def canonical_refs(conn: Connection, ids: Collection[uuid.UUID]) -> dict[uuid.UUID, DatasetRef]:
    """The canonical identity of each of `ids` that is an alias (canonical ones are left out)."""
    found: dict[uuid.UUID, DatasetRef] = {}
    for rows in _CANONICAL.run(conn, ids):
        found.update({row.id: DatasetRef(row.namespace, row.name) for row in rows})
    return found


def _canonical_of(ids: sa.ColumnElement[bool]) -> sa.Select[Any]:
    canon = t.dataset_aliases.alias("canon")
    return (
        sa.select(a.id, canon.c.namespace, canon.c.name)
        .join(canon, canon.c.id == a.canonical_id)
        .where(ids, a.canonical_id != a.id)
    )


_CANONICAL = ByIds(a.id, _canonical_of)


def canonical_ref(conn: Connection, ref: DatasetRef) -> DatasetRef:
    """The identity that stands for `ref` in every answer (itself unless it is an alias)."""
    return canonical_refs(conn, [ref.id]).get(ref.id, ref)


def not_alias(dataset_id: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """A condition true for a dataset id that is no alias of another: lists and search show
    a dataset once, under its canonical identity."""
    return ~sa.exists().where(a.id == dataset_id, a.canonical_id != a.id)


# -- recording claims -----------------------------------------------------------------------


def _record_claims(conn: Connection, batch: list[EventFacts]) -> frozenset[uuid.UUID]:
    """Merge the batch's claims into the stored groups; return the identities that were
    canonical (so stored rows may name them) and are aliases now."""
    claims = {
        (s.dataset, DatasetRef(s.namespace, s.name))
        for facts in batch
        for s in facts.symlinks
        if DatasetRef(s.namespace, s.name) != s.dataset
    }
    if not claims or _known(conn, claims):
        return frozenset()
    advisory_xact_locks(conn, [_LOCK])  # one writer regroups at a time (PostgreSQL)
    stored = _groups_of(conn, {ref.id for claim in claims for ref in claim})
    parent: dict[uuid.UUID, uuid.UUID] = {}

    def find(x: uuid.UUID) -> uuid.UUID:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    refs = {i: m.ref for i, m in stored.items()}
    reported = {i for i, m in stored.items() if m.reported}
    for i, member in stored.items():
        parent[find(i)] = find(member.canonical)
    for owner, alias in sorted(claims):
        refs[owner.id], refs[alias.id] = owner, alias
        reported.add(owner.id)
        parent[find(owner.id)] = find(alias.id)
    groups: dict[uuid.UUID, list[uuid.UUID]] = {}
    for i in refs:
        groups.setdefault(find(i), []).append(i)
    rows: list[dict[str, Any]] = []
    stale: set[uuid.UUID] = set()
    moved: set[uuid.UUID] = set()
    for members in groups.values():
        canonical = min((refs[i] for i in members if i in reported), default=None)
        assert canonical is not None  # every group holds the identity that claimed
        for i in members:
            before = stored.get(i)
            was_canonical = before is None or before.canonical == i
            if was_canonical and i != canonical.id:
                stale.add(i)
            if (before.canonical if before else i) != canonical.id:
                moved.add(i)
            if before != _Member(refs[i], i in reported, canonical.id):
                rows.append(
                    {
                        "id": i,
                        "canonical_id": canonical.id,
                        "namespace": refs[i].namespace,
                        "name": refs[i].name,
                        "reported": i in reported,
                    }
                )
    if not rows:
        return frozenset()  # a concurrent writer stored the same claims first
    # Writers naming a moved identity hold it shared (`canonical_batch`): wait for them.
    advisory_xact_locks(conn, _buckets(moved))
    for matches in id_filters(conn, a.id, [row["id"] for row in rows]):
        conn.execute(t.dataset_aliases.delete().where(matches))
    conn.execute(t.dataset_aliases.insert(), sorted(rows, key=lambda row: row["id"]))
    record(conn, ENTITIES, [row["id"] for row in rows])
    return frozenset(stale)


def _known(conn: Connection, claims: set[tuple[DatasetRef, DatasetRef]]) -> bool:
    """Every claim is already stored: its owner reported, in the same group as its alias."""
    stored = _members(conn, a.id, {ref.id for claim in claims for ref in claim})
    for owner, alias in claims:
        mine, theirs = stored.get(owner.id), stored.get(alias.id)
        if mine is None or theirs is None or not mine.reported:
            return False
        if mine.canonical != theirs.canonical:
            return False
    return True


def _groups_of(conn: Connection, ids: set[uuid.UUID]) -> dict[uuid.UUID, _Member]:
    """Every stored member of the groups `ids` belong to."""
    canonicals = {m.canonical for m in _members(conn, a.id, ids).values()}
    return _members(conn, a.canonical_id, canonicals)


def _members(
    conn: Connection, column: sa.ColumnElement[Any], ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, _Member]:
    found: dict[uuid.UUID, _Member] = {}
    for matches in id_filters(conn, column, ids):
        query = sa.select(a.id, a.namespace, a.name, a.reported, a.canonical_id).where(matches)
        for row in conn.execute(query):
            found[row.id] = _Member(
                DatasetRef(row.namespace, row.name), row.reported, row.canonical_id
            )
    return found


# -- rewriting a batch ----------------------------------------------------------------------


class _NamesADataset(Protocol):
    """A fact (or node) that names one dataset."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def dataset(self) -> DatasetRef: ...


_T = TypeVar("_T", bound=_NamesADataset)


def _referenced(facts: EventFacts, named: set[uuid.UUID]) -> None:
    """Add the id of every dataset `facts` derive rows from to `named`."""
    named.update(r.dataset.id for r in facts.relations)
    before = None
    for edge in facts.edges:
        if edge.part is not None:  # a part lists its datasets once
            if edge.part is not before:
                named |= edge.part.dataset_ids
                before = edge.part
            continue
        named.update(n.dataset.id for n in (edge.source, edge.target) if isinstance(n, DatasetNode))
    named.update(v.dataset.id for v in facts.versions)
    named.update(o.dataset.id for o in facts.operation_sets)
    if facts.declaration is not None and isinstance(facts.declaration.owner, DatasetRef):
        named.add(facts.declaration.owner.id)


def _canonical_facts(facts: EventFacts, canonical: Mapping[uuid.UUID, DatasetRef]) -> EventFacts:
    """`facts` with every dataset they derive from named canonically; what names no alias
    is kept as it is (an edge keeps its part, `upstream.model.lineage_sets.EdgePart`)."""

    def named(fact: _T) -> _T:
        found = canonical.get(fact.dataset.id)
        return fact if found is None else dataclasses.replace(fact, dataset=found)

    def node(value: Node) -> Node:
        return named(value) if isinstance(value, DatasetNode) else value

    def edge(value: EdgeFact) -> EdgeFact:
        source, target = node(value.source), node(value.target)
        if source is value.source and target is value.target:
            return value
        return dataclasses.replace(value, source=source, target=target, part=None)

    declaration = facts.declaration
    if declaration is not None and isinstance(declaration.owner, DatasetRef):
        owner = canonical.get(declaration.owner.id, declaration.owner)
        declaration = dataclasses.replace(declaration, owner=owner)
    return dataclasses.replace(
        facts,
        relations=[named(r) for r in facts.relations],
        edges=[edge(e) for e in facts.edges],
        versions=[named(v) for v in facts.versions],
        operation_sets=[named(o) for o in facts.operation_sets],
        declaration=declaration,
    )


# -- re-deriving what named a stale identity ------------------------------------------------


def forget_stale(
    conn: Connection, stale: Collection[uuid.UUID], batch_keys: Sequence[str]
) -> list[StoredEvent]:
    """Delete what the runs and declarations naming a `stale` identity derived, and return
    their events stored up to the batch of `batch_keys` (seq, payload, received_at, in
    order) to be replayed. The batch's own events of those owners are among them: what
    they derived was deleted with the rest (a run's COMPLETE that made its START's read an
    alias), though they were derived with the new groups already."""
    runs, jobs, datasets = _owners_naming(conn, stale)
    if not (runs or jobs or datasets):
        return []
    _forget_runs(conn, runs)
    _forget_declarations(conn, "job", jobs)
    _forget_declarations(conn, "dataset", datasets)
    e = t.events.c
    owned: list[sa.ColumnElement[bool]] = []
    for matches in id_filters(conn, e.run_id, runs):
        owned.append(matches)
    owned += [
        sa.and_(e.event_type == "JobEvent", e.job_namespace == ns, e.job_name == name)
        for ns, name in _names(conn, t.jobs, jobs)
    ]
    owned += [
        sa.and_(e.event_type == "DatasetEvent", e.dataset_namespace == ns, e.dataset_name == name)
        for ns, name in _names(conn, t.datasets, datasets)
    ]
    last = 0
    for chunk in range(0, len(batch_keys), 500):
        query = sa.select(sa.func.max(e.seq)).where(e.event_key.in_(batch_keys[chunk:][:500]))
        last = max(last, conn.execute(query).scalar() or 0)
    query = (
        sa.select(e.seq, e.payload_zstd, e.received_at)
        .where(sa.or_(*owned), e.seq <= last)
        .order_by(e.seq)
    )
    return stored_events(conn, conn.execute(query).all())


def forget_runs(
    conn: Connection, runs: Collection[uuid.UUID], through: int | None = None
) -> list[StoredEvent]:
    """Delete what `runs` derived and return all their stored events, up to seq `through`
    when given (seq, payload, received_at, in order), to be replayed: the runs derived
    again from every event they have (`upstream.ingest.recipe.rederive_runs`)."""
    _forget_runs(conn, set(runs))
    e = t.events.c
    events: list[Any] = []
    for matches in id_filters(conn, e.run_id, runs):
        query = sa.select(e.seq, e.payload_zstd, e.received_at).where(matches)
        if through is not None:
            query = query.where(e.seq <= through)
        events.extend(conn.execute(query))
    return stored_events(conn, sorted(events, key=lambda row: row.seq))


def _owners_naming(
    conn: Connection, stale: Collection[uuid.UUID]
) -> tuple[set[uuid.UUID], set[uuid.UUID], set[uuid.UUID]]:
    runs: set[uuid.UUID] = set()
    jobs: set[uuid.UUID] = set()
    datasets: set[uuid.UUID] = set()
    for relations in (t.relations, t.declared_relations):
        r = relations.c
        for matches in id_filters(conn, r.dataset_id, stale):
            for run_id, job_id in conn.execute(sa.select(r.run_id, r.job_id).where(matches)):
                if run_id is not None:
                    runs.add(run_id)
                else:
                    jobs.add(job_id)
    for edges in (EDGES, t.declared_edges):
        g = edges.c
        for column in (g.source_dataset_id, g.target_dataset_id):
            for matches in id_filters(conn, column, stale):
                query = sa.select(g.scope, g.run_id, g.job_id, g.target_dataset_id).where(matches)
                for scope, run_id, job_id, target in conn.execute(query):
                    if scope == "run":
                        runs.add(run_id)
                    elif scope == "job":
                        jobs.add(job_id)
                    else:
                        datasets.add(target)
    for matches in id_filters(conn, t.dataset_versions.c.dataset_id, stale):
        runs.update(conn.execute(sa.select(t.dataset_versions.c.run_id).where(matches)).scalars())
    ops = t.operation_sets.c
    for matches in id_filters(conn, ops.dataset_id, stale):
        query = (
            sa.select(t.run_operation_sets.c.run_id)
            .join(t.operation_sets, ops.id == t.run_operation_sets.c.operation_set_id)
            .where(matches)
        )
        runs.update(conn.execute(query).scalars())
    d = t.declarations.c
    for matches in id_filters(conn, d.owner_id, stale):
        query = sa.select(d.owner_id).where(matches, d.scope == "dataset")
        datasets.update(conn.execute(query).scalars())
    return runs, jobs, datasets


def _forget_runs(conn: Connection, runs: set[uuid.UUID]) -> None:
    """Delete the rows the runs' events derived; their flows are replaced when the events
    are replayed (`upstream.store.flow_writer.rederive_flows`)."""
    record(conn, RUNS, runs)
    for table in (t.relations, t.dataset_versions, t.run_operation_sets):
        for matches in id_filters(conn, table.c.run_id, runs):
            conn.execute(table.delete().where(matches))
    for run in runs:
        delete_links(conn, "run", run)


def _forget_declarations(conn: Connection, scope: str, owners: set[uuid.UUID]) -> None:
    """Forget the owners' declarations, current and past: replaying their events records
    each again, and the latest stands."""
    record(conn, DECLARATIONS, owners)
    d = t.declarations.c
    for matches in id_filters(conn, d.owner_id, owners):
        ids = list(conn.execute(sa.select(d.id).where(matches, d.scope == scope)).scalars())
        for table in (t.declared_flows, t.declared_edges, t.declared_relations):
            for declared in id_filters(conn, table.c.declaration_id, ids):
                conn.execute(table.delete().where(declared))
        for declared in id_filters(conn, d.id, ids):
            conn.execute(t.declarations.delete().where(declared))
    for owner in owners:
        delete_links(conn, scope, owner)
    if scope == "job":
        rel = t.relations.c
        for matches in id_filters(conn, rel.job_id, owners):
            conn.execute(t.relations.delete().where(matches, rel.run_id.is_(None)))
    entity = t.jobs if scope == "job" else t.datasets
    undeclared: dict[str, Any] = {"declared_at": None}
    if scope == "job":
        undeclared["declared_lineage_facet"] = False
    for matches in id_filters(conn, entity.c.id, owners):
        conn.execute(entity.update().where(matches).values(undeclared))
    for matches in id_filters(conn, t.flows.c.owner_id, owners):
        conn.execute(t.flows.delete().where(matches, t.flows.c.scope == scope))


def _names(conn: Connection, table: sa.Table, ids: set[uuid.UUID]) -> list[tuple[str, str]]:
    names: list[tuple[str, str]] = []
    for matches in id_filters(conn, table.c.id, ids):
        query = sa.select(table.c.namespace, table.c.name).where(matches)
        names.extend((row.namespace, row.name) for row in conn.execute(query))
    return names
