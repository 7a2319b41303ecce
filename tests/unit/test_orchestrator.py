"""The instance file Garage writes for Dagster, and the schedule settings."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
import yaml

from garage.config import ConfigError, load_config
from garage.orchestrator import (
    STORAGE_SCHEME,
    instance_yaml,
    storage_of,
    with_database,
    write_instance_config,
)


def test_with_database_keeps_server_and_credentials() -> None:
    assert (
        with_database("postgresql://postgres@127.0.0.1:55432/postgres", "garage_dagster")
        == "postgresql://postgres@127.0.0.1:55432/garage_dagster"
    )
    # The embedded default speaks a Unix socket: the folder goes in the query string.
    assert (
        with_database("postgresql://postgres:@/postgres?host=/data/postgres", "garage_dagster")
        == "postgresql://postgres@/garage_dagster?host=%2Fdata%2Fpostgres"
    )
    # libpq's key=value form becomes a URI; a password is quoted, sslmode kept.
    assert (
        with_database(
            "host=db.local port=5433 user=me password=p@ss dbname=idx sslmode=require",
            "garage_dagster",
            scheme=STORAGE_SCHEME,
        )
        == "postgresql+psycopg2://me:p%40ss@db.local:5433/garage_dagster?sslmode=require"
    )


def test_instance_yaml_postgres_and_sqlite(tmp_path: Path) -> None:
    url = "postgresql+psycopg2://postgres@/garage_dagster?host=%2Fdata"
    postgres = yaml.safe_load(instance_yaml(url))
    assert postgres["storage"] == {"postgres": {"postgres_url": url}}
    assert postgres["telemetry"] == {"enabled": False}
    [limit] = postgres["run_queue"]["tag_concurrency_limits"]
    assert limit["key"] == "dagster/partition" and limit["limit"] == 1
    sqlite = yaml.safe_load(instance_yaml(None))
    assert "storage" not in sqlite and sqlite["telemetry"] == {"enabled": False}

    path = write_instance_config(tmp_path / "home", url)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it may hold a password
    assert storage_of(tmp_path / "home") == "postgres"
    write_instance_config(tmp_path / "home", None)
    assert storage_of(tmp_path / "home") == "sqlite"
    assert storage_of(tmp_path / "nowhere") == "sqlite"


def test_schedule_settings(tmp_path: Path) -> None:
    path = tmp_path / "garage.json"
    assert load_config(path, env={}).schedule.incremental_cron == "0 * * * *"
    path.write_text(json.dumps({"schedule": {"incremental_cron": "*/15 * * * *", "watch": False}}))
    settings = load_config(path, env={}).schedule
    assert settings.incremental_cron == "*/15 * * * *" and settings.watch is False
    path.write_text(json.dumps({"schedule": {"incremental_cron": "every hour"}}))
    with pytest.raises(ConfigError, match=r"schedule\.incremental_cron: .*not a cron"):
        load_config(path, env={})
    path.write_text(json.dumps({"schedule": {"watch_interval_seconds": 1}}))
    with pytest.raises(ConfigError, match=r"schedule\.watch_interval_seconds"):
        load_config(path, env={})


def test_sources_add_with_the_instance_storage_down(isolated_env: Path) -> None:
    from click.testing import CliRunner

    from garage.cli import cli

    # An instance moved to PostgreSQL by `garage up`, whose server is now stopped.
    home = isolated_env / "dagster"
    write_instance_config(home, f"{STORAGE_SCHEME}://postgres@127.0.0.1:1/garage_dagster")
    (isolated_env / "notes").mkdir()
    result = CliRunner().invoke(cli, ["sources", "add", "notes", str(isolated_env / "notes")])
    assert result.exit_code == 0, result.output
    assert "partition not registered" in result.output
    assert "does not answer" in result.output
    assert load_config(isolated_env / "garage.json", env={}).sources[0].name == "notes"
