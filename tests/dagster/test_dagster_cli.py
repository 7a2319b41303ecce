"""The whole orchestrator as a person runs it: `garage up` on a Postgres-backed instance, a
backfill over every source and a one-partition materialization through the `dagster` CLI,
then `garage down`. Everything in subprocesses, on loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import psycopg
from psycopg import sql

from garage_assets.commands import group_members
from tests.dagster.helpers import dagster_env
from tests.integration.ingest_helpers import write_markdown
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = ["-m", "garage_assets.definitions"]


def _run(args: list[str], env: dict[str, str], timeout: float = 300) -> str:
    result = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _wait_for_runs(home: Path, count: int, timeout: float = 300) -> list[dg.DagsterRun]:
    deadline = time.monotonic() + timeout
    with dg.DagsterInstance.from_config(str(home)) as instance:
        while True:
            runs = instance.get_runs(filters=dg.RunsFilter(job_name="ingest_job"))
            finished = [r for r in runs if r.is_finished]
            if len(finished) >= count or time.monotonic() > deadline:
                return finished
            time.sleep(2)


def test_up_backfill_materialize_down(migrated_db: str, pg_server_url: str, tmp_path: Path) -> None:
    sources = []
    for name in ("notes", "journal"):
        folder = tmp_path / name
        folder.mkdir()
        write_markdown(folder / "a.md", f"A note in {name}")
        write_markdown(folder / "b.md", f"Another note in {name}")
        sources.append({"name": name, "roots": [str(folder)]})
    storage_db = f"garage_dagster_test_{uuid.uuid4().hex[:10]}"
    config = tmp_path / "garage.json"
    # No file-change sensor and no schedule here, so every run below is the CLI's own.
    config.write_text(
        json.dumps(
            {
                "sources": sources,
                "database": {"dagster_database": storage_db},
                "schedule": {"enabled": False, "watch": False},
            }
        )
    )
    home = tmp_path / "dagster"
    env = dagster_env(config, tmp_path / "data", home, migrated_db)
    garage = [sys.executable, "-m", "garage.cli"]
    port = free_port()
    up: dict[str, object] = {}
    try:
        up = json.loads(_run([*garage, "up", "--detach", "--port", str(port), "--json"], env))
        assert up["storage"] == "postgres" and up["url"] == f"http://127.0.0.1:{port}"
        assert f"/{storage_db}" in (home / "dagster.yaml").read_text()
        with dg.DagsterInstance.from_config(str(home)) as instance:
            # `garage up` registered every configured source.
            assert sorted(instance.get_dynamic_partitions("sources")) == ["journal", "notes"]

        # A backfill over every source, queued for the daemon `garage up` started.
        _run(
            [sys.executable, "-m", "dagster", "job", "backfill", *DEFINITIONS,
             "-j", "ingest_job", "--all", "all", "--noprompt"],
            env,
        )  # fmt: skip
        runs = _wait_for_runs(home, 2)
        assert sorted(r.tags["dagster/partition"] for r in runs) == ["journal", "notes"]
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), runs

        # One partition, in process, after an edit: only that file is read again.
        edited = tmp_path / "notes" / "b.md"
        edited.write_text(edited.read_text() + "\nEdited later.\n")
        _run(
            [sys.executable, "-m", "dagster", "asset", "materialize", *DEFINITIONS,
             "--select", "documents,chunks", "--partition", "notes"],
            env,
        )  # fmt: skip
        with dg.DagsterInstance.from_config(str(home)) as instance:
            event = instance.get_latest_materialization_event(dg.AssetKey("documents"))
            assert event is not None and event.asset_materialization is not None
            metadata = {k: v.value for k, v in event.asset_materialization.metadata.items()}
            assert event.asset_materialization.partition == "notes"
            assert (metadata["indexed"], metadata["stat_skipped"]) == (1, 1)
        with psycopg.connect(migrated_db) as conn:
            assert conn.execute("SELECT count(*) FROM documents").fetchone() == (4,)
    finally:
        down = subprocess.run(
            [*garage, "down", "--json"], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(storage_db)
                )
            )
    assert json.loads(down.stdout)["stopped"] is True
    # Nothing of the session `garage up` started is left: webserver, daemon, code servers.
    assert group_members(int(up["pid"])) == []  # type: ignore[call-overload]
