"""The dataset lineage walk costs a constant number of statements per level, whatever the
width of the level (DESIGN §4.2, issue 3 item 6): never one per dataset or job."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.builders import BASE_TIME
from tests.test_dataset_lineage import DAY, NS, post, rid, run
from upstream.query.dataset_lineage import LineageParams, dataset_lineage
from upstream.store.engine import Store


def fan(client: TestClient, width: int, tag: str) -> None:
    """S -P- A_k -Q_k- B_k -R_k- C_k -Y- Z for k < width; each Q_k runs inside a workflow
    run."""
    events = [run(f"{tag}P", rid(), reads=[f"{tag}S"], writes=[f"{tag}A{k}" for k in range(width)])]
    for k in range(width):
        parent = ((NS, f"{tag}wf{k}"), rid())
        events.append(
            run(f"{tag}Q{k}", rid(), reads=[f"{tag}A{k}"], writes=[f"{tag}B{k}"], parent=parent)
        )
        events.append(run(f"{tag}R{k}", rid(), reads=[f"{tag}B{k}"], writes=[f"{tag}C{k}"]))
    events.append(
        run(f"{tag}Y", rid(), reads=[f"{tag}C{k}" for k in range(width)], writes=[f"{tag}Z"])
    )
    post(client, *events)


@pytest.fixture
def counted(db_url: str) -> Iterator[tuple[Store, list[str]]]:
    store = Store(db_url)
    statements: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    yield store, statements
    store.dispose()


OPTIONS: list[dict[str, Any]] = [
    {},
    {"direction": "downstream"},
    {"direction": "upstream"},
    {"direction": "upstream", "rollup": "workflow"},
    {"rollup": "workflow"},
    {"rollup": "workflow", "direction": "downstream"},
    {"collapse": frozenset({"run"})},
]


def test_statements_do_not_grow_with_width(
    client: TestClient, counted: tuple[Store, list[str]]
) -> None:
    store, statements = counted
    fan(client, 1, "narrow")
    fan(client, 25, "wide")
    for options in OPTIONS:
        params = LineageParams(
            start=BASE_TIME - DAY, end=BASE_TIME + DAY, **{"levels": 3, **options}
        )
        costs = {}
        sizes = {}
        for tag in ("narrow", "wide"):
            seed = f"{tag}Z" if options.get("direction") == "upstream" else f"{tag}S"
            statements.clear()
            body = dataset_lineage(store, NS, seed, params, max_nodes=5000)
            costs[tag] = len(statements)
            sizes[tag] = len(body["data"]) + len(body["programs"])
        assert costs["wide"] == costs["narrow"], options
        assert sizes["wide"] > sizes["narrow"], options
