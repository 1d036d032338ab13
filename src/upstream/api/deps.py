"""Typed dependencies so handlers stay short: the store and the settings of the app."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from upstream.settings import Settings
from upstream.store.engine import Store


def get_store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


StoreDep = Annotated[Store, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
