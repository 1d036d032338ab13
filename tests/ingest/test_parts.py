"""Parts seen before are not read again, nor their lineage sets made again; a part changed in
one byte is read and stored; a malformed part is refused with its own path every time
(`upstream.ingest.parts`, `upstream.model.lineage_sets.EdgePart`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import (
    column_lineage,
    dataset_entry,
    dataset_input,
    ds,
    job_entry,
    job_input,
    lineage_facet,
    run_event,
    schema_facet,
)
from tests.conftest import post
from tests.field_scenarios import seed_operations
from tests.ingest.test_sql_ingest import PG, load_event
from tests.readback import edges
from upstream.ingest import sql_lineage, translate
from upstream.ingest.documents import translate_document
from upstream.ingest.parts import (
    COLUMN_LINEAGE_PARTS,
    DATASET_PARTS,
    JOB_PARTS,
    LINEAGE_FACET_PARTS,
    SCHEMA_PARTS,
    PartCache,
)
from upstream.model import lineage_sets, merge_rules
from upstream.model.facets import FIELD_OPERATIONS_FACET
from upstream.model.facts import DatasetNode, JobNode
from upstream.model.field_operations import resolve
from upstream.model.identity import DatasetRef, JobRef
from upstream.model.lineage_sets import EdgePart, LineageSet
from upstream.model.merge_rules import DATASET_CONTENT, JOB_CONTENT
from upstream.store import schema as t
from upstream.store import writer
from upstream.store.engine import Store

NS = "parts"


@pytest.fixture(autouse=True)
def _empty_caches() -> Iterator[None]:
    caches = (DATASET_PARTS, JOB_PARTS, SCHEMA_PARTS, COLUMN_LINEAGE_PARTS, LINEAGE_FACET_PARTS)
    for cache in caches:
        cache.clear()
    sql_lineage.clear_cache()
    yield
    for cache in caches:
        cache.clear()
    sql_lineage.clear_cache()


@pytest.fixture
def sets_made(monkeypatch: pytest.MonkeyPatch) -> list[LineageSet]:
    """Every lineage set made (grouped and hashed) from here on, in order."""
    made: list[LineageSet] = []
    make = lineage_sets.lineage_set

    def counted(edges: Any, *, precedence: bool) -> LineageSet:
        made.append(make(edges, precedence=precedence))
        return made[-1]

    monkeypatch.setattr(lineage_sets, "lineage_set", counted)
    return made


def _event(
    run_id: str, *, event_type: str = "COMPLETE", amount_type: str = "DECIMAL", rows: int = 1
) -> dict[str, Any]:
    """job `load` reads `raw` and writes `sales` (id from id, amount from amount); the
    output's statistics change with every run."""
    schema = schema_facet(("id", "INT"), ("amount", amount_type))
    lineage = column_lineage({"id": [(NS, "raw", "id")], "amount": [(NS, "raw", "amount")]})
    statistics = {"_producer": "p", "_schemaURL": "s", "rowCount": rows}
    return run_event(
        (NS, "load"),
        run_id=run_id,
        event_type=event_type,
        inputs=[ds(NS, "raw", schema=schema)],
        outputs=[
            ds(NS, "sales", schema=schema, columnLineage=lineage, outputStatistics=statistics)
        ],
    )


def _counts() -> tuple[int, int]:
    return SCHEMA_PARTS.parts_read, COLUMN_LINEAGE_PARTS.parts_read


def test_a_part_seen_before_is_not_read_again() -> None:
    first = translate_document(_event(str(uuid.uuid4()), event_type="START"))
    # One schema (the input's and the output's are the same bytes), one column lineage.
    assert _counts() == (1, 1)
    again = translate_document(_event(str(uuid.uuid4()), rows=99))
    assert _counts() == (1, 1)
    for facts in (first, again):
        sales = next(d for d in facts.datasets if d.ref.name == "sales")
        assert sales.fields == [
            {"name": "id", "type": "INT"},
            {"name": "amount", "type": "DECIMAL"},
        ]
        field_edges = {
            (e.source.dataset.name, e.source.field, e.target.dataset.name, e.target.field)
            for e in facts.edges
            if not e.implied
        }
        assert field_edges == {("raw", "id", "sales", "id"), ("raw", "amount", "sales", "amount")}
    # Each event's edges are its own run's.
    assert {e.run_id for e in first.edges} == {first.record.run_id}
    assert {e.run_id for e in again.edges} == {again.record.run_id}


def test_a_part_changed_in_one_byte_is_read_and_stored(client: TestClient, store: Store) -> None:
    assert client.post("/api/v1/lineage", json=_event(str(uuid.uuid4()))).status_code == 201
    assert _counts() == (1, 1)
    changed = _event(str(uuid.uuid4()), amount_type="DECIMAM")  # one byte of the schema
    assert client.post("/api/v1/lineage", json=changed).status_code == 201
    # The new schema is read; the column lineage is the same part as before.
    assert _counts() == (2, 1)
    answer = client.get(f"/api/v1/namespaces/{NS}/datasets/sales").json()
    assert [(f["name"], f["type"]) for f in answer["fields"]] == [
        ("id", "INT"),
        ("amount", "DECIMAM"),
    ]
    assert ("parts/raw#amount", "parts/sales#amount") in edges(store)


def test_a_malformed_part_is_refused_with_its_own_path_every_time(
    client: TestClient, store: Store
) -> None:
    good = _event(str(uuid.uuid4()))
    assert client.post("/api/v1/lineage", json=good).status_code == 201
    bad = _event(str(uuid.uuid4()))  # the input's schema stays as it was
    bad["outputs"][0]["facets"]["schema"] = schema_facet(("id", "INT"), (" ", "DECIMAL"))
    unseen = _event(str(uuid.uuid4()))  # its parts are all in the cache
    answer = client.post("/api/v1/lineage", json=[unseen, bad])
    assert answer.status_code == 422
    assert "[1].outputs[0].facets.schema.fields[1].name" in answer.text
    alone = client.post("/api/v1/lineage", json=bad)
    assert alone.status_code == 422
    assert "outputs[0].facets.schema.fields[1].name" in alone.text
    assert SCHEMA_PARTS.parts_read == 1  # the malformed schema was never kept
    runs = client.get(f"/api/v1/namespaces/{NS}/jobs/load/runs").json()["runs"]
    assert [r["id"] for r in runs] == [good["run"]["runId"]]


def _described(
    run_id: str, *, job_text: str = "Loads sales.", dataset_text: str = "Sales.", rows: int = 1
) -> dict[str, Any]:
    """job `load` (typed, owned, documented) reads `raw` and writes `sales`, both typed, owned,
    documented and known by a symlink; the output's statistics change with every run."""

    def facet(**fields: Any) -> dict[str, Any]:
        return {"_producer": "p", "_schemaURL": "s", **fields}

    def dataset(name: str, **more: Any) -> dict[str, Any]:
        symlink = {"namespace": "hive", "name": f"db.{name}", "type": "TABLE"}
        return ds(
            NS,
            name,
            documentation=facet(description=f"{name}: {dataset_text}"),
            datasetType=facet(datasetType="TABLE"),
            ownership=facet(owners=[{"name": "team:data"}]),
            symlinks=facet(identifiers=[symlink]),
            dataSource=facet(name="warehouse", uri="pg://w"),
            schema=schema_facet(("id", "INT")),
            **more,
        )

    sales = dataset("sales")
    sales["outputFacets"] = {"outputStatistics": facet(rowCount=rows)}
    return run_event(
        (NS, "load"),
        run_id=run_id,
        inputs=[dataset("raw")],
        outputs=[sales],
        job_facets={
            "jobType": facet(jobType="TASK", integration="SPARK", processingType="BATCH"),
            "ownership": facet(owners=[{"name": "team:data"}]),
            "documentation": facet(description=job_text),
        },
    )


@pytest.fixture
def facets_parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every facet validated from here on, in order."""
    parsed: list[str] = []
    parse = translate.parse_facet

    def counted(model: Any, raw: Any, path: str) -> Any:
        parsed.append(path)
        return parse(model, raw, path)

    monkeypatch.setattr(translate, "parse_facet", counted)
    return parsed


def test_a_dataset_or_job_seen_before_is_not_read_again(facets_parsed: list[str]) -> None:
    first = translate_document(_described(str(uuid.uuid4())))
    assert (DATASET_PARTS.parts_read, JOB_PARTS.parts_read) == (2, 1)
    assert "job.facets.jobType" in facets_parsed
    assert "outputs[0].facets.symlinks" in facets_parsed
    facets_parsed.clear()
    again = translate_document(_described(str(uuid.uuid4()), rows=99))
    # Nothing of the job or of either dataset is validated again.
    assert (DATASET_PARTS.parts_read, JOB_PARTS.parts_read) == (2, 1)
    assert facets_parsed == []
    for facts in (first, again):
        (job,) = facts.jobs
        assert (job.job_type, job.integration, job.processing_type) == ("TASK", "SPARK", "BATCH")
        assert job.description == "Loads sales."
        sales = next(d for d in facts.datasets if d.ref.name == "sales")
        assert (sales.description, sales.source_name) == ("sales: Sales.", "warehouse")
        assert sales.fields == [{"name": "id", "type": "INT"}]
        assert sorted((s.dataset.name, s.name) for s in facts.symlinks) == [
            ("raw", "db.raw"),
            ("sales", "db.sales"),
        ]
        assert [r.temporary for r in facts.relations] == [False, False]
    # Each event keeps its own output statistics, outside the part.
    write = next(r for r in again.relations if r.access == "write")
    assert write.facets["outputStatistics"]["rowCount"] == 99


@pytest.fixture
def rows_hashed(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The content columns of every job or dataset row content hashed from here on, by the
    translation (once per part) or by the writer (per row)."""
    hashed: list[tuple[str, ...]] = []
    digest = merge_rules.content_digest

    def counted(row: Any, content: tuple[str, ...]) -> str:
        hashed.append(content)
        return digest(row, content)

    monkeypatch.setattr(translate, "content_digest", counted)
    monkeypatch.setattr(writer, "content_digest", counted)
    return hashed


def test_a_dataset_or_job_seen_before_is_not_hashed_again(
    client: TestClient, store: Store, rows_hashed: list[tuple[str, ...]]
) -> None:
    """The hash by which a stored job or dataset row is left alone is made once per part
    (one job, two datasets), not once per event that names it."""
    batch = [_described(str(uuid.uuid4()), rows=rows) for rows in (1, 2)]
    assert client.post("/api/v1/lineage", json=batch).status_code == 201
    post(client, _described(str(uuid.uuid4()), rows=3))
    assert sorted(rows_hashed) == sorted([JOB_CONTENT, DATASET_CONTENT, DATASET_CONTENT])
    _assert_rows_hold_their_hash(store)


def test_rows_hold_the_hash_of_their_content(
    client: TestClient, store: Store, rows_hashed: list[tuple[str, ...]]
) -> None:
    """An output whose fields its field operations state, and rows folded from different
    parts in one batch, are hashed by the writer: each row holds its content's hash, and
    content that differs from a part's is stored."""
    post(client, _described(str(uuid.uuid4())))
    operated = _described(str(uuid.uuid4()))
    operations = {"operations": resolve(seed_operations()).to_json(), "fields": ["uniqueId"]}
    operated["outputs"][0]["outputFacets"][FIELD_OPERATIONS_FACET] = operations
    post(client, operated)
    sales = client.get(f"/api/v1/namespaces/{NS}/datasets/sales").json()
    assert [f["name"] for f in sales["fields"]] == ["uniqueId"]
    batch = [_described(str(uuid.uuid4()), dataset_text=t) for t in ("A.", "B.", "A.")]
    assert client.post("/api/v1/lineage", json=batch).status_code == 201
    _assert_rows_hold_their_hash(store)
    assert DATASET_CONTENT in rows_hashed[3:]  # the writer's: no part gave these rows


def _assert_rows_hold_their_hash(store: Store) -> None:
    with store.engine.connect() as conn:
        for table, content in ((t.jobs, JOB_CONTENT), (t.datasets, DATASET_CONTENT)):
            for row in conn.execute(sa.select(table)).mappings():
                assert row["content_digest"] == merge_rules.content_digest(row, content)


def test_an_outputs_own_facets_are_read_with_each_event() -> None:
    """An output's `outputFacets` sit beside its part: one marking it temporary counts for
    its event, though the dataset's facets (a part seen before) say it is a table."""
    translate_document(_described(str(uuid.uuid4())))
    marked = _described(str(uuid.uuid4()))
    marked["outputs"][0]["outputFacets"]["upstream_temporary"] = {"temporary": True}
    facts = translate_document(marked)
    assert DATASET_PARTS.parts_read == 2
    assert {r.access: r.temporary for r in facts.relations} == {"read": False, "write": True}


def test_a_dataset_or_job_changed_in_one_byte_is_read_and_stored(
    client: TestClient, store: Store
) -> None:
    post(client, _described(str(uuid.uuid4())))
    assert (DATASET_PARTS.parts_read, JOB_PARTS.parts_read) == (2, 1)
    post(client, _described(str(uuid.uuid4()), dataset_text="Salet."))
    assert (DATASET_PARTS.parts_read, JOB_PARTS.parts_read) == (4, 1)
    post(client, _described(str(uuid.uuid4()), dataset_text="Salet.", job_text="Loads salet."))
    assert (DATASET_PARTS.parts_read, JOB_PARTS.parts_read) == (4, 2)
    sales = client.get(f"/api/v1/namespaces/{NS}/datasets/sales").json()
    assert sales["description"] == "sales: Salet."
    job = client.get(f"/api/v1/namespaces/{NS}/jobs/load").json()
    assert job["description"] == "Loads salet."


@pytest.mark.parametrize(
    ("where", "path"),
    [
        (("outputs", 0, "datasetType"), "[1].outputs[0].facets.datasetType.datasetType"),
        (("inputs", 0, "symlinks"), "[1].inputs[0].facets.symlinks.identifiers"),
        (("job", None, "jobType"), "[1].job.facets.jobType.jobType"),
    ],
)
def test_a_malformed_dataset_or_job_is_refused_with_its_own_path_every_time(
    client: TestClient, store: Store, where: tuple[str, int | None, str], path: str
) -> None:
    good = _described(str(uuid.uuid4()))
    post(client, good)
    bad = _described(str(uuid.uuid4()))
    kind, index, name = where
    holder = bad[kind] if index is None else bad[kind][index]
    facet = holder["facets"][name]
    facet[next(key for key in facet if not key.startswith("_"))] = 7  # the wrong type
    for body, located in (([_described(str(uuid.uuid4())), bad], path), (bad, path[4:])):
        answer = client.post("/api/v1/lineage", json=body)
        assert answer.status_code == 422
        assert located in answer.text
    assert (DATASET_PARTS.parts_read, JOB_PARTS.parts_read) == (2, 1)  # none of it was kept
    runs = client.get(f"/api/v1/namespaces/{NS}/jobs/load/runs").json()["runs"]
    assert [r["id"] for r in runs] == [good["run"]["runId"]]


def test_the_cache_keeps_the_most_recently_used_parts() -> None:
    cache: PartCache[str] = PartCache(capacity=2)
    for key in (b"a", b"b", b"a", b"c"):  # "b" is the least recently used when "c" comes
        cache.read(key, key.decode)
    assert cache.parts_read == 3
    cache.read(b"a", str)
    cache.read(b"c", str)
    assert cache.parts_read == 3
    assert cache.read(b"b", lambda: "read again") == "read again"
    assert cache.parts_read == 4


def _links(store: Store) -> dict[uuid.UUID, uuid.UUID]:
    """Each run's set (the runs here write one output each)."""
    link = t.lineage_links.c
    with store.read() as conn:
        return dict(conn.execute(sa.select(link.owner_id, link.set_id)).all())


def _stored_sets(store: Store) -> int:
    with store.read() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(t.lineage_sets)).scalar_one()


def test_a_repeated_part_makes_its_lineage_set_once(
    client: TestClient, store: Store, sets_made: list[LineageSet]
) -> None:
    first, second, third = (str(uuid.uuid4()) for _ in range(3))
    # A run's START and COMPLETE in one batch, then two more runs, each event alone.
    start = _event(first, event_type="START")
    assert client.post("/api/v1/lineage", json=[start, _event(first)]).status_code == 201
    post(client, _event(second, event_type="START"), _event(second), _event(third, rows=7))
    # The first statement of the part made its set; every other took it from the part.
    assert len(sets_made) == 1
    # In the canonical order: implied (true) after the field edges (false), fields by name.
    assert [(e.source_field, e.target_field, e.implied) for e in sets_made[0].edges] == [
        ("amount", "amount", False),
        ("id", "id", False),
        (None, None, True),
    ]
    links = _links(store)
    assert {str(run) for run in links} == {first, second, third}
    assert set(links.values()) == {sets_made[0].id}
    assert _stored_sets(store) == 1
    assert edges(store) == {
        ("parts/raw#id", "parts/sales#id"),
        ("parts/raw#amount", "parts/sales#amount"),
    }


def test_a_part_changed_in_one_byte_makes_and_stores_its_own_set(
    client: TestClient, store: Store, sets_made: list[LineageSet]
) -> None:
    first, second = str(uuid.uuid4()), str(uuid.uuid4())
    post(client, _event(first))
    changed = _event(second)
    lineage = changed["outputs"][0]["facets"]["columnLineage"]["fields"]
    lineage["amount"]["inputFields"][0]["field"] = "amounu"  # one byte
    post(client, changed)
    assert len(sets_made) == 2
    assert sets_made[0].id != sets_made[1].id
    links = _links(store)
    assert links[uuid.UUID(first)] == sets_made[0].id
    assert links[uuid.UUID(second)] == sets_made[1].id
    assert ("parts/raw#amounu", "parts/sales#amount") in edges(store)
    assert ("parts/raw#amount", "parts/sales#amount") in edges(store)


def test_a_repeated_sql_facet_makes_its_lineage_set_once(
    client: TestClient, store: Store, sets_made: list[LineageSet]
) -> None:
    runs = [str(uuid.uuid4()) for _ in range(3)]
    post(client, *(load_event(run_id=run) for run in runs))
    assert len(sets_made) == 1
    assert {e.origin for e in sets_made[0].edges} == {"sql"}
    assert set(_links(store).values()) == {sets_made[0].id}
    assert (f"{PG}/public.orders#amount", f"{PG}/public.daily#total") in edges(store)


def _facet_event(run_id: str, *entries: dict[str, Any]) -> dict[str, Any]:
    return run_event(
        (NS, "merge"),
        run_id=run_id,
        inputs=[ds(NS, "raw")],
        outputs=[ds(NS, "sales")],
        job_facets=lineage_facet(*entries),
    )


def test_a_repeated_lineage_facet_is_read_and_its_sets_made_once(
    client: TestClient, store: Store, sets_made: list[LineageSet]
) -> None:
    entry = dataset_entry(NS, "sales", fields={"total": [dataset_input(NS, "raw", "amount")]})
    runs = [str(uuid.uuid4()) for _ in range(3)]
    post(client, *(_facet_event(run, entry) for run in runs))
    assert LINEAGE_FACET_PARTS.parts_read == 1
    assert len(sets_made) == 1
    links = _links(store)
    assert {str(run) for run in links} == set(runs)
    assert set(links.values()) == {sets_made[0].id}
    assert edges(store) == {("parts/raw#amount", "parts/sales#total")}


def test_a_lineage_facet_naming_its_own_job_states_each_run(
    client: TestClient, store: Store, sets_made: list[LineageSet]
) -> None:
    """A `JOB` reference without a name is the event's own run: read once, stated per run."""
    entry = job_entry(inputs=[dataset_input(NS, "raw")])
    into_sales = dataset_entry(NS, "sales", inputs=[job_input()])
    runs = [str(uuid.uuid4()) for _ in range(2)]
    post(client, *(_facet_event(run, entry, into_sales) for run in runs))
    assert LINEAGE_FACET_PARTS.parts_read == 1
    # Two sets per run (into the job's run, into sales), each naming its own run: four.
    assert len(sets_made) == 4
    assert len({lset.id for lset in sets_made}) == 4
    assert {e.target_run_id or e.source_run_id for s in sets_made for e in s.edges} == {
        uuid.UUID(run) for run in runs
    }
    assert edges(store) == {("parts/raw", "job:parts/merge"), ("job:parts/merge", "parts/sales")}


def test_an_edge_renamed_to_its_canonical_dataset_leaves_its_part(
    client: TestClient, store: Store
) -> None:
    """A part read before a symlink made one of its datasets an alias names the alias; the
    edges of the same part sent after name the canonical dataset, and so does their set."""
    post(client, _event(str(uuid.uuid4())))
    symlinks = {
        "_producer": "p",
        "_schemaURL": "s",
        "identifiers": [{"namespace": NS, "name": "raw", "type": "TABLE"}],
    }
    claim = run_event(("hive", "copy"), outputs=[ds("hive", "raw_table", symlinks=symlinks)])
    post(client, claim, _event(str(uuid.uuid4())))
    assert edges(store) == {
        ("hive/raw_table#id", "parts/sales#id"),
        ("hive/raw_table#amount", "parts/sales#amount"),
    }
    # Both runs, the one replayed after the claim too, link to the set naming the canonical.
    assert len(set(_links(store).values())) == 1


def test_a_part_holds_the_set_and_the_datasets_of_its_edges() -> None:
    raw, sales = DatasetRef(NS, "raw"), DatasetRef(NS, "sales")
    edge = (DatasetNode(raw, "a"), DatasetNode(sales, "x"), [], False)
    part = EdgePart("column_lineage", [edge, edge])
    assert part.lineage_set(precedence=True) is part.lineage_set(precedence=True)
    alone = lineage_sets.lineage_set([part.edges[0]], precedence=True)
    assert part.lineage_set(precedence=True) == alone
    assert part.datasets == {raw, sales}
    assert part.dataset_ids == {raw.id, sales.id}
    with pytest.raises(ValueError, match="join datasets"):
        EdgePart("column_lineage", [(DatasetNode(raw), JobNode(JobRef(NS, "load")), [], False)])
