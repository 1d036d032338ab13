"""`include=owners` (design §3.3): the owners producers name in `ownership` facets, added to
each dataset and program of a lineage answer. Read from the facets the datasets and jobs keep,
two statements per chunk of ids, whatever the answer's size."""

from __future__ import annotations

import uuid
from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef, JobRef
from upstream.model.ownership import owners_of
from upstream.query.answers import DataEntry, LineageAnswer, OwnerEntry, ProgramEntry
from upstream.store import schema as t
from upstream.store.dialect import id_filters


def with_owners(conn: Connection, answer: LineageAnswer) -> LineageAnswer:
    """`answer` with `owners` (possibly empty) on every entry of `data` and `programs`; a
    workflow's owners are its job's."""
    datasets = {
        DatasetRef(e["entityId"]["namespace"], e["entityId"]["name"]).id: key
        for key, e in answer["data"].items()
    }
    jobs = {
        JobRef(e["entityId"]["namespace"], e["entityId"]["name"]).id: key
        for key, e in answer["programs"].items()
    }
    dataset_owners = owners_by_id(conn, t.datasets, datasets)
    job_owners = owners_by_id(conn, t.jobs, jobs)
    data: dict[str, DataEntry] = {}
    for id_, key in datasets.items():
        data[key] = {**answer["data"][key], "owners": dataset_owners.get(id_, [])}
    programs: dict[str, ProgramEntry] = {}
    for id_, key in jobs.items():
        programs[key] = {**answer["programs"][key], "owners": job_owners.get(id_, [])}
    return {
        **answer,
        "data": dict(sorted(data.items())),
        "programs": dict(sorted(programs.items())),
    }


def owners_by_id(
    conn: Connection, table: sa.Table, ids: Collection[uuid.UUID]
) -> dict[uuid.UUID, list[OwnerEntry]]:
    """The owners of the datasets or jobs (`table`) with `ids`, from their `ownership` facet."""
    found: dict[uuid.UUID, list[OwnerEntry]] = {}
    for matches in id_filters(conn, table.c.id, ids):
        for row in conn.execute(sa.select(table.c.id, table.c.facets).where(matches)):
            owners = owners_of(row.facets or {})
            if owners:
                found[row.id] = [{"name": str(o["name"]), "type": o["type"]} for o in owners]
    return found
