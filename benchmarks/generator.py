"""Seeded OpenLineage workloads with their ground truth.

A layered warehouse (source tables -> landing -> staging -> intermediate levels -> marts),
run once a day by Airflow-like workflows: every task run carries a `parent` facet naming its
workflow (DAG) run, some tasks hand data to a later task through a dataset temporary to the
workflow run (marked by a facet, or named after the workflow run id as CDAP does). Jobs come in
three styles, fixed per job, so every precedence rule of DESIGN §3.2 is exercised:

- `column`: outputs carry `columnLineage` from a subset of the inputs; inputs it does not name
  do not flow into that output.
- `facet`: `job.facets.lineage` entries per output, with field entries and dataset-wide field
  inputs; one input is only a lookup no entry names, so it flows nowhere.
- `plain`: inputs and outputs only, so every input flows into every output (inferred).

Some jobs report inputs on START and outputs on COMPLETE (a run accumulates across events).
The ground truth is computed from the plan, independently of the server's code, and written
beside the events: dataset edges per run and field edges per run.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

PRODUCER = "https://github.com/upstream-lineage/upstream/benchmarks"
RUN_SCHEMA = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
FACET_SCHEMA = "https://openlineage.io/spec/facets/1-0-0/{}.json#/$defs/{}"

SOURCE_NS = "postgres://app-db:5432"
LAKE_NS = "s3://bucket"
WAREHOUSE_NS = "postgres://db:5432"
JOB_NS = "airflow://host:8080"

#: The first day of every workload: fixed, so a seed always gives byte-identical events.
BASE_TIME = datetime(2026, 10, 1, tzinfo=UTC)
#: Job layers: landing, staging, intermediate levels, marts. Lineage is up to 12 hops deep.
INTERMEDIATE_LEVELS = 9
LAYERS = ["landing", "staging", *[f"int{i:02d}" for i in range(INTERMEDIATE_LEVELS)], "marts"]
TOPICS = [
    "orders", "customers", "payments", "sessions", "products", "invoices", "shipments",
    "clicks", "accounts", "refunds", "stores", "suppliers", "returns", "carts", "reviews",
]  # fmt: skip
FIELDS = [
    "customer_id", "order_id", "amount", "currency", "created_at", "updated_at", "status",
    "country", "sku", "quantity", "price", "email", "region", "channel", "score", "discount",
]  # fmt: skip
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
    """How one output is made: field sources, dataset-wide field inputs, whole datasets."""

    fields: dict[str, list[tuple[Dataset, str]]] = field(default_factory=dict)
    wide: list[tuple[Dataset, str]] = field(default_factory=list)
    whole: list[Dataset] = field(default_factory=list)

    def sources(self) -> set[Dataset]:
        found = {d for pairs in self.fields.values() for d, _ in pairs}
        return found | {d for d, _ in self.wide} | set(self.whole)


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


@dataclass
class Workload:
    size: Size
    seed: int
    jobs: list[Job]
    workflows: dict[str, list[Job]]
    events: int = 0
    truth: Truth = field(default_factory=Truth)
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
        return ("id", *self.rng.sample(FIELDS, self.rng.randint(3, 7)))

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
        rng = self.rng
        plan = OutputPlan()
        if job.style == "plain":
            return plan
        usable = job.inputs[:-1] if job.style == "facet" and len(job.inputs) > 1 else job.inputs
        chosen = [usable[0]] + [d for d in usable[1:] if rng.random() < 0.6]
        if output is not job.outputs[0] and len(usable) > 1 and rng.random() < 0.5:
            chosen = chosen[1:] or chosen  # a second output fed by fewer inputs
        for name in output.fields:
            source = rng.choice(chosen)
            plan.fields[name] = [(source, rng.choice(source.fields))]
            if rng.random() < 0.3:
                other = rng.choice(chosen)
                pair = (other, rng.choice(other.fields))
                if pair not in plan.fields[name]:
                    plan.fields[name].append(pair)
        for source in chosen:  # every chosen input really feeds the output
            if not any(s == source for pairs in plan.fields.values() for s, _ in pairs):
                plan.wide.append((source, rng.choice(source.fields)))
        if job.style == "facet" and len(chosen) > 1 and rng.random() < 0.5:
            plan.whole.append(chosen[-1])
        return plan


# -- events and truth -----------------------------------------------------------------------


def _facet(name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": FACET_SCHEMA.format(name, name), **body}


def _schema(dataset: Dataset) -> dict[str, Any]:
    return _facet(
        "SchemaDatasetFacet",
        {"fields": [{"name": f, "type": "BIGINT" if f.endswith("id") else "VARCHAR"}
                    for f in dataset.fields]},
    )  # fmt: skip


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


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
                yield from self._task_run(job, start, None)

    def _workflow_run(self, day: int, name: str, tasks: list[Job]) -> Iterator[dict[str, Any]]:
        run_id = _uuid(self.rng)
        start = BASE_TIME + timedelta(days=day, hours=tasks[0].layer)
        job_type = _facet(
            "JobTypeJobFacet",
            {"processingType": "BATCH", "integration": "AIRFLOW", "jobType": "DAG"},
        )
        dag = {"namespace": JOB_NS, "name": name, "facets": {"jobType": job_type}}
        yield self._event("START", start, run_id, dag, {}, [], [])
        for index, task in enumerate(tasks):
            task_start = start + timedelta(minutes=2 * index + 1)
            yield from self._task_run(task, task_start, (name, run_id))
        end = start + timedelta(minutes=2 * len(tasks) + 2)
        yield self._event("COMPLETE", end, run_id, dag, {}, [], [])

    def _task_run(
        self, job: Job, start: datetime, parent: tuple[str, str] | None
    ) -> Iterator[dict[str, Any]]:
        run_id = _uuid(self.rng)
        workflow_run = parent[1] if parent else ""
        run_facets: dict[str, Any] = {}
        if parent is not None:
            run_facets["parent"] = _facet(
                "ParentRunFacet",
                {"run": {"runId": parent[1]}, "job": {"namespace": JOB_NS, "name": parent[0]}},
            )
        job_facets: dict[str, Any] = {
            "jobType": _facet(
                "JobTypeJobFacet",
                {"processingType": "BATCH", "integration": "AIRFLOW", "jobType": "TASK"},
            ),
            "sql": _facet("SQLJobFacet", {"query": f"INSERT INTO {job.outputs[0].name} ..."}),
        }
        inputs = [self._input(d, workflow_run) for d in job.inputs]
        outputs = [self._output(job, d, workflow_run) for d in job.outputs]
        if job.style == "facet":
            job_facets["lineage"] = _facet(
                "LineageJobFacet",
                {"entries": [self._entry(job, d, workflow_run) for d in job.outputs]},
            )
        job_doc = {"namespace": JOB_NS, "name": job.name, "facets": job_facets}
        end = start + timedelta(minutes=1)
        if job.split:
            yield self._event("START", start, run_id, job_doc, run_facets, inputs, [])
            yield self._event("COMPLETE", end, run_id, job_doc, run_facets, [], outputs)
        else:
            yield self._event("START", start, run_id, job_doc, run_facets, [], [])
            yield self._event("COMPLETE", end, run_id, job_doc, run_facets, inputs, outputs)
        self._record_truth(job, run_id, workflow_run)

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
        self.w.events += 1
        return {
            "eventType": event_type,
            "eventTime": _iso(time),
            "run": {"runId": run_id, "facets": run_facets},
            "job": job,
            "inputs": inputs,
            "outputs": outputs,
            "producer": PRODUCER,
            "schemaURL": RUN_SCHEMA,
        }

    def _input(self, dataset: Dataset, workflow_run: str) -> dict[str, Any]:
        facets = {
            "schema": _schema(dataset),
            "dataSource": _facet("DatasourceDatasetFacet",
                                 {"name": dataset.namespace, "uri": dataset.namespace}),
        }  # fmt: skip
        return {"namespace": dataset.namespace, "name": dataset.named(workflow_run),
                "facets": facets}  # fmt: skip

    def _output(self, job: Job, dataset: Dataset, workflow_run: str) -> dict[str, Any]:
        doc = self._input(dataset, workflow_run)
        plan = job.plans[dataset]
        if job.style == "column":
            doc["facets"]["columnLineage"] = _facet(
                "ColumnLineageDatasetFacet",
                {
                    "fields": {
                        name: {"inputFields": [self._source(d, f, workflow_run, "IDENTITY")
                                               for d, f in pairs]}
                        for name, pairs in plan.fields.items()
                    },
                    "dataset": [self._source(d, f, workflow_run, "FILTER") for d, f in plan.wide],
                },
            )  # fmt: skip
        if dataset.temporary == "facet":
            doc["outputFacets"] = {"upstream_temporary": _facet("TemporaryFacet",
                                                                {"temporary": True})}  # fmt: skip
        return doc

    @staticmethod
    def _source(dataset: Dataset, name: str, workflow_run: str, subtype: str) -> dict[str, Any]:
        kind = "DIRECT" if subtype == "IDENTITY" else "INDIRECT"
        return {
            "namespace": dataset.namespace,
            "name": dataset.named(workflow_run),
            "field": name,
            "transformations": [{"type": kind, "subtype": subtype}],
        }

    def _entry(self, job: Job, dataset: Dataset, workflow_run: str) -> dict[str, Any]:
        plan = job.plans[dataset]

        def source(d: Dataset, name: str | None) -> dict[str, Any]:
            doc = {"type": "DATASET", "namespace": d.namespace, "name": d.named(workflow_run)}
            return doc if name is None else {**doc, "field": name}

        return {
            "type": "DATASET",
            "namespace": dataset.namespace,
            "name": dataset.named(workflow_run),
            "inputs": [source(d, f) for d, f in plan.wide] + [source(d, None) for d in plan.whole],
            "fields": {
                name: {"inputs": [source(d, f) for d, f in pairs]}
                for name, pairs in plan.fields.items()
            },
        }

    def _record_truth(self, job: Job, run_id: str, workflow_run: str) -> None:
        truth = self.w.truth

        def key(d: Dataset) -> tuple[str, str]:
            return d.namespace, d.named(workflow_run)

        for d in job.inputs:
            truth.accesses.add((*key(d), job.name, run_id, "read"))
        for out in job.outputs:
            truth.accesses.add((*key(out), job.name, run_id, "write"))
            plan = job.plans[out]
            sources = set(job.inputs) if job.style == "plain" else plan.sources()
            for src in sources:
                if src != out:
                    truth.dataset_edges.add((*key(src), *key(out), job.name, run_id))
            for target_field, pairs in plan.fields.items():
                for src, name in pairs:
                    truth.field_edges.add((*key(src), name, *key(out), target_field, run_id))
            for src, name in plan.wide:
                truth.field_edges.add((*key(src), name, *key(out), "", run_id))


def _targets(workload: Workload) -> dict[str, Any]:
    """What the query benchmarks ask about: the mart with the deepest upstream (and one of its
    fields), a landing dataset for downstream, a middle-layer dataset for the undirected walk."""
    depth: dict[Dataset, int] = {}
    for job in sorted(workload.jobs, key=lambda j: j.layer):
        for out in job.outputs:
            sources = set(job.inputs) if job.style == "plain" else job.plans[out].sources()
            depth[out] = 1 + max((depth.get(s, 0) for s in sources), default=0)
    marts = [j for j in workload.jobs if j.style == "column" and j.layer == len(LAYERS) - 1]
    mart_job = max(marts, key=lambda j: (depth[j.outputs[0]], j.name))
    mart = mart_job.outputs[0]
    landing = next(j.outputs[0] for j in workload.jobs if j.layer == 0)
    middle = next(j.outputs[0] for j in workload.jobs if j.layer == len(LAYERS) // 2)
    return {
        "upstream": [mart.namespace, mart.name],
        "upstream_depth": depth[mart],
        "downstream": [landing.namespace, landing.name],
        "both": [middle.namespace, middle.name],
        "field": [mart.namespace, mart.name, next(iter(mart_job.plans[mart].fields))],
    }


def generate(size: Size, seed: int, out_dir: Path) -> Workload:
    """Write `events.ndjson` and `truth.json` for `size` under `out_dir`; return the workload."""
    workload = _Planner(size, seed).plan()
    workload.seed = seed
    out_dir.mkdir(parents=True, exist_ok=True)
    emitter = _Emitter(workload, seed)
    with (out_dir / "events.ndjson").open("w", encoding="utf-8") as stream:
        for event in emitter.days():
            stream.write(json.dumps(event, separators=(",", ":")))
            stream.write("\n")
    workload.targets = _targets(workload)
    truth = workload.truth
    document = {
        "size": size.name,
        "seed": seed,
        "events": workload.events,
        "jobs": len(workload.jobs),
        "days": size.days,
        "workflows": len(workload.workflows),
        "window": [_iso(t) for t in workload.window],
        "targets": workload.targets,
        "dataset_edges": sorted(truth.dataset_edges),
        "field_edges": sorted(truth.field_edges),
        "accesses": sorted(truth.accesses),
    }
    (out_dir / "truth.json").write_text(json.dumps(document), encoding="utf-8")
    return workload


def load_truth(out_dir: Path) -> dict[str, Any]:
    """The ground truth written beside the events, with edges as sets of tuples."""
    document: dict[str, Any] = json.loads((out_dir / "truth.json").read_text(encoding="utf-8"))
    for key in ("dataset_edges", "field_edges", "accesses"):
        document[key] = {tuple(row) for row in document[key]}
    return document


def read_events(out_dir: Path) -> Iterator[str]:
    """The events, one JSON document (text) per item, in generation order."""
    with (out_dir / "events.ndjson").open(encoding="utf-8") as stream:
        for line in stream:
            if line.strip():
                yield line.rstrip("\n")
