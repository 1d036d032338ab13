"""Field and dataset edges as readers see them: each stored set's edges once per link to it.

Edges are stored once per distinct lineage set and linked to each owner that stated them
(`upstream.model.lineage_sets`); every reader reads them through the links, so a set no link
uses any more is never part of an answer. The rows have the columns `schema.EDGE_COLUMNS`
names, with the owner's scope, run and job beside each edge, and the owner's id: a run's
edges are found by it (the owner of a run's link is the run, which the link does not store
again: `schema.owned_run`).
An edge's transformations are kept once per distinct value (`edge_transformations`).
"""

from __future__ import annotations

import sqlalchemy as sa

from upstream.store import schema as t


def _edges() -> sa.Subquery:
    link, edge, kept = t.lineage_links, t.lineage_set_edges, t.edge_transformations
    columns = [
        link.c.scope,
        t.owned_run(link).label("run_id"),
        link.c.job_id,
        *(edge.c[name] for name in t.EDGE_COLUMNS[3:-1]),
        kept.c.transformations,
        link.c.owner_id,
    ]
    joined = (
        sa.select(*columns)
        .join_from(edge, link, link.c.set_id == edge.c.set_id)
        .join(kept, kept.c.id == edge.c.transformations_id)
    )
    return joined.subquery("edges")


#: Made once: building the subquery's column collection costs more than using it.
EDGES = _edges()
