"""Seeded OpenLineage workloads with their ground truth.

A layered warehouse (source tables -> landing -> staging -> intermediate levels -> marts),
run once a day by Airflow-like workflows: every task run carries a `parent` facet naming its
workflow (DAG) run, some tasks hand data to a later task through a dataset temporary to the
workflow run (marked by a facet, or named after the workflow run id as CDAP does). Jobs come in
three styles, fixed per job, so every precedence rule of design §3.2 is exercised:

- `column`: outputs carry `columnLineage` from a subset of the inputs; inputs it does not name
  do not flow into that output.
- `facet`: `job.facets.lineage` entries per output, with field entries and dataset-wide field
  inputs; one input is only a lookup no entry names, so it flows nowhere.
- `plain`: inputs and outputs only, so every input flows into every output (inferred).

The events weigh what real producers send (`producer_facets`): twelve typed fields in the
`schema` facet of every dataset, the `airflow`, `processing_engine`, `nominalTime` and `parent`
run facets, `jobType`, `ownership` and a `sql` facet whose statement is written from the same
plan as the lineage (`sql_text`), statistics on COMPLETE. A run sends START and COMPLETE with
its facets on both; two jobs in five report inputs on START and outputs on COMPLETE (a run
accumulates across events), the others report everything on both.

The ground truth is computed from the plan, independently of the server's code, and written
beside the events: dataset edges, field edges and accesses per run, and, for later, the field
edges a correct SQL parser derives from the plain jobs' statements (`sql_field_edges`).
Events are written one by one as they are made, so the large size never sits in memory.
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from benchmarks import producer_facets as pf
from benchmarks.sql_text import Namer, job_statement

RUN_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
TEMPORARY_SCHEMA = "https://github.com/upstream-lineage/upstream/facets/TemporaryFacet.json"

SOURCE_NS = "postgres://app-db:5432"
LAKE_NS = "s3://bucket"
WAREHOUSE_NS = "postgres://db:5432"
JOB_NS = "airflow://host:8080"

#: Bumped whenever the events a seed gives change, so that an older workload is made again.
GENERATOR_VERSION = 2
#: The first day of every workload: fixed, so a seed always gives byte-identical events.
BASE_TIME = datetime(2026, 10, 1, tzinfo=UTC)
#: Job layers: landing, staging, intermediate levels, marts. Lineage is up to 12 hops deep.
INTERMEDIATE_LEVELS = 9
LAYERS = ["landing", "staging", *[f"int{i:02d}" for i in range(INTERMEDIATE_LEVELS)], "marts"]
TOPICS = [
    "orders", "customers", "payments", "sessions", "products", "invoices", "shipments",
    "clicks", "accounts", "refunds", "stores", "suppliers", "returns", "carts", "reviews",
]  # fmt: skip
#: The warehouse's columns: name -> (type, description). Every dataset has `id` and eleven more.
COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("BIGINT", "Surrogate key of the row, unique within the table"),
    "customer_id": ("BIGINT", "Customer the row belongs to (app-db customers.id)"),
    "order_id": ("BIGINT", "Order the row belongs to (app-db orders.id)"),
    "amount": ("NUMERIC(18,2)", "Gross amount in the row's currency, taxes included"),
    "currency": ("CHAR(3)", "ISO 4217 code of the amount's currency"),
    "created_at": ("TIMESTAMP WITH TIME ZONE", "When the source row was created"),
    "updated_at": ("TIMESTAMP WITH TIME ZONE", "When the source row last changed"),
    "status": ("VARCHAR(32)", "Lifecycle status as the application reports it"),
    "country": ("CHAR(2)", "ISO 3166-1 country of the customer's billing address"),
    "sku": ("VARCHAR(64)", "Stock keeping unit of the product"),
    "quantity": ("INTEGER", "Number of units"),
    "price": ("NUMERIC(18,4)", "Unit price before discounts"),
    "email": ("VARCHAR(320)", "Contact e-mail address (personal data)"),
    "region": ("VARCHAR(64)", "Sales region, from the country mapping"),
    "channel": ("VARCHAR(32)", "Acquisition channel: web, app, store or partner"),
    "score": ("DOUBLE PRECISION", "Model score between 0 and 1"),
    "discount": ("NUMERIC(18,2)", "Discount granted on the row, in its currency"),
    "store_id": ("BIGINT", "Store that served the order, if any"),
    "supplier_id": ("BIGINT", "Supplier of the product"),
    "session_id": ("VARCHAR(64)", "Web or app session identifier"),
    "device": ("VARCHAR(32)", "Device family of the session"),
    "tax": ("NUMERIC(18,2)", "Tax amount included in the gross amount"),
    "net_amount": ("NUMERIC(18,2)", "Amount net of taxes and discounts"),
    "shipped_at": ("TIMESTAMP WITH TIME ZONE", "When the parcel left the warehouse"),
    "delivered_at": ("TIMESTAMP WITH TIME ZONE", "When the carrier reported delivery"),
    "carrier": ("VARCHAR(64)", "Carrier that shipped the parcel"),
    "rating": ("SMALLINT", "Review rating from 1 to 5"),
    "segment": ("VARCHAR(32)", "Customer segment from the latest scoring"),
    "loaded_at": ("TIMESTAMP WITH TIME ZONE", "When this row was loaded by the pipeline"),
    "is_deleted": ("BOOLEAN", "Whether the source row was deleted (soft delete)"),
}
FIELDS = [name for name in COLUMNS if name != "id"]
DATASET_FIELDS = 12
WORKFLOW_TASKS = 10

Style = Literal["column", "facet", "plain"]
STYLES: list[Style] = ["column", "facet", "plain"]
Temporary = Literal["", "facet", "suffix"]


@dataclass(frozen=True)
class Size:
    """How big a workload is: jobs, and days of daily runs."""

    name: str
    jobs: int
    days: int


SIZES = {
    "tiny": Size("tiny", 40, 2),
    "small": Size("small", 200, 5),
    "medium": Size("medium", 2000, 10),
    "large": Size("large", 20000, 23),
}


@dataclass(frozen=True)
class Dataset:
    namespace: str
    name: str
    fields: tuple[str, ...]
    #: "facet": marked by the upstream_temporary facet; "suffix": named after the workflow run.
    temporary: Temporary = ""

    def named(self, workflow_run: str) -> str:
        return f"{self.name}_{workflow_run}" if self.temporary == "suffix" else self.name


@dataclass
class OutputPlan:
    """How one output is made, as its lineage and its SQL statement both say."""

    #: The inputs read row by row, in join order: the first is the FROM, the others are
    #: joined on `id`.
    joined: list[Dataset] = field(default_factory=list)
    #: Output field -> its source fields.
    fields: dict[str, list[tuple[Dataset, str]]] = field(default_factory=dict)
    #: Dataset-wide field inputs: (dataset, field, "JOIN" | "FILTER").
    wide: list[tuple[Dataset, str, str]] = field(default_factory=list)
    #: Inputs read as a whole, without a field (an EXISTS gate).
    whole: list[Dataset] = field(default_factory=list)

    def sources(self) -> set[Dataset]:
        return set(self.joined) | set(self.whole)


@dataclass
class Job:
    name: str
    layer: int
    style: Style
    inputs: list[Dataset]
    outputs: list[Dataset]
    #: START reports the inputs, COMPLETE the outputs (otherwise COMPLETE reports both).
    split: bool
    workflow: str | None = None
    plans: dict[Dataset, OutputPlan] = field(default_factory=dict)


@dataclass
class Truth:
    """What the events mean, as tuples of names (run ids as strings)."""

    #: (source ns, source name, target ns, target name, job name, run id)
    dataset_edges: set[tuple[str, ...]] = field(default_factory=set)
    #: (source ns, source name, source field, target ns, target name, target field|"", run id)
    field_edges: set[tuple[str, ...]] = field(default_factory=set)
    #: (dataset ns, dataset name, job name, run id, "read"|"write")
    accesses: set[tuple[str, ...]] = field(default_factory=set)
    #: As field_edges: what a correct SQL parser derives from the plain jobs' statements.
    sql_field_edges: set[tuple[str, ...]] = field(default_factory=set)


@dataclass
class Workload:
    size: Size
    seed: int
    jobs: list[Job]
    workflows: dict[str, list[Job]]
    events: int = 0
    truth: Truth = field(default_factory=Truth)
    #: The size in bytes of every event, as written (one NDJSON line without its newline).
    event_bytes: list[int] = field(default_factory=list)
    targets: dict[str, Any] = field(default_factory=dict)

    @property
    def window(self) -> tuple[datetime, datetime]:
        """A time window holding every run of the workload."""
        return BASE_TIME, BASE_TIME + timedelta(days=self.size.days + 1)


# -- the static warehouse -------------------------------------------------------------------


class _Planner:
    def __init__(self, size: Size, seed: int) -> None:
        self.rng = random.Random(seed)
        self.size = size
        self.names: dict[str, int] = {}

    def _name(self, stem: str) -> str:
        self.names[stem] = self.names.get(stem, 0) + 1
        return f"{stem}_{self.names[stem]}"

    def _fields(self) -> tuple[str, ...]:
        return ("id", *self.rng.sample(FIELDS, DATASET_FIELDS - 1))

    def dataset(self, layer: str, temporary: Temporary = "") -> Dataset:
        topic = self.rng.choice(TOPICS)
        if layer == "source":
            return Dataset(SOURCE_NS, self._name(f"public.{topic}"), self._fields())
        if layer == "landing":
            return Dataset(LAKE_NS, self._name(f"landing/app/{topic}") + "/", self._fields())
        if temporary:
            return Dataset(
                WAREHOUSE_NS, self._name(f"analytics.tmp.{topic}"), self._fields(), temporary
            )
        schema = {"staging": "stg", "marts": "marts"}.get(layer, layer)
        return Dataset(WAREHOUSE_NS, self._name(f"analytics.{schema}.{topic}"), self._fields())

    def plan(self) -> Workload:
        rng = self.rng
        per_layer = max(1, self.size.jobs // len(LAYERS))
        written: list[list[Dataset]] = []
        jobs: list[Job] = []
        sources = [self.dataset("source") for _ in range(max(2, per_layer // 2))]
        for index, layer in enumerate(LAYERS):
            count = per_layer if index < len(LAYERS) - 1 else self.size.jobs - len(jobs)
            produced: list[Dataset] = []
            for _ in range(count):
                earlier = written[-1] if written else sources
                inputs = [rng.choice(earlier)]
                pool = [d for level in written for d in level] or sources
                for _ in range(rng.choice([0, 1, 1, 2])):
                    other = rng.choice(earlier if rng.random() < 0.6 else pool)
                    if other not in inputs:
                        inputs.append(other)
                outputs = [self.dataset(layer) for _ in range(1 if rng.random() < 0.7 else 2)]
                style = rng.choices(STYLES, [5, 2, 3])[0]
                if style == "facet" and len(inputs) == 1:
                    inputs.append(rng.choice(pool))  # the lookup no entry names
                    if inputs[1] == inputs[0]:
                        inputs.pop()
                topic = outputs[0].name.rsplit(".", 1)[-1].strip("/").replace("/", "_")
                job = Job(f"{layer}.{topic}", index, style, inputs, outputs, rng.random() < 0.4)
                jobs.append(job)
                produced.extend(outputs)
            written.append(produced)
        workflows = self._workflows(jobs)
        for job in jobs:
            for output in job.outputs:
                job.plans[output] = self._output_plan(job, output)
        return Workload(self.size, 0, jobs, workflows)

    def _workflows(self, jobs: list[Job]) -> dict[str, list[Job]]:
        """Group each layer's jobs into DAGs of about ten tasks; a few jobs run on their own.
        In some DAGs an early task hands data to a later one through a temporary dataset."""
        workflows: dict[str, list[Job]] = {}
        for index, layer in enumerate(LAYERS):
            members = [j for j in jobs if j.layer == index and self.rng.random() < 0.9]
            for start in range(0, len(members), WORKFLOW_TASKS):
                name = f"dag_{layer}_{start // WORKFLOW_TASKS + 1:03d}"
                tasks = members[start : start + WORKFLOW_TASKS]
                for task in tasks:
                    task.workflow = name
                    task.name = f"{name}.{task.name}"
                workflows[name] = tasks
                if len(tasks) >= 2 and self.rng.random() < 0.6:
                    first, second = self.rng.sample(range(len(tasks)), 2)
                    writer, reader = tasks[min(first, second)], tasks[max(first, second)]
                    kind: Temporary = self.rng.choice(["facet", "suffix"])
                    temp = self.dataset(layer, kind)
                    writer.outputs.append(temp)
                    reader.inputs.insert(0, temp)
        for job in jobs:
            if job.workflow is None:
                job.name = f"adhoc/{job.name}"
        return workflows

    def _output_plan(self, job: Job, output: Dataset) -> OutputPlan:
        """Plain jobs read every input into every output; the others a subset, and a facet
        job's last input (the lookup) into none."""
        rng = self.rng
        plan = OutputPlan()
        if job.style == "plain":
            chosen = list(job.inputs)
        else:
            usable = job.inputs[:-1] if job.style == "facet" and len(job.inputs) > 1 else job.inputs
            chosen = [usable[0]] + [d for d in usable[1:] if rng.random() < 0.6]
            if output is not job.outputs[0] and len(usable) > 1 and rng.random() < 0.5:
                chosen = chosen[1:] or chosen  # a second output fed by fewer inputs
            if job.style == "facet" and len(chosen) > 1 and rng.random() < 0.5:
                plan.whole.append(chosen.pop())  # read as a whole: no field of it is named
        plan.joined = chosen
        for name in output.fields:
            source = rng.choice(chosen)
            same = name in source.fields and rng.random() < 0.7  # mostly copied as it is
            plan.fields[name] = [(source, name if same else rng.choice(source.fields))]
            if rng.random() < 0.3:
                other = rng.choice(chosen)
                pair = (other, rng.choice(other.fields))
                if pair not in plan.fields[name]:
                    plan.fields[name].append(pair)
        if len(chosen) > 1:  # the join keys: every joined input feeds the output through them
            plan.wide.extend((source, "id", "JOIN") for source in chosen)
        if rng.random() < 0.5:
            source = rng.choice(chosen)
            plan.wide.append((source, rng.choice(source.fields), "FILTER"))
        return plan


# -- events and truth -----------------------------------------------------------------------


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _dataset_facets(dataset: Dataset) -> dict[str, Any]:
    topic = next(t for t in TOPICS if t in dataset.name)
    return {
        "schema": pf.schema([(name, *COLUMNS[name]) for name in dataset.fields]),
        "dataSource": pf.data_source(dataset.namespace),
        "documentation": pf.dataset_documentation(
            f"{topic.capitalize()}, one row per {topic.rstrip('s')} and load; "
            "owned by the data platform team, refreshed daily by Airflow"
        ),
        "datasetType": pf.dataset_type("TABLE" if "://db" in dataset.namespace else "FILE"),
    }


class _Emitter:
    """Turns the plan into events, day by day, and records the truth they carry."""

    def __init__(self, workload: Workload, seed: int) -> None:
        self.w = workload
        self.rng = random.Random(seed + 1)

    def days(self) -> Iterator[dict[str, Any]]:
        standalone = [j for j in self.w.jobs if j.workflow is None]
        for day in range(self.w.size.days):
            for name, tasks in self.w.workflows.items():
                yield from self._workflow_run(day, name, tasks)
            for job in standalone:
                start = BASE_TIME + timedelta(days=day, hours=job.layer + 1, minutes=30)
                dag_run = pf.DagRun(
                    job.name, _uuid(self.rng), BASE_TIME + timedelta(days=day - 1), start,
                    LAYERS[job.layer], (job.name,),
                )  # fmt: skip
                yield from self._task_run(job, start, dag_run, 0, parented=False)

    def _workflow_run(self, day: int, name: str, tasks: list[Job]) -> Iterator[dict[str, Any]]:
        start = BASE_TIME + timedelta(days=day, hours=tasks[0].layer)
        task_ids = tuple(_task_id(task) for task in tasks)
        dag_run = pf.DagRun(
            name, _uuid(self.rng), BASE_TIME + timedelta(days=day - 1), start,
            LAYERS[tasks[0].layer], task_ids,
        )  # fmt: skip
        dag = {
            "namespace": JOB_NS,
            "name": name,
            "facets": {
                "jobType": pf.job_type("DAG"),
                "ownership": pf.ownership(dag_run.layer),
                "documentation": pf.documentation(dag_run.dag()["description"]),
            },
        }
        yield self._event(
            "START", start, dag_run.run_id, dag, pf.dag_run_facets(dag_run, None), [], []
        )
        for index, task in enumerate(tasks):
            task_start = start + timedelta(minutes=2 * index + 1)
            yield from self._task_run(task, task_start, dag_run, index, parented=True)
        end = start + timedelta(minutes=2 * len(tasks) + 2)
        yield self._event(
            "COMPLETE", end, dag_run.run_id, dag, pf.dag_run_facets(dag_run, "success"), [], []
        )

    def _task_run(
        self, job: Job, start: datetime, dag_run: pf.DagRun, index: int, *, parented: bool
    ) -> Iterator[dict[str, Any]]:
        rng = self.rng
        run_id = _uuid(rng)
        workflow_run = dag_run.run_id if parented else ""
        tasks = list(dag_run.tasks)
        run_facets = pf.task_run_facets(
            dag_run, _task_id(job), JOB_NS, "SQLExecuteQueryOperator",
            try_number=1 if rng.random() < 0.95 else 2,
            queued=start - timedelta(seconds=rng.randint(1, 30)),
            duration=round(rng.uniform(5, 60), 3),
            task_uuid=_uuid(rng),
            upstream=tasks[max(0, index - 1) : index],
            downstream=tasks[index + 1 : index + 2],
        )  # fmt: skip
        if not parented:
            del run_facets["parent"]

        def named(d: Dataset) -> str:
            return d.named(workflow_run)

        job_facets: dict[str, Any] = {
            "jobType": pf.job_type("TASK"),
            "ownership": pf.ownership(LAYERS[job.layer]),
            "sql": pf.sql(job_statement(job, named)),
        }
        if job.style == "facet":
            job_facets["lineage"] = pf.spec_facet(
                "LineageJobFacet", {"entries": [self._entry(job, d, named) for d in job.outputs]}
            )
        job_doc = {"namespace": JOB_NS, "name": job.name, "facets": job_facets}
        end = start + timedelta(minutes=1)
        inputs = [self._input(d, named, None) for d in job.inputs]
        outputs = [self._output(job, d, named, None) for d in job.outputs]
        rows = [rng.randint(1_000, 5_000_000) for _ in job.inputs + job.outputs]
        read = [self._input(d, named, n) for d, n in zip(job.inputs, rows, strict=False)]
        written = [
            self._output(job, d, named, n)
            for d, n in zip(job.outputs, rows[len(job.inputs) :], strict=True)
        ]
        if job.split:
            yield self._event("START", start, run_id, job_doc, run_facets, inputs, [])
            yield self._event("COMPLETE", end, run_id, job_doc, run_facets, [], written)
        else:
            yield self._event("START", start, run_id, job_doc, run_facets, inputs, outputs)
            yield self._event("COMPLETE", end, run_id, job_doc, run_facets, read, written)
        self._record_truth(job, run_id, named)

    def _event(
        self,
        event_type: str,
        time: datetime,
        run_id: str,
        job: dict[str, Any],
        run_facets: dict[str, Any],
        inputs: list[dict[str, Any]],
        outputs: list[dict[str, Any]],
    ) -> dict[str, Any]:
        return {
            "eventType": event_type,
            "eventTime": pf.iso(time),
            "run": {"runId": run_id, "facets": run_facets},
            "job": job,
            "inputs": inputs,
            "outputs": outputs,
            "producer": pf.PRODUCER,
            "schemaURL": RUN_SCHEMA,
        }

    @staticmethod
    def _input(dataset: Dataset, named: Namer, rows: int | None) -> dict[str, Any]:
        """An input; with `rows` (on COMPLETE) it carries its read statistics."""
        doc: dict[str, Any] = {
            "namespace": dataset.namespace,
            "name": named(dataset),
            "facets": _dataset_facets(dataset),
        }
        if rows is not None:
            doc["inputFacets"] = {
                "inputStatistics": pf.input_statistics(rows),
                "dataQualityMetrics": pf.data_quality(rows, list(dataset.fields[:4])),
            }
        return doc

    def _output(self, job: Job, dataset: Dataset, named: Namer, rows: int | None) -> dict[str, Any]:
        """An output; with `rows` (on COMPLETE) it carries its write statistics."""
        doc: dict[str, Any] = {
            "namespace": dataset.namespace,
            "name": named(dataset),
            "facets": _dataset_facets(dataset),
        }
        plan = job.plans[dataset]
        if job.style == "column":
            doc["facets"]["columnLineage"] = pf.spec_facet(
                "ColumnLineageDatasetFacet",
                {
                    "fields": {
                        name: {"inputFields": [_column_input(d, f, named, _direct(name, pairs))
                                               for d, f in pairs]}
                        for name, pairs in plan.fields.items()
                    },
                    "dataset": [_column_input(d, f, named, ("INDIRECT", kind))
                                for d, f, kind in plan.wide],
                },
            )  # fmt: skip
        output_facets: dict[str, Any] = {}
        if rows is not None:
            output_facets["outputStatistics"] = pf.output_statistics(rows)
        if dataset.temporary == "facet":
            output_facets["upstream_temporary"] = {
                "_producer": pf.PRODUCER,
                "_schemaURL": TEMPORARY_SCHEMA,
                "temporary": True,
            }
        if output_facets:
            doc["outputFacets"] = output_facets
        return doc

    @staticmethod
    def _entry(job: Job, dataset: Dataset, named: Namer) -> dict[str, Any]:
        plan = job.plans[dataset]

        def source(d: Dataset, name: str | None) -> dict[str, Any]:
            doc = {"type": "DATASET", "namespace": d.namespace, "name": named(d)}
            return doc if name is None else {**doc, "field": name}

        return {
            "type": "DATASET",
            "namespace": dataset.namespace,
            "name": named(dataset),
            "inputs": [source(d, f) for d, f, _ in plan.wide]
            + [source(d, None) for d in plan.whole],
            "fields": {
                name: {"inputs": [source(d, f) for d, f in pairs]}
                for name, pairs in plan.fields.items()
            },
        }

    def _record_truth(self, job: Job, run_id: str, named: Namer) -> None:
        truth = self.w.truth

        def key(d: Dataset) -> tuple[str, str]:
            return d.namespace, named(d)

        for d in job.inputs:
            truth.accesses.add((*key(d), job.name, run_id, "read"))
        for out in job.outputs:
            truth.accesses.add((*key(out), job.name, run_id, "write"))
            plan = job.plans[out]
            for src in plan.sources():
                if src != out:
                    truth.dataset_edges.add((*key(src), *key(out), job.name, run_id))
            edges = {
                (*key(src), name, *key(out), target_field, run_id)
                for target_field, pairs in plan.fields.items()
                for src, name in pairs
            } | {(*key(src), name, *key(out), "", run_id) for src, name, _ in plan.wide}
            if job.style == "plain":
                truth.sql_field_edges |= edges
            else:
                truth.field_edges |= edges


def _task_id(job: Job) -> str:
    return job.name.removeprefix(f"{job.workflow}.") if job.workflow else job.name


def _direct(name: str, pairs: list[tuple[Dataset, str]]) -> tuple[str, str]:
    same = len(pairs) == 1 and pairs[0][1] == name
    return "DIRECT", "IDENTITY" if same else "TRANSFORMATION"


def _column_input(
    dataset: Dataset, name: str, named: Namer, transformation: tuple[str, str]
) -> dict[str, Any]:
    kind, subtype = transformation
    return {
        "namespace": dataset.namespace,
        "name": named(dataset),
        "field": name,
        "transformations": [
            {"type": kind, "subtype": subtype, "description": "", "masking": False}
        ],
    }


def _targets(workload: Workload) -> dict[str, Any]:
    """What the query benchmarks ask about: the mart with the deepest upstream (its job, a
    field of it), the landing dataset that feeds most within ten levels for downstream, a
    middle-layer dataset for the undirected walk, a field of a facet-style and of a plain
    output, and a marked temporary dataset."""
    depth: dict[Dataset, int] = {}
    for job in sorted(workload.jobs, key=lambda j: j.layer):
        for out in job.outputs:
            sources = job.plans[out].sources()
            depth[out] = 1 + max((depth.get(s, 0) for s in sources), default=0)
    marts = [j for j in workload.jobs if j.style == "column" and j.layer == len(LAYERS) - 1]
    mart_job = max(marts, key=lambda j: (depth[j.outputs[0]], j.name))
    mart = mart_job.outputs[0]
    feeds: dict[Dataset, set[Dataset]] = {}
    for job in workload.jobs:
        for out in job.outputs:
            for source in job.plans[out].sources():
                feeds.setdefault(source, set()).add(out)

    def reach(start: Dataset, levels: int = 10) -> int:
        seen, frontier = {start}, {start}
        for _ in range(levels):
            frontier = {d for f in frontier for d in feeds.get(f, ())} - seen
            seen |= frontier
        return len(seen)

    landings = [d for j in workload.jobs if j.layer == 0 for d in j.outputs if not d.temporary]
    landing = max(landings, key=lambda d: (reach(d), d.name))
    middle = next(j.outputs[0] for j in workload.jobs if j.layer == len(LAYERS) // 2)

    def field_of(style: Style) -> list[str]:
        job = next(j for j in workload.jobs if j.style == style and j.layer > 1)
        out = job.outputs[0]
        return [out.namespace, out.name, next(f for f in out.fields if f != "id")]

    temporary = next(
        (d for j in workload.jobs for d in j.outputs if d.temporary == "facet"), middle
    )
    return {
        "upstream": [mart.namespace, mart.name],
        "upstream_depth": depth[mart],
        "upstream_job": [JOB_NS, mart_job.name],
        "downstream": [landing.namespace, landing.name],
        "both": [middle.namespace, middle.name],
        "field": [mart.namespace, mart.name, next(iter(mart_job.plans[mart].fields))],
        "facet_field": field_of("facet"),
        "plain_field": field_of("plain"),
        "temporary": [temporary.namespace, temporary.name],
    }


#: The truth's edge sets, written as sorted lists of rows.
EDGE_SETS = ("dataset_edges", "field_edges", "accesses", "sql_field_edges")


def size_summary(sizes: list[int]) -> dict[str, int]:
    """Median, p10, p90, mean and total of the events' sizes in bytes."""
    if not sizes:
        return {"median": 0, "p10": 0, "p90": 0, "mean": 0, "total": 0}
    deciles = statistics.quantiles(sizes, n=10) if len(sizes) > 1 else [sizes[0]] * 9
    return {
        "median": round(statistics.median(sizes)),
        "p10": round(deciles[0]),
        "p90": round(deciles[-1]),
        "mean": round(statistics.fmean(sizes)),
        "total": sum(sizes),
    }


def generate(size: Size, seed: int, out_dir: Path) -> Workload:
    """Write `events.ndjson` and `truth.json` for `size` under `out_dir`; return the workload.
    Events go to disk as they are made; only the truth stays in memory."""
    workload = _Planner(size, seed).plan()
    workload.seed = seed
    out_dir.mkdir(parents=True, exist_ok=True)
    emitter = _Emitter(workload, seed)
    with (out_dir / "events.ndjson").open("w", encoding="utf-8") as stream:
        for event in emitter.days():
            line = json.dumps(event, separators=(",", ":"))
            stream.write(line)
            stream.write("\n")
            workload.event_bytes.append(len(line))
    workload.events = len(workload.event_bytes)
    workload.targets = _targets(workload)
    document = {
        "generator": GENERATOR_VERSION,
        "size": size.name,
        "seed": seed,
        "events": workload.events,
        "event_bytes": size_summary(workload.event_bytes),
        "jobs": len(workload.jobs),
        "days": size.days,
        "workflows": len(workload.workflows),
        "window": [pf.iso(t) for t in workload.window],
        "targets": workload.targets,
    }
    (out_dir / "summary.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    _write_truth(out_dir / "truth.json", document, workload.truth)
    return workload


def load_summary(out_dir: Path) -> dict[str, Any]:
    """The workload's figures without its edges (events, sizes, targets, window)."""
    summary: dict[str, Any] = json.loads((out_dir / "summary.json").read_text(encoding="utf-8"))
    return summary


def _write_truth(path: Path, document: dict[str, Any], truth: Truth) -> None:
    """The document with each edge set as a sorted list, written in slices so that the large
    size's millions of rows never become one string."""
    slice_rows = 100_000
    with path.open("w", encoding="utf-8") as stream:
        stream.write(json.dumps(document)[:-1])
        for name in EDGE_SETS:
            rows = sorted(getattr(truth, name))
            stream.write(f', "{name}": [')
            for start in range(0, len(rows), slice_rows):
                if start:
                    stream.write(", ")
                stream.write(json.dumps(rows[start : start + slice_rows])[1:-1])
            stream.write("]")
        stream.write("}")


def load_truth(out_dir: Path) -> dict[str, Any]:
    """The ground truth written beside the events, with edges as sets of tuples.

    Read row by row, each distinct name or run id kept once: the large size's millions of
    rows repeat a few hundred thousand strings, and parsed whole (every row a list of its
    own strings) they took about 10 GB."""
    text = (out_dir / "truth.json").read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    strings: dict[Any, Any] = {}
    found: dict[str, set[tuple[Any, ...]]] = {}
    header_end, at = len(text) - 1, 0
    for key in EDGE_SETS:
        marker = f', "{key}": ['
        start = text.find(marker, at)
        if start < 0:
            continue
        header_end, at = min(header_end, start), start + len(marker)
        rows: set[tuple[Any, ...]] = set()
        while text[at] != "]":
            row, at = decoder.raw_decode(text, at)
            rows.add(tuple(strings.setdefault(value, value) for value in row))
            at += 2 if text.startswith(", ", at) else 0
        found[key] = rows
    document: dict[str, Any] = json.loads(text[:header_end] + "}")
    return {**document, **{key: found.get(key, set()) for key in EDGE_SETS}}


def read_events(out_dir: Path) -> Iterator[str]:
    """The events, one JSON document (text) per item, in generation order."""
    with (out_dir / "events.ndjson").open(encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                yield line.rstrip("\n")


def in_chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    """The lines in lists of `size` (the last one shorter), read as they are needed."""
    iterator = iter(lines)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk
