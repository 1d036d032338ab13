"""The read replica settings: read_database_url, max_replica_lag, replica_lag_fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from upstream.settings import SettingsError, load_settings

PRIMARY = "postgresql://postgres@primary:5432/lineage"


def test_replicas_come_comma_separated_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("UPSTREAM_DB_URL", PRIMARY)
    monkeypatch.setenv(
        "UPSTREAM_READ_DATABASE_URL",
        "postgresql://postgres@replica-a:5432/lineage, postgresql://postgres@replica-b/lineage",
    )
    settings = load_settings()
    assert settings.read_database_url == (
        "postgresql+psycopg://postgres@replica-a:5432/lineage",
        "postgresql+psycopg://postgres@replica-b/lineage",
    )
    assert (settings.max_replica_lag, settings.replica_lag_fallback) == (10.0, "primary")


def test_replicas_come_as_a_list_from_the_config_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "upstream.toml"
    config.write_text(
        f'db_url = "{PRIMARY}"\nread_database_url = ["postgresql://postgres@replica/lineage"]\n'
        'replica_lag_fallback = "unavailable"\nmax_replica_lag = 2.5\n'
    )
    monkeypatch.setenv("UPSTREAM_CONFIG", str(config))
    settings = load_settings()
    assert settings.read_database_url == ("postgresql+psycopg://postgres@replica/lineage",)
    assert (settings.max_replica_lag, settings.replica_lag_fallback) == (2.5, "unavailable")


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            {"db_url": PRIMARY, "read_database_url": "./replica.db"},
            "UPSTREAM_READ_DATABASE_URL: a read replica is a PostgreSQL database",
        ),
        (
            {"db_url": PRIMARY, "read_database_url": "mysql://host/lineage"},
            "UPSTREAM_READ_DATABASE_URL: .*not a database Upstream runs on",
        ),
        (
            {"db_url": "./upstream.db", "read_database_url": "postgresql://host/lineage"},
            "UPSTREAM_READ_DATABASE_URL needs UPSTREAM_DB_URL to be the PostgreSQL primary",
        ),
        ({"max_replica_lag": "0"}, "UPSTREAM_MAX_REPLICA_LAG"),
        ({"replica_lag_fallback": "wait"}, "UPSTREAM_REPLICA_LAG_FALLBACK"),
    ],
)
def test_bad_replica_settings_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, str], named: str
) -> None:
    for name, value in given.items():
        monkeypatch.setenv(f"UPSTREAM_{name.upper()}", value)
    with pytest.raises(SettingsError, match=named):
        load_settings()
