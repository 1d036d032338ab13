"""The estate as a map (design §4.7, `rollup=hierarchy&level=N`): datasets grouped by their
level-N container, with how many datasets each group holds and how many data flows run
between groups — the first view of a warehouse of thousands of tables, drilled down one group
at a time (`within`).

Built on the whole-graph service (`upstream.query.whole_graph.lineage_graph`), uncapped: a
group's counts are only right when every dataset is counted; the answer itself is one entry
per group, so it stays small.
"""

from __future__ import annotations

from collections import Counter

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from upstream.model.access import EVERYTHING, Visibility
from upstream.model.errors import InvalidParameter
from upstream.model.hierarchy import containers, group_key, group_of
from upstream.model.keys import entity_key
from upstream.model.window import Window
from upstream.query.answers import HierarchyMapAnswer, MapEdge, MapGroup
from upstream.query.whole_graph import lineage_graph
from upstream.store import schema as t
from upstream.store.deletion import visible


def hierarchy_map(
    conn: Connection,
    level: int,
    within: tuple[str, ...] = (),
    window: Window | None = None,
    visibility: Visibility = EVERYTHING,
) -> HierarchyMapAnswer:
    """Groups at `level` (1: namespaces) of the datasets inside the container `within` (all
    when empty), and the flows between groups. InvalidParameter (400, `level`) for a level
    not below `within`, or deeper than the deepest container of those datasets. With a
    `visibility` that does not show everything, the map of the graph that visibility
    shows, with its hidden counts (`upstream.query.whole_graph.lineage_graph`)."""
    if level < 1:
        raise InvalidParameter.at("level", f"must be at least 1, not {level}")
    if within and level <= len(within):
        raise InvalidParameter.at(
            "level", f"must be deeper than the {len(within)} levels of `within`, not {level}"
        )
    graph = lineage_graph(conn, None, window, visibility)
    paths = {key: path for key, path in _paths(conn).items() if key in graph["data"]}
    inside = {key: path for key, path in paths.items() if path[: len(within)] == within}
    depth = max((len(path) for path in inside.values()), default=0)
    if level > depth:
        where = f" inside {group_key(within)!r}" if within else ""
        raise InvalidParameter.at(
            "level", f"the deepest container level{where} is {depth}; {level} is beyond it"
        )
    group = {key: group_of(path, level) for key, path in inside.items()}
    sizes = Counter(group.values())
    deeper = {g for key, g in group.items() if len(inside[key]) > len(g)}
    between: Counter[tuple[tuple[str, ...], tuple[str, ...]]] = Counter()
    inner: Counter[tuple[str, ...]] = Counter()
    for source, target in {(f["source"], f["target"]) for f in graph["flows"]}:
        if source in group and target in group:
            if group[source] == group[target]:
                inner[group[source]] += 1
            else:
                between[(group[source], group[target])] += 1
    groups: list[MapGroup] = [
        {
            "key": group_key(path),
            "containers": list(path),
            "datasets": sizes[path],
            "flowsWithin": inner[path],
            "deeper": path in deeper,
        }
        for path in sorted(sizes)
    ]
    edges: list[MapEdge] = [
        {"source": group_key(s), "target": group_key(t_), "flows": n}
        for (s, t_), n in sorted(between.items())
    ]
    answer: HierarchyMapAnswer = {
        "level": level,
        "within": list(within),
        "depth": depth,
        "groups": groups,
        "edges": edges,
    }
    if "hiddenNodes" in graph:
        answer["hiddenNodes"] = graph["hiddenNodes"]
        answer["hiddenRelations"] = graph["hiddenRelations"]
    return answer


def _paths(conn: Connection) -> dict[str, tuple[str, ...]]:
    """Every visible dataset's containers, by its answer key."""
    d = t.datasets.c
    query = sa.select(d.namespace, d.name, d.facets).where(visible(t.datasets))
    return {
        entity_key("dataset", row.namespace, row.name): containers(
            row.namespace, row.name, row.facets or {}
        )
        for row in conn.execute(query)
    }
