"""`rollup=jobs` (design §4.2): dataset lineage with the temporary datasets left out and
the jobs on either side of each one linked directly, job → job.

OpenLineage marks data that one job only hands to the next (`datasetType` JOB_OUTPUT, or a
TEMPORARY subtype) and says consumers may choose not to show it. Composed from the
dataset-lineage answer rather than walked again, so it follows the same walk, window, caps
and collapse: the answer without a rollup, minus every temporary dataset other than the one
asked about (with its relations), plus `jobLinks`: for each temporary dataset, each program
that wrote it → each other program that read it, naming the datasets it went through.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Iterable

from sqlalchemy.engine import Connection

from upstream.model.identity import DatasetRef
from upstream.query.answers import JobLinkThrough, LineageAnswer
from upstream.query.graph_index.index import graph_of
from upstream.query.workflows import marked_temporary


def through_temporaries(
    conn: Connection, answer: LineageAnswer, keep: Collection[str]
) -> LineageAnswer:
    """`answer` (lineage without a rollup) with its temporary datasets, other than those
    keyed in `keep` (the dataset asked about), replaced by job → job links, added to the links
    it may already carry. A dataset is temporary here when the answer already says so
    (temporary to a workflow run, design §3.4) or when a producer marked it temporary in any
    run (`datasetType`, the recorder's `temporary=True`)."""
    hidden = _temporary_keys(conn, answer) - set(keep)
    writers: dict[str, set[str]] = defaultdict(set)
    readers: dict[str, set[str]] = defaultdict(set)
    for relation in answer["relations"]:
        if relation["data"] in hidden:
            if "write" in relation["accesses"]:
                writers[relation["data"]].add(relation["program"])
            if "read" in relation["accesses"]:
                readers[relation["data"]].add(relation["program"])
    found: list[JobLinkThrough] = list(answer.get("jobLinks", []))
    for data in hidden:
        for source in writers[data]:
            found.extend(
                {"source": source, "target": target, "through": [data]}
                for target in readers[data] - {source}
            )
    links = merged_links(found)
    relations = [r for r in answer["relations"] if r["data"] not in hidden]
    linked = {r["program"] for r in relations}
    linked.update(end for link in links for end in (link["source"], link["target"]))
    return {
        **answer,
        "relations": relations,
        "data": {key: entry for key, entry in answer["data"].items() if key not in hidden},
        "programs": {key: p for key, p in answer["programs"].items() if key in linked},
        "jobLinks": links,
    }


def merged_links(links: Iterable[JobLinkThrough]) -> list[JobLinkThrough]:
    """One link per (source, target), naming every dataset between them; sorted."""
    through: dict[tuple[str, str], set[str]] = defaultdict(set)
    for link in links:
        through[(link["source"], link["target"])].update(link["through"])
    return [
        {"source": source, "target": target, "through": sorted(datasets)}
        for (source, target), datasets in sorted(through.items())
    ]


def _temporary_keys(conn: Connection, answer: LineageAnswer) -> set[str]:
    flagged = {key for key, entry in answer["data"].items() if entry.get("temporary")}
    by_id: dict[uuid.UUID, str] = {
        DatasetRef(entry["entityId"]["namespace"], entry["entityId"]["name"]).id: key
        for key, entry in answer["data"].items()
    }
    marked = {by_id[dataset] for dataset in marked_temporary(graph_of(conn), by_id)}
    return flagged | marked
