"""The facets a real Airflow deployment sends with its OpenLineage events, so that the workload's
events weigh what real producers' do (≈ 10-20 kB): the `airflow` run facet (DAG, DAG run, task
and task instance), `processing_engine`, `nominalTime`, `parent` with its root, `jobType`,
`ownership`, `sql` with its dialect; on datasets `schema` (typed, described fields),
`dataSource`, `outputStatistics` and `inputStatistics`. Field names follow the OpenLineage spec
and the Airflow provider's facets; values are made up, deterministically, from the plan."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

AIRFLOW_VERSION = "2.10.4"
PROVIDER_VERSION = "1.14.0"
PRODUCER = f"https://github.com/apache/airflow/tree/providers-openlineage/{PROVIDER_VERSION}"
CLIENT = "https://github.com/OpenLineage/OpenLineage/tree/1.26.0/client/python"
_SPEC = "https://openlineage.io/spec/facets/{version}/{name}.json#/$defs/{name}"
_PROVIDER_SCHEMA = (
    "https://raw.githubusercontent.com/apache/airflow/providers-openlineage/"
    f"{PROVIDER_VERSION}/airflow/providers/openlineage/facets/AirflowRunFacet.json"
    "#/definitions/{name}"
)
_VERSIONS = {
    "SchemaDatasetFacet": "1-1-1",
    "DatasourceDatasetFacet": "1-0-1",
    "ColumnLineageDatasetFacet": "1-2-0",
    "OutputStatisticsOutputDatasetFacet": "1-0-2",
    "InputStatisticsInputDatasetFacet": "1-0-0",
    "JobTypeJobFacet": "2-0-3",
    "SQLJobFacet": "1-1-0",
    "OwnershipJobFacet": "1-0-1",
    "DocumentationJobFacet": "1-1-0",
    "ParentRunFacet": "1-1-0",
    "NominalTimeRunFacet": "1-0-1",
    "ProcessingEngineRunFacet": "1-1-1",
    "LineageJobFacet": "1-0-0",
    "DocumentationDatasetFacet": "1-1-0",
    "DatasetTypeDatasetFacet": "1-0-0",
    "DataQualityMetricsInputDatasetFacet": "1-0-2",
}


def spec_facet(name: str, body: dict[str, Any]) -> dict[str, Any]:
    """A facet of the OpenLineage spec, as the Python client writes it."""
    version = _VERSIONS.get(name, "1-0-0")
    return {"_producer": CLIENT, "_schemaURL": _SPEC.format(version=version, name=name), **body}


def _provider_facet(name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"_producer": PRODUCER, "_schemaURL": _PROVIDER_SCHEMA.format(name=name), **body}


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class DagRun:
    """One scheduled run of a DAG: what every task event of it repeats."""

    dag_id: str
    run_id: str  # the OpenLineage run id (a UUID)
    logical_date: datetime
    started: datetime
    layer: str
    tasks: tuple[str, ...]

    @property
    def airflow_run_id(self) -> str:
        return f"scheduled__{self.logical_date.isoformat()}"

    def dag(self) -> dict[str, Any]:
        return {
            "dag_id": self.dag_id,
            "description": f"Daily {self.layer} load of the analytics warehouse",
            "fileloc": f"/opt/airflow/dags/warehouse/{self.layer}/{self.dag_id}.py",
            "owner": f"data-{self.layer}",
            "schedule_interval": "@daily",
            "start_date": "2026-01-01T00:00:00+00:00",
            "tags": str(["warehouse", self.layer, "openlineage"]),
            "timetable": {"summary": "@daily", "description": "At 00:00"},
            "max_active_runs": 1,
            "catchup": False,
        }

    def dag_run(self) -> dict[str, Any]:
        return {
            "conf": {},
            "dag_id": self.dag_id,
            "data_interval_start": self.logical_date.isoformat(),
            "data_interval_end": (self.logical_date + timedelta(days=1)).isoformat(),
            "external_trigger": False,
            "run_id": self.airflow_run_id,
            "run_type": "scheduled",
            "start_date": self.started.isoformat(),
        }


def processing_engine() -> dict[str, Any]:
    return spec_facet(
        "ProcessingEngineRunFacet",
        {
            "version": AIRFLOW_VERSION,
            "name": "Airflow",
            "openlineageAdapterVersion": PROVIDER_VERSION,
        },
    )


def nominal_time(logical_date: datetime) -> dict[str, Any]:
    return spec_facet(
        "NominalTimeRunFacet",
        {
            "nominalStartTime": iso(logical_date),
            "nominalEndTime": iso(logical_date + timedelta(days=1)),
        },
    )


def dag_run_facets(dag_run: DagRun, state: str | None) -> dict[str, Any]:
    """The run facets of a DAG run's own START (state None) or COMPLETE event."""
    facets: dict[str, Any] = {
        "airflowDagRun": _provider_facet(
            "AirflowDagRunFacet", {"dag": dag_run.dag(), "dagRun": dag_run.dag_run()}
        ),
        "nominalTime": nominal_time(dag_run.logical_date),
        "processing_engine": processing_engine(),
    }
    if state is not None:
        facets["airflowState"] = _provider_facet(
            "AirflowStateRunFacet",
            {"dagRunState": state, "tasksState": dict.fromkeys(dag_run.tasks, state)},
        )
    return facets


def task_run_facets(
    dag_run: DagRun, task_id: str, job_namespace: str, operator: str, *, try_number: int,
    queued: datetime, duration: float, task_uuid: str, upstream: list[str], downstream: list[str],
) -> dict[str, Any]:  # fmt: skip
    """The run facets of a task run: the `airflow` facet, engine, nominal time and parent."""
    module = "airflow.providers.common.sql.operators.sql"
    airflow = {
        "dag": dag_run.dag(),
        "dagRun": dag_run.dag_run(),
        "task": {
            "depends_on_past": False,
            "downstream_task_ids": str(downstream),
            "execution_timeout": "3600.0",
            "executor_config": {},
            "ignore_first_depends_on_past": True,
            "inlets": "[]",
            "mapped": False,
            "max_active_tis_per_dag": None,
            "multiple_outputs": False,
            "operator_class": operator,
            "operator_class_path": f"{module}.{operator}",
            "outlets": "[]",
            "owner": f"data-{dag_run.layer}",
            "priority_weight": 1,
            "queue": "default",
            "retries": 2,
            "retry_exponential_backoff": False,
            "run_as_user": None,
            "task_id": task_id,
            "trigger_rule": "all_success",
            "upstream_task_ids": str(upstream),
            "wait_for_downstream": False,
            "wait_for_past_depends_before_skipping": False,
            "weight_rule": "downstream",
            "conn_id": "warehouse" if dag_run.layer != "landing" else "app_db",
            "split_statements": True,
            "return_last": True,
            "email": ["data-platform@example.com"],
            "email_on_failure": True,
            "email_on_retry": False,
            "pool": "default_pool",
            "pool_slots": 1,
            "retry_delay": "300.0",
            "sla": None,
            "task_display_name": task_id,
            "template_ext": str([".sql", ".json"]),
            "template_fields": str(["sql", "parameters", "conn_id", "database", "hook_params"]),
        },
        "taskInstance": {
            "duration": duration,
            "map_index": -1,
            "pool": "default_pool",
            "try_number": try_number,
            "queued_dttm": queued.isoformat(),
            "log_url": (
                f"http://host:8080/dags/{dag_run.dag_id}/grid?dag_run_id="
                f"{dag_run.airflow_run_id}&task_id={task_id}&tab=logs"
            ),
        },
        "taskUuid": task_uuid,
    }
    parent_job = {"namespace": job_namespace, "name": dag_run.dag_id}
    return {
        "airflow": _provider_facet("AirflowRunFacet", airflow),
        "nominalTime": nominal_time(dag_run.logical_date),
        "processing_engine": processing_engine(),
        "parent": spec_facet(
            "ParentRunFacet",
            {
                "run": {"runId": dag_run.run_id},
                "job": parent_job,
                "root": {"run": {"runId": dag_run.run_id}, "job": parent_job},
            },
        ),
    }


def job_type(kind: str) -> dict[str, Any]:
    return spec_facet(
        "JobTypeJobFacet", {"processingType": "BATCH", "integration": "AIRFLOW", "jobType": kind}
    )


def ownership(layer: str) -> dict[str, Any]:
    return spec_facet(
        "OwnershipJobFacet",
        {"owners": [{"name": f"data-{layer}", "type": "MAINTAINER"},
                    {"name": "data-platform@example.com", "type": "EMAIL"}]},
    )  # fmt: skip


def documentation(text: str) -> dict[str, Any]:
    return spec_facet("DocumentationJobFacet", {"description": text})


def sql(statement: str) -> dict[str, Any]:
    return spec_facet("SQLJobFacet", {"query": statement, "dialect": "postgres"})


def schema(fields: list[tuple[str, str, str]]) -> dict[str, Any]:
    """The `schema` facet: typed fields with their descriptions."""
    return spec_facet(
        "SchemaDatasetFacet",
        {"fields": [{"name": n, "type": t, "description": d} for n, t, d in fields]},
    )


def data_source(namespace: str) -> dict[str, Any]:
    return spec_facet("DatasourceDatasetFacet", {"name": namespace, "uri": namespace})


def dataset_documentation(text: str) -> dict[str, Any]:
    return spec_facet("DocumentationDatasetFacet", {"description": text})


def dataset_type(kind: str) -> dict[str, Any]:
    return spec_facet("DatasetTypeDatasetFacet", {"datasetType": kind, "subType": ""})


def data_quality(rows: int, columns: list[str]) -> dict[str, Any]:
    """Column metrics of an input, as data-quality checks report them after a run."""
    return spec_facet(
        "DataQualityMetricsInputDatasetFacet",
        {
            "rowCount": rows,
            "bytes": rows * 198,
            "columnMetrics": {
                name: {"nullCount": rows // (7 + i), "distinctCount": rows // (2 + i),
                       "count": rows, "min": 0, "max": rows, "quantiles": {}}
                for i, name in enumerate(columns)
            },
        },
    )  # fmt: skip


def output_statistics(rows: int) -> dict[str, Any]:
    return spec_facet(
        "OutputStatisticsOutputDatasetFacet",
        {"rowCount": rows, "size": rows * 212, "fileCount": 1 + rows // 250_000},
    )


def input_statistics(rows: int) -> dict[str, Any]:
    return spec_facet(
        "InputStatisticsInputDatasetFacet",
        {"rowCount": rows, "size": rows * 198, "fileCount": 1 + rows // 250_000},
    )
