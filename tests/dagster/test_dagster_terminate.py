"""A Dagster run terminated through the instance (the UI's Terminate) while it ingests a slow
source: the run worker gets DagsterExecutionInterruptedError mid-walk, and nothing may be
deleted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import dagster as dg
import httpx
import psycopg
from dagster_graphql import DagsterGraphQLClient
from psycopg import sql

from garage.config import load_config
from garage.owner_login import COOKIE
from tests.dagster.helpers import dagster_env
from tests.dagster.test_dagster_cli import _run
from tests.integration.ingest_helpers import PROSE, run_ingest
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
FILES = 2500


def write_notes(folder: Path, edition: str) -> None:
    folder.mkdir(exist_ok=True)
    for i in range(FILES):
        (folder / f"note{i:04d}.md").write_text(f"# Note {i}\n\n{PROSE}\n\n{edition} edition.\n")


def scalar(url: str, query: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(query).fetchone()
    return int(row[0]) if row else 0


def test_terminating_a_run_mid_walk_deletes_nothing(
    migrated_db: str, pg_server_url: str, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    write_notes(folder, "first")
    storage_db = f"garage_dagster_test_{uuid.uuid4().hex[:10]}"
    raw = {
        "sources": [{"name": "notes", "roots": [str(folder)]}],
        "database": {"dagster_database": storage_db},
        "schedule": {"enabled": False, "watch": False},
        # No guard to hide behind: only the walk's completeness protects the notes.
        "limits": {"deletion_guard_ratio": 1.0},
    }
    config_path = tmp_path / "garage.json"
    config_path.write_text(json.dumps(raw))
    config = load_config(config_path, env={})
    assert run_ingest(migrated_db, config, "notes").indexed == FILES
    write_notes(folder, "second")  # every note changed: the next run reads them all again

    home = tmp_path / "dagster"
    env = dagster_env(config_path, tmp_path / "data", home, migrated_db)
    garage = [sys.executable, "-m", "garage.cli"]
    port = free_port()
    try:
        started = json.loads(_run([*garage, "up", "--detach", "--port", str(port), "--json"], env))
        # The owner signs in once with the link `garage up` printed; the client sends the cookie.
        with httpx.Client(trust_env=False, timeout=30) as http:
            cookie = http.get(started["login"]).cookies[COOKIE]
        client = DagsterGraphQLClient(
            "127.0.0.1", port_number=port, headers={"Cookie": f"{COOKIE}={cookie}"}
        )
        run_id = client.submit_job_execution("ingest_job", tags={"dagster/partition": "notes"})
        deadline = time.monotonic() + 300
        while (
            scalar(migrated_db, "SELECT count(*) FROM documents WHERE content LIKE '%second%'") < 20
        ):
            assert time.monotonic() < deadline, _run_story(home, run_id)
            time.sleep(0.1)
        # What the UI's Terminate button does: the webserver's instance asks the run launcher,
        # which interrupts the run worker.
        client.terminate_run(run_id)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            while True:
                run = instance.get_run_by_id(run_id)
                assert run is not None
                if run.is_finished:
                    break
                assert time.monotonic() < deadline, run.status
                time.sleep(1)
            assert run.status == dg.DagsterRunStatus.CANCELED, run.status
        story = _run_story(home, run_id)
    finally:
        subprocess.run(
            [*garage, "down", "--json"], cwd=ROOT, env=env, capture_output=True, timeout=120
        )
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            conn.execute(drop.format(sql.Identifier(storage_db)))

    rewritten = scalar(migrated_db, "SELECT count(*) FROM documents WHERE content LIKE '%second%'")
    assert 20 <= rewritten < FILES, "the run was not stopped mid-walk"
    assert scalar(migrated_db, "SELECT count(*) FROM documents") == FILES
    with psycopg.connect(migrated_db) as conn:
        completed, deleted, reason = conn.execute(
            "SELECT completed, deleted_count, stop_reason FROM ingest_runs ORDER BY id DESC LIMIT 1"
        ).fetchone()  # type: ignore[misc]
    assert (completed, deleted) == (False, 0)
    assert reason == "run terminated in Dagster", story


def _run_story(home: Path, run_id: str) -> str:
    """The run's status and its last events, for a failure message."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        run = instance.get_run_by_id(run_id)
        events = instance.all_logs(run_id)[-25:]
    lines = [f"run {run_id}: {run.status if run else 'missing'}"]
    for event in events:
        lines.append(f"{event.dagster_event_type}: {event.message[:300]}")
        error = getattr(
            event.dagster_event and event.dagster_event.event_specific_data, "error", None
        )
        if error is not None:
            lines.append(error.to_string()[-1500:])
    return "\n".join(lines)
