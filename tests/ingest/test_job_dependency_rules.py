"""The job-dependency rules without a database (`upstream.model.job_dependencies`): which
edges a `jobDependencies` facet states, and which of two statements of one edge counts."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime

from upstream.model.facets import JobDependenciesFacet
from upstream.model.identity import JobRef
from upstream.model.job_dependencies import dependencies_stated, latest_statement

RUN = uuid.UUID("6e9c2bb0-97d9-4d4f-9c0c-0579f072e013")
OTHER = uuid.UUID("a2ac0b8b-459c-44d0-b7d2-db6109ef5768")
JOB = JobRef("pipeline", "transform")
AT = datetime(2026, 11, 1, 12, tzinfo=UTC)


def test_upstream_entries_end_at_the_run_and_carry_its_trigger_rule() -> None:
    facet = JobDependenciesFacet.model_validate(
        {
            "upstream": [{"job": {"namespace": "pipeline", "name": "extract"}, "type": "X"}],
            "downstream": [
                {
                    "job": {"namespace": "pipeline", "name": "load"},
                    "run": {"runId": str(OTHER)},
                    "dependency_type": "DIRECT_INVOCATION",
                    "type": "ignored when dependency_type is given",
                }
            ],
            "trigger_rule": "ALL_SUCCESS",
        }
    )
    stated = dependencies_stated(facet, RUN, JOB, AT)
    up, down = sorted(stated, key=lambda f: f.upstream_job.name)
    assert (up.upstream_job, up.upstream_run, up.downstream_job, up.downstream_run) == (
        JobRef("pipeline", "extract"),
        None,
        JOB,
        RUN,
    )
    assert (up.dependency_type, up.trigger_rule) == ("X", "ALL_SUCCESS")
    assert (down.upstream_job, down.upstream_run, down.downstream_job, down.downstream_run) == (
        JOB,
        RUN,
        JobRef("pipeline", "load"),
        OTHER,
    )
    # The facet's trigger rule says how this run is triggered, not how it triggers others.
    assert (down.dependency_type, down.trigger_rule) == ("DIRECT_INVOCATION", None)


def test_an_entry_listed_twice_is_one_edge_and_the_run_itself_none() -> None:
    entry = {"job": {"namespace": "pipeline", "name": "extract"}}
    itself = {"job": {"namespace": "pipeline", "name": "transform"}, "run": {"runId": str(RUN)}}
    facet = JobDependenciesFacet.model_validate({"upstream": [entry, entry, itself]})
    assert len(dependencies_stated(facet, RUN, JOB, AT)) == 1


def test_null_lists_state_nothing() -> None:
    facet = JobDependenciesFacet.model_validate({"upstream": None, "downstream": None})
    assert dependencies_stated(facet, RUN, JOB, AT) == []


def test_the_latest_statement_counts_in_every_order() -> None:
    def row(hour: int, kind: str | None) -> dict[str, object]:
        return {
            "stated_at": AT.replace(hour=hour),
            "dependency_type": kind,
            "sequence_trigger_rule": None,
            "status_trigger_rule": None,
            "trigger_rule": None,
        }

    rows = [row(12, "A"), row(14, None), row(14, "B"), row(13, "C")]
    for order in itertools.permutations(rows):
        winner = order[0]
        for other in order[1:]:
            winner = latest_statement(winner, other)
        # 14:00 is the latest; of its two statements the larger details ("B" > "") count.
        assert winner is rows[2]
