"""The collector setting of long-running processes (`upstream.collector`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from upstream.collector import MIDDLE_THRESHOLD, YOUNG_THRESHOLD, tune_collector


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
