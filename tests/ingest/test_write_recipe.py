"""One write recipe for every way events are stored, and its locks listed where it is.

Posts (through the group commit), Kafka batches, the replays a late symlink causes and
`upstream db rebuild` all store events through `ingest.recipe.apply_recipe`; its docstring
lists every advisory lock a write transaction takes, so a new lock cannot be added unlisted.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.builders import ds, run_event
from upstream.ingest import recipe
from upstream.ingest.body import Limits
from upstream.ingest.rebuild import rebuild
from upstream.kafka.messages import ingest_messages
from upstream.store.engine import Store

SOURCE = Path(recipe.__file__).resolve().parents[1]


@pytest.fixture
def recipe_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of events of each run of the recipe's first step."""
    sizes: list[int] = []
    real = recipe.with_run_sql_lineage

    def counting(conn: Any, facts: Any, known: Any = None) -> Any:
        sizes.append(len(facts))
        return real(conn, facts, known)

    monkeypatch.setattr(recipe, "with_run_sql_lineage", counting)
    return sizes


def test_posts_kafka_and_rebuilds_run_the_one_recipe(
    client: TestClient, store: Store, recipe_runs: list[int]
) -> None:
    posted = run_event(("recipe", "post"), outputs=[ds("recipe", "a")])
    assert client.post("/api/v1/lineage", json=posted).status_code == 201
    assert recipe_runs == [1]
    message = json.dumps([run_event(("recipe", "kafka"), outputs=[ds("recipe", "b")])] * 2)
    limits = Limits(max_bytes=100_000, max_events=5, max_values=100_000)
    ingest_messages(store, [message.encode()], limits)
    assert recipe_runs == [1, 2]
    assert rebuild(store).events == 2
    assert recipe_runs == [1, 2, 2]  # both kept events, replayed in one transaction


def _lock_takers() -> set[str]:
    """`module.function` of every function in src that takes advisory transaction locks."""
    found: set[str] = set()
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(path.relative_to(SOURCE).with_suffix("").parts)
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "advisory_xact_locks"
                ):
                    found.add(f"{module}.{function.name}")
    return found


def test_the_recipe_lists_every_lock_a_write_takes() -> None:
    takers = _lock_takers()
    assert takers  # the search finds them
    doc = recipe.apply_recipe.__doc__ or ""
    assert {t for t in takers if f"`{t}`" not in doc} == set()
    locks = doc[doc.index("advisory locks") :]
    assert sorted(takers, key=lambda taker: locks.index(f"`{taker}`")) == [
        "ingest.sql_runs.with_run_sql_lineage",
        "store.aliases._record_claims",
        "store.aliases.canonical_batch",
        "store.writer.apply_facts",
        "store.flow_writer.rederive_flows",
        # Declarations are rows batches share: taken in the write's last step.
        "store.writer._declare",
    ]
    architecture = (SOURCE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "ingest.recipe.apply_recipe" in architecture
