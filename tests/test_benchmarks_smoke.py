"""The benchmark suite at its tiny size, end to end, so it keeps working: the generator, an
ingest benchmark through a live server into SQLite (with its ceiling), and exactness 1.0.
No timing is asserted; the numbers belong to `python -m benchmarks`."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.__main__ import app
from benchmarks.generator import SIZES, generate, load_truth
from benchmarks.ingest import run_ingest
from typer.testing import CliRunner


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "tiny"
    generate(SIZES["tiny"], 7, out)
    return out


def test_generator_is_deterministic(tiny: Path, tmp_path: Path) -> None:
    again = tmp_path / "tiny"
    generate(SIZES["tiny"], 7, again)
    assert (again / "events.ndjson").read_bytes() == (tiny / "events.ndjson").read_bytes()
    assert (again / "truth.json").read_bytes() == (tiny / "truth.json").read_bytes()
    other = tmp_path / "other"
    generate(SIZES["tiny"], 8, other)
    assert (other / "events.ndjson").read_bytes() != (tiny / "events.ndjson").read_bytes()


def test_generator_truth_follows_the_plan(tiny: Path) -> None:
    workload = generate(SIZES["tiny"], 7, tiny.parent / "again")
    truth = load_truth(tiny)
    assert truth["events"] == workload.events
    # Every run is a START and a COMPLETE: two events per task run and per workflow run.
    runs = {row[3] for row in truth["accesses"]}
    days = SIZES["tiny"].days
    assert len(runs) == days * len(workload.jobs)
    assert workload.events == 2 * days * (len(workload.jobs) + len(workload.workflows))
    edges = truth["dataset_edges"]
    for job in workload.jobs:
        mine = {(e[0], e[1], e[2], e[3]) for e in edges if e[4] == job.name}
        plain_names = {(d.namespace, d.name) for d in job.inputs if not d.temporary}
        if job.style == "plain" and not any(d.temporary for d in job.inputs + job.outputs):
            # No column lineage and no lineage facet: every input flows into every output.
            expected = {(*i, o.namespace, o.name) for i in plain_names for o in job.outputs}
            assert mine == expected
        if job.style == "facet":
            # The last input is a lookup no lineage entry names: it flows nowhere.
            lookup = job.inputs[-1]
            if len(job.inputs) > 1 and not lookup.temporary:
                assert all((e[0], e[1]) != (lookup.namespace, lookup.name) for e in mine)


def test_ingest_benchmark_on_sqlite_is_exact(tiny: Path, tmp_path: Path) -> None:
    result = run_ingest("http-batch", "sqlite", tiny, tmp_path, batch=100)
    assert result.events == load_truth(tiny)["events"]
    assert result.seconds > 0
    assert result.ceiling_seconds > 0
    assert [(e["name"], e["precision"], e["recall"]) for e in result.exactness] == [
        ("dataset edges", 1.0, 1.0),
        ("field edges", 1.0, 1.0),
    ]


def test_help_lists_what_it_runs() -> None:
    result = CliRunner().invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("generate", "ingest", "queries", "exactness", "growth"):
        assert command in result.output
