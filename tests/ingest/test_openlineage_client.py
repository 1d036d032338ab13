"""The real openlineage-python client posts to a real `upstream serve` process, with and
without gzip, and the Lineage Job Facet built with the client's own classes is stored exactly."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import (
    DatasetEvent,
    InputDataset,
    Job,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
    StaticDataset,
)
from openlineage.client.generated import lineage, parent_run
from openlineage.client.transport.http import HttpCompression, HttpConfig, HttpTransport

from tests.conftest import LiveServer
from tests.readback import dataset_flows, edges, run_row
from upstream.store.engine import Store

W = "postgresql://warehouse"
PRODUCER = "https://github.com/upstream-lineage/upstream/tests"


def summaries_event(run_id: str) -> RunEvent:
    facet = lineage.LineageJobFacet(
        entries=[
            lineage.LineageDatasetEntry(
                namespace=W,
                name="analytics.customer_summary",
                type="DATASET",
                inputs=[
                    lineage.LineageDatasetInput(namespace=W, name="raw.customers", type="DATASET")
                ],
                fields={
                    "id": lineage.LineageFieldEntry(
                        inputs=[
                            lineage.LineageDatasetInput(
                                namespace=W,
                                name="raw.customers",
                                type="DATASET",
                                field="customer_id",
                                transformations=[
                                    lineage.LineageTransformation(type="DIRECT", subtype="IDENTITY")
                                ],
                            )
                        ]
                    )
                },
            ),
            lineage.LineageDatasetEntry(
                namespace=W,
                name="analytics.order_summary",
                type="DATASET",
                inputs=[
                    lineage.LineageDatasetInput(namespace=W, name="raw.orders", type="DATASET")
                ],
            ),
            lineage.LineageJobEntry(
                type="JOB",
                inputs=[
                    lineage.LineageJobInput(
                        type="JOB", namespace="airflow://prod", name="upstream.extract"
                    )
                ],
            ),
        ]
    )
    workflow = parent_run.ParentRunFacet(
        run=parent_run.Run(runId=str(uuid.uuid4())),
        job=parent_run.Job(namespace="airflow://prod", name="nightly"),
    )
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=run_id, facets={"parent": workflow}),
        job=Job(
            namespace="https://example.com/jobs", name="build_summaries", facets={"lineage": facet}
        ),
        producer=PRODUCER,
        inputs=[
            InputDataset(namespace=W, name="raw.customers"),
            InputDataset(namespace=W, name="raw.orders"),
        ],
        outputs=[
            OutputDataset(namespace=W, name="analytics.customer_summary"),
            OutputDataset(namespace=W, name="analytics.order_summary"),
        ],
    )


@pytest.mark.parametrize("compression", [None, HttpCompression.GZIP], ids=["plain", "gzip"])
def test_openlineage_client_posts_the_lineage_facet(
    live_server: LiveServer, store: Store, compression: HttpCompression | None
) -> None:
    transport = HttpTransport(HttpConfig(url=live_server.url, compression=compression))
    client = OpenLineageClient(transport=transport)
    run_id = str(uuid.uuid4())
    client.emit(summaries_event(run_id))
    dataset_edges = {
        (f"{W}/raw.customers", f"{W}/analytics.customer_summary"),
        (f"{W}/raw.orders", f"{W}/analytics.order_summary"),
    }
    assert dataset_flows(store) == dataset_edges
    assert edges(store) == dataset_edges | {
        (f"{W}/raw.customers#customer_id", f"{W}/analytics.customer_summary#id"),
        ("job:airflow://prod/upstream.extract", "job:https://example.com/jobs/build_summaries"),
    }
    assert run_row(store, run_id)["parent_run_id"] is not None


def test_openlineage_client_dataset_event(live_server: LiveServer, store: Store) -> None:
    client = OpenLineageClient(transport=HttpTransport(HttpConfig(url=live_server.url)))
    client.emit(
        DatasetEvent(
            eventTime=datetime.now(UTC).isoformat(),
            producer=PRODUCER,
            dataset=StaticDataset(
                namespace=W,
                name="ref.countries",
                facets={
                    "lineage": lineage.LineageDatasetFacet(
                        inputs=[
                            lineage.LineageDatasetInput(
                                namespace="s3://bucket", name="countries.csv", type="DATASET"
                            )
                        ]
                    )
                },
            ),
        )
    )
    assert edges(store) == {("s3://bucket/countries.csv", f"{W}/ref.countries")}
