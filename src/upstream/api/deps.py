"""Typed dependencies so handlers stay short: the store, the write path and the settings
of the app. They are coroutines, so resolving them never waits for a thread of the pool
that database work may have filled."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Request

from upstream.ingest.group_commit import GroupCommit
from upstream.settings import Settings
from upstream.store.engine import Store


async def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_group_commit(request: Request) -> GroupCommit:
    group_commit: GroupCommit = request.app.state.group_commit
    return group_commit


async def current_time() -> datetime:
    """Now, for answers relative to it (the dashboard's last day or week); tests override it."""
    return datetime.now(UTC)


StoreDep = Annotated[Store, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
GroupCommitDep = Annotated[GroupCommit, Depends(get_group_commit)]
NowDep = Annotated[datetime, Depends(current_time)]
