"""Settings come from UPSTREAM_* variables and a TOML file; bad values name the setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from upstream.settings import DEFAULT_DB_URL, SettingsError, load_settings


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPSTREAM_DB_URL", raising=False)
    monkeypatch.delenv("UPSTREAM_CONFIG", raising=False)
    settings = load_settings()
    assert settings.db_url == DEFAULT_DB_URL == "sqlite:///./upstream.db"
    assert settings.port == 5000


def test_environment_beats_file_and_overrides_beat_both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "upstream.toml"
    config.write_text('db_url = "sqlite:///from-file.db"\nport = 7000\nmax_levels = 5\n')
    monkeypatch.setenv("UPSTREAM_CONFIG", str(config))
    monkeypatch.setenv("UPSTREAM_PORT", "8000")
    settings = load_settings(max_levels=9)
    assert (settings.db_url, settings.port, settings.max_levels) == (
        "sqlite:///from-file.db",
        8000,
        9,
    )


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("UPSTREAM_PORT", "abc", "UPSTREAM_PORT"),
        ("UPSTREAM_MAX_LEVELS", "0", "UPSTREAM_MAX_LEVELS"),
        ("UPSTREAM_WORKERS", "-1", "UPSTREAM_WORKERS"),
    ],
)
def test_invalid_values_name_the_setting(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, named: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=named):
        load_settings()


def test_missing_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UPSTREAM_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(SettingsError, match="UPSTREAM_CONFIG"):
        load_settings()


def test_kafka_options_come_from_a_toml_table_or_json(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "upstream.toml"
    config.write_text('[kafka_options]\n"security.protocol" = "SSL"\n')
    monkeypatch.setenv("UPSTREAM_CONFIG", str(config))
    assert load_settings().kafka_options == {"security.protocol": "SSL"}
    monkeypatch.setenv("UPSTREAM_KAFKA_OPTIONS", '{"sasl.mechanism": "PLAIN"}')
    # The environment adds to (and overrides within) the file's table.
    assert load_settings().kafka_options == {"security.protocol": "SSL", "sasl.mechanism": "PLAIN"}


def test_kafka_consumers_need_brokers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPSTREAM_KAFKA_CONSUMERS", "2")
    with pytest.raises(SettingsError) as refused:
        load_settings()
    assert str(refused.value) == (
        "invalid setting: UPSTREAM_KAFKA_CONSUMERS needs UPSTREAM_KAFKA_BOOTSTRAP_SERVERS, "
        "the Kafka brokers to read from"
    )
    settings = load_settings(kafka_bootstrap_servers="kafka:9092")
    assert (settings.kafka_consumers, settings.kafka_topic, settings.kafka_group) == (
        2,
        "openlineage",
        "upstream",
    )
