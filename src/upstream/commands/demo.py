"""`upstream demo`: the three scenarios the design grew from, loaded into a server or a
database, with the commands and URLs that show them.

Each call records new runs (fresh run ids, event times of the last few minutes), so the data
falls in the default `now-7d` window and a second call adds a second run of every job, as a
producer running again would.
"""

from __future__ import annotations

import shlex
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from upstream.client import DEFAULT_URL
from upstream.client.http import segment
from upstream.commands.database import database
from upstream.commands.database_sink import DatabaseSink
from upstream.commands.target import Target
from upstream.ingest.operations_document import operations_document_event

PRODUCER = "https://github.com/upstream-lineage/upstream/demo"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
WAREHOUSE = "postgresql://warehouse"
SUMMARIES_JOB = ("https://example.com/jobs", "build_summaries")
WORKFLOW = ("default", "EmployeePipe")


def load_demo(target: Target, now: datetime | None = None) -> str:
    """Store the scenarios on `target`; the text telling where to look at them."""
    moment = now or datetime.now(UTC)
    workflow_run = str(uuid.uuid4())
    document = user_data_operations(moment)
    events = employee_workflow_events(moment, workflow_run) + build_summaries_events(moment)
    if target.db is not None:
        with database(target.db, migrate=True) as store:
            DatabaseSink(store).send([operations_document_event("myns", document), *events])
    else:
        with target.client() as client:
            client.post_field_operations("myns", document)
            client.post_events(events)
    return instructions(target, workflow_run)


def user_data_operations(now: datetime) -> dict[str, Any]:
    """Seed 000: ETLMapReduce reads myns/user_data and writes myns/mytableds, field by field,
    in the seed's JSON form (the one producers in other languages post)."""
    return {
        "destination": {"namespace": "myns", "name": "mytableds"},
        "source": {
            "namespace": "myns",
            "name": "user_data",
            "description": "files contains user information",
        },
        "operations": [
            _operation("read", "Reading the data from the file", ["source"], ["offset", "body"]),
            _operation(
                "parse",
                "parsing the input body field",
                ["body"],
                ["firstName", "lastName", "age", "city", "state"],
            ),
            _operation(
                "concat",
                "concatenating the first name and last name",
                ["firstName", "lastName"],
                ["name"],
            ),
            _operation("drop", "deleting the first name field", ["firstName"], []),
            _operation("drop", "deleting the last name field", ["lastName"], []),
            _operation("create", "creating unique id from the name field", ["name"], ["uniqueId"]),
        ],
        "job": {"namespace": "myns", "name": "ETLMapReduce"},
        "run": {"runId": str(uuid.uuid4())},
        "eventTime": _iso(now - timedelta(minutes=1)),
    }


def employee_workflow_events(now: datetime, workflow_run: str) -> list[dict[str, Any]]:
    """Seed 002: the EmployeePipe workflow run; phase-1 turns Employees into a temporary
    dataset named after the workflow run (CDAP's convention), phase-2 aggregates that into
    EmpAgg. Rolled up, the workflow reads Employees and writes EmpAgg, nothing between."""
    temporary = f"conn-0.{workflow_run}"
    phase_1, phase_2 = str(uuid.uuid4()), str(uuid.uuid4())
    workflow_facets = {"jobType": _job_type("WORKFLOW")}
    parent = {"parent": _parent(WORKFLOW, workflow_run)}
    steps = [
        (WORKFLOW, workflow_run, "START", 6, [], [], {}, workflow_facets),
        (("default", "EmployeePipe.phase-1"), phase_1, "START", 5, ["Employees"], [], parent, {}),
        (("default", "EmployeePipe.phase-1"), phase_1, "COMPLETE", 4, [], [temporary], parent, {}),
        (("default", "EmployeePipe.phase-2"), phase_2, "START", 3, [temporary], [], parent, {}),
        (("default", "EmployeePipe.phase-2"), phase_2, "COMPLETE", 2, [], ["EmpAgg"], parent, {}),
        (WORKFLOW, workflow_run, "COMPLETE", 1, [], [], {}, workflow_facets),
    ]
    return [
        _run_event(
            job,
            run_id,
            state,
            now - timedelta(minutes=minutes_ago),
            inputs=[("default", name) for name in reads],
            outputs=[("default", name) for name in writes],
            run_facets=run_facets,
            job_facets=job_facets,
        )
        for job, run_id, state, minutes_ago, reads, writes, run_facets, job_facets in steps
    ]


def build_summaries_events(now: datetime) -> list[dict[str, Any]]:
    """Seed 003: build_summaries reads customers and orders and writes two summaries; its
    lineage facet says which feeds which, so there are two dataset edges, not four."""
    run_id = str(uuid.uuid4())
    lineage = {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/LineageFacet.json#/$defs/LineageJobFacet",
        "entries": [
            _entry("analytics.customer_summary", "raw.customers"),
            _entry("analytics.order_summary", "raw.orders"),
        ],
    }
    reads = [(WAREHOUSE, "raw.customers"), (WAREHOUSE, "raw.orders")]
    writes = [(WAREHOUSE, "analytics.customer_summary"), (WAREHOUSE, "analytics.order_summary")]
    return [
        _run_event(SUMMARIES_JOB, run_id, "START", now - timedelta(minutes=3), inputs=reads),
        _run_event(
            SUMMARIES_JOB,
            run_id,
            "COMPLETE",
            now - timedelta(minutes=2),
            inputs=reads,
            outputs=writes,
            job_facets={"lineage": lineage},
        ),
    ]


def instructions(target: Target, workflow_run: str) -> str:
    """What was loaded, and the commands and URLs that show it."""
    where = f"--db {shlex.quote(target.db)}" if target.db else _url_option(target.url)
    base = DEFAULT_URL if target.db else target.url.rstrip("/")

    def command(*words: str) -> str:
        return " ".join(["upstream", *(shlex.quote(w) for w in words), *([where] if where else [])])

    def api(namespace: str, dataset: str, tail: str, **params: Any) -> str:
        query = f"?{urlencode(params, doseq=True)}" if params else ""
        return f"{base}/v3/namespaces/{segment(namespace)}/datasets/{segment(dataset)}{tail}{query}"

    rolled_up = {"collapse": ["access", "run", "component"], "rollup": "workflow", "levels": 1}
    summary = "analytics.customer_summary"
    lines = [
        f"Loaded the three example scenarios into {target.db or target.url}.",
        "",
        "1. CDAP's field operations: ETLMapReduce made myns/mytableds from myns/user_data.",
        f"   {command('field-lineage', 'myns', 'mytableds', 'uniqueId', '--paths')}",
        f"   {command('field-lineage', 'myns', 'user_data', 'body', '--direction', 'outgoing')}",
        f"   {api('myns', 'mytableds', '/fields/uniqueId/lineage')}",
        "",
        "2. A workflow with a temporary dataset: CDAP's EmployeePipe wrote default/EmpAgg",
        f"   through default/conn-0.{workflow_run}.",
        f"   {command('lineage', 'default', 'EmpAgg', '--rollup', 'workflow')}",
        f"   {command('lineage', 'default', 'EmpAgg', '--levels', '2')}",
        f"   {api('default', 'EmpAgg', '/lineage', **rolled_up)}",
        "",
        "3. The lineage job facet: build_summaries has 2 real edges, not 4.",
        f"   {command('lineage', WAREHOUSE, summary, '--direction', 'upstream')}",
        f"   {api(WAREHOUSE, summary, '/lineage', direction='upstream')}",
        "",
    ]
    if target.db:
        lines.append(f"Serve it to browse the graph: upstream serve --db {shlex.quote(target.db)}")
        lines.append(f"then open {base}/ (the URLs above assume that default address).")
    else:
        lines.append(f"Browse the graph at {base}/")
    return "\n".join(lines)


def _url_option(url: str) -> str:
    return "" if url.rstrip("/") == DEFAULT_URL else f"--url {shlex.quote(url)}"


def _operation(
    name: str, description: str, inputs: list[str], outputs: list[str]
) -> dict[str, Any]:
    return {"name": name, "description": description, "inputs": inputs, "outputs": outputs}


def _entry(target: str, source: str) -> dict[str, Any]:
    return {
        "type": "DATASET",
        "namespace": WAREHOUSE,
        "name": target,
        "inputs": [{"type": "DATASET", "namespace": WAREHOUSE, "name": source}],
    }


def _job_type(kind: str) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/2-0-3/JobTypeJobFacet.json",
        "processingType": "BATCH",
        "integration": "UPSTREAM_DEMO",
        "jobType": kind,
    }


def _parent(job: tuple[str, str], run_id: str) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": "https://openlineage.io/spec/facets/1-1-0/ParentRunFacet.json",
        "run": {"runId": run_id},
        "job": {"namespace": job[0], "name": job[1]},
    }


def _run_event(
    job: tuple[str, str],
    run_id: str,
    state: str,
    time: datetime,
    *,
    inputs: list[tuple[str, str]] | None = None,
    outputs: list[tuple[str, str]] | None = None,
    run_facets: dict[str, Any] | None = None,
    job_facets: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "eventType": state,
        "eventTime": _iso(time),
        "run": {"runId": run_id, "facets": run_facets or {}},
        "job": {"namespace": job[0], "name": job[1], "facets": job_facets or {}},
        "inputs": [{"namespace": ns, "name": name} for ns, name in inputs or []],
        "outputs": [{"namespace": ns, "name": name} for ns, name in outputs or []],
        "producer": PRODUCER,
        "schemaURL": RUN_EVENT,
    }


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
