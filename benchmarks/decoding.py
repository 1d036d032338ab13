"""Typed decoding: msgspec against pydantic, on the workload's own events, in the same run.

What is timed is what ingest validates: each event's envelope (`upstream.model.events`), and
the `schema` and `columnLineage` facets of its inputs and outputs, the interpreted facets
that are most of the facet bytes (`upstream.model.facets`), by Upstream's pydantic models
straight (`model_validate`, without the facet cache of `parse_facet`, so the two decoders do
the same work) and by msgspec structs of the same shape, from the parsed document (as ingest
has it) and, for the envelope, from the JSON bytes too (msgspec's own parser). The structs
check types only; Upstream's models also refuse blank names and normalise times, so msgspec's
figure is a lower bound of what it would cost doing the same. Times are CPU seconds of this
process (the machine is shared), with the garbage collector set as Upstream's processes set
it (`upstream.collector`): with Python's default, collections scanning the events held in
memory cost pydantic's many small objects far more than a server pays.
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from benchmarks.generator import read_events
from upstream.collector import tune_collector
from upstream.model.events import RunEvent
from upstream.model.facets import ColumnLineageFacet, SchemaFacet


class _Run(msgspec.Struct):
    runId: str
    facets: dict[str, Any] | None = None


class _Job(msgspec.Struct):
    namespace: str
    name: str
    facets: dict[str, Any] | None = None


class _Input(msgspec.Struct):
    namespace: str
    name: str
    facets: dict[str, Any] | None = None
    inputFacets: dict[str, Any] | None = None


class _Output(msgspec.Struct):
    namespace: str
    name: str
    facets: dict[str, Any] | None = None
    outputFacets: dict[str, Any] | None = None


class _RunEvent(msgspec.Struct):
    eventTime: str
    producer: str
    run: _Run
    job: _Job
    eventType: str | None = None
    schemaURL: str | None = None
    inputs: list[_Input] | None = None
    outputs: list[_Output] | None = None


class _Transformation(msgspec.Struct):
    type: str
    subtype: str | None = None
    description: str | None = None
    masking: bool | None = None


class _InputField(msgspec.Struct):
    namespace: str
    name: str
    field: str
    transformations: list[_Transformation] | None = None


class _ColumnField(msgspec.Struct):
    inputFields: list[_InputField] | None
    transformationDescription: str | None = None
    transformationType: str | None = None


class _ColumnLineage(msgspec.Struct):
    fields: dict[str, _ColumnField] | None
    dataset: list[_InputField] | None = None


class _SchemaField(msgspec.Struct):
    name: str
    type: str | None = None
    description: str | None = None
    fields: list[_SchemaField] | None = None


class _Schema(msgspec.Struct):
    fields: list[_SchemaField] | None = None


def run_decoding(data_dir: Path, events: int, repetitions: int) -> list[dict[str, Any]]:
    """Microseconds per event (envelope) or per facet, by each decoder, medians of the tries."""
    lines = list(itertools.islice(read_events(data_dir), events))
    raw = [line.encode() for line in lines]
    documents = [json.loads(line) for line in lines]
    runs = [d for d in documents if "run" in d]
    facets: dict[str, list[Any]] = {"schema": [], "columnLineage": []}
    for document in runs:
        for dataset in (document.get("inputs") or []) + (document.get("outputs") or []):
            for name, found in facets.items():
                if name in (dataset.get("facets") or {}):
                    found.append(dataset["facets"][name])
    pairs: list[tuple[str, int, Callable[[], object], Callable[[], object]]] = [
        (
            "envelope, from the document",
            len(runs),
            lambda: [RunEvent.model_validate(d) for d in runs],
            lambda: [msgspec.convert(d, _RunEvent) for d in runs],
        ),
        (
            "envelope, from JSON bytes",
            len(raw),
            lambda: [RunEvent.model_validate_json(b) for b in raw],
            lambda: [msgspec.json.decode(b, type=_RunEvent) for b in raw],
        ),
        (
            "schema facets",
            len(facets["schema"]),
            lambda: [SchemaFacet.model_validate(f) for f in facets["schema"]],
            lambda: [msgspec.convert(f, _Schema) for f in facets["schema"]],
        ),
        (
            "columnLineage facets",
            len(facets["columnLineage"]),
            lambda: [ColumnLineageFacet.model_validate(f) for f in facets["columnLineage"]],
            lambda: [msgspec.convert(f, _ColumnLineage) for f in facets["columnLineage"]],
        ),
    ]
    tune_collector()
    rows = []
    for name, count, pydantic_run, msgspec_run in pairs:
        if not count:
            continue
        pydantic_s = _median(pydantic_run, repetitions)
        msgspec_s = _median(msgspec_run, repetitions)
        rows.append(
            {
                "what": name,
                "count": count,
                "pydantic_us": round(1e6 * pydantic_s / count, 1),
                "msgspec_us": round(1e6 * msgspec_s / count, 1),
                "msgspec_speedup": round(pydantic_s / msgspec_s, 2),
            }
        )
    return rows


def _median(work: Callable[[], Iterable[object]], repetitions: int) -> float:
    times = []
    for _ in range(repetitions):
        started = time.process_time()
        work()
        times.append(time.process_time() - started)
    return statistics.median(times)
