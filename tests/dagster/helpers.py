"""What the Dagster tests that run `garage` and `dagster` in subprocesses share: the
environment such a process runs in, and one `dagster asset materialize`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def dagster_env(
    config: Path, data: Path, home: Path, database_url: str | None = None
) -> dict[str, str]:
    """The test's config, data folder and DAGSTER_HOME (and database, when one is named), so a
    process never reads the machine's own."""
    env = dict(os.environ, GARAGE_CONFIG=str(config), GARAGE_DATA_DIR=str(data))
    if database_url is not None:
        env["GARAGE_DATABASE_URL"] = database_url
    env["DAGSTER_HOME"] = str(home)
    return env


def one_source_env(
    tmp_path: Path, raw: dict[str, Any], name: str, folder: Path, database_url: str
) -> tuple[dict[str, str], Path]:
    """``raw`` as the config of one source ``name`` over ``folder``, with no schedule and no
    file watch (every run is the test's own), and a new DAGSTER_HOME: the environment, and
    that home."""
    raw = raw | {
        "sources": [{"name": name, "roots": [str(folder)]}],
        "schedule": {"enabled": False, "watch": False},
    }
    path = tmp_path / "garage.json"
    path.write_text(json.dumps(raw))
    home = tmp_path / "dagster"
    home.mkdir()
    return dagster_env(path, tmp_path / "data", home, database_url), home


def materialize(env: dict[str, str], *arguments: str) -> None:
    """`dagster asset materialize` on Garage's definitions; fails the test when it fails."""
    result = subprocess.run(
        [sys.executable, "-m", "dagster", "asset", "materialize", "-m",
         "garage_assets.definitions", *arguments],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
