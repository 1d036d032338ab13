"""The collector setting of long-running processes (`upstream.collector`)."""

from __future__ import annotations

import gc
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from upstream import collector
from upstream.api.app import create_app
from upstream.collector import MIDDLE_THRESHOLD, YOUNG_THRESHOLD, tune_collector
from upstream.settings import Settings


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_collector")
def test_the_young_and_middle_generations_are_collected_less_often_and_start_up_is_frozen() -> None:
    old = gc.get_threshold()[2]
    tune_collector()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, MIDDLE_THRESHOLD, old)
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


@pytest.mark.usefixtures("restored_collector")
def test_only_the_first_app_of_a_process_collects_and_freezes(
    tmp_path: Path, sqlite_template: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(collector, "_app_started", threading.Event())  # a new process
    collections: list[int] = []
    collect = gc.collect

    def counted(generation: int = 2) -> int:
        collections.append(generation)
        return collect(generation)

    monkeypatch.setattr(gc, "collect", counted)
    path = tmp_path / "upstream.db"
    shutil.copy(sqlite_template, path)
    settings = Settings(db_url=f"sqlite:///{path}")
    with TestClient(create_app(settings, migrate=False)):
        assert collections == [2]
    with TestClient(create_app(settings, migrate=False)):
        assert collections == [2]
