"""`include=owners` (design §3.3): the owners producers name in `ownership` facets, added to
each dataset and program of a lineage answer. Read from the facets the datasets and jobs keep,
two statements per chunk of ids, whatever the answer's size."""

from __future__ import annotations

import uuid
from collections.abc import Collection

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef, JobRef
from upstream.model.ownership import OWNERSHIP_FACET, owners_of
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
    """The owners of the datasets or jobs (`table`) with `ids`, from their `ownership` facet.
    The database hands over that facet alone: a whole row's facets (schemas, documentation,
    SQL) were most of an impact report's time, read and parsed for one small document."""
    found: dict[uuid.UUID, list[OwnerEntry]] = {}
    ownership = table.c.facets[OWNERSHIP_FACET]
    for matches in id_filters(conn, table.c.id, ids):
        query = sa.select(table.c.id, ownership.label("ownership")).where(matches)
        for row in conn.execute(query):
            owners = owners_of({OWNERSHIP_FACET: row.ownership})
            if owners:
                found[row.id] = [{"name": str(o["name"]), "type": o["type"]} for o in owners]
    return found
