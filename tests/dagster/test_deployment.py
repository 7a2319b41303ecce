"""deploy/: the instance and workspace for more than one machine, run as they are written.

deploy/dagster.yaml is the very file in DAGSTER_HOME, its values from the environment, against
a database of its own on the test server; deploy/workspace.yaml names a code server the test
starts (`dagster api grpc`, as on the machine that runs the runs), and the daemon is Dagster's
own (`dagster-daemon run`). Everything is a separate process, as on separate machines; only the
machine is the same.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import psycopg
import pytest
import yaml
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from garage.locks import holder_of, writing
from garage.orchestrator import instance_yaml
from garage_assets.partitions import register_source
from tests.material import material
from tests.servers import free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
EXIT_BUSY = 75  # `garage ingest --no-wait` behind another writer (README, Ingest)
SMALL = ("python", "django", "git")  # three small folders of real text
LARGE = "manuals"  # Git's 292 manuals: a run long enough to be caught holding its source


def _folders(tmp_path: Path) -> dict[str, Path]:
    """Four real text files in each small folder, copied; the manuals where they are."""
    python = material("python3.11-doc") / "usr/share/doc/python3.11-doc/html/_sources/tutorial"
    django = material("django") / "docs/intro"
    git = material("git-doc") / "usr/share/doc/git-doc"
    picked = {
        "python": sorted(python.glob("*.rst.txt"))[:4],
        "django": sorted(django.glob("tutorial0*.txt"))[:4],
        "git": sorted((git / "howto").glob("*.txt"))[:4],
    }
    folders: dict[str, Path] = {}
    for name, files in picked.items():
        assert len(files) == 4, f"{name}: {files}"
        folders[name] = tmp_path / name
        folders[name].mkdir()
        for file in files:
            shutil.copy(file, folders[name] / file.name)
    folders[LARGE] = git
    return folders


@pytest.fixture
def storage_db(pg_server_url: str) -> Iterator[str]:
    """The Dagster storage database the deployment's DAGSTER_PG_DB names, dropped afterwards."""
    name = f"garage_dagster_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_server_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield name
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _storage_env(server_url: str, database: str) -> dict[str, str]:
    """deploy/dagster.yaml's variables for ``database`` on the server ``server_url`` names. The
    test server's password is in a passfile: the password stays empty and libpq reads it."""
    params = conninfo_to_dict(server_url)
    env = {
        "DAGSTER_PG_HOST": str(params.get("host") or "127.0.0.1"),
        "DAGSTER_PG_PORT": str(params.get("port") or 5432),
        "DAGSTER_PG_USER": str(params.get("user") or "postgres"),
        "DAGSTER_PG_PASSWORD": str(params.get("password") or ""),
        "DAGSTER_PG_DB": database,
        "DAGSTER_MAX_CONCURRENT_RUNS": "3",
    }
    if params.get("passfile"):
        env["PGPASSFILE"] = str(params["passfile"])
    return env


@pytest.fixture
def deployment(
    tmp_path: Path,
    migrated_db: str,
    pg_server_url: str,
    storage_db: str,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    """DAGSTER_HOME holding deploy/dagster.yaml, the Garage config of four sources, and the
    environment every process of the deployment shares (this process's too, for reading)."""
    home = tmp_path / "dagster"
    home.mkdir()
    shutil.copy(DEPLOY / "dagster.yaml", home / "dagster.yaml")
    folders = _folders(tmp_path)
    sources: list[dict[str, Any]] = [
        {"name": name, "roots": [str(folders[name])]} for name in SMALL
    ]
    sources.append({"name": LARGE, "roots": [str(folders[LARGE])], "include": ["*.txt"]})
    config = tmp_path / "garage.json"
    # No schedule, no file watch, no embedding model (so nothing follows ingest): every run
    # here is the test's own.
    config.write_text(
        json.dumps(
            {
                "sources": sources,
                "schedule": {"enabled": False, "watch": False},
                "embedding": {"models": []},
            }
        )
    )
    env = {
        **_storage_env(pg_server_url, storage_db),
        "DAGSTER_HOME": str(home),
        "GARAGE_CONFIG": str(config),
        "GARAGE_DATA_DIR": str(tmp_path / "data"),
        "GARAGE_DATABASE_URL": migrated_db,
        "GARAGE_CODE_SERVER_HOST": "127.0.0.1",
        "GARAGE_CODE_SERVER_PORT": str(free_port()),
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return {"home": home, "env": dict(os.environ), "url": migrated_db, "folders": folders}


def test_the_deployment_instance_queues_one_run_per_source(
    deployment: dict[str, Any], storage_db: str, pg_server_url: str
) -> None:
    with dg.DagsterInstance.from_config(str(deployment["home"])) as instance:
        coordinator = instance.run_coordinator
        assert isinstance(coordinator, dg.QueuedRunCoordinator)
        queue = coordinator.get_run_queue_config()
        assert queue.max_concurrent_runs == 3  # from DAGSTER_MAX_CONCURRENT_RUNS
        # The one-run-per-source limit is the one Garage's own instance has, to the letter.
        single = yaml.safe_load(instance_yaml(None))["run_queue"]["tag_concurrency_limits"]
        assert queue.tag_concurrency_limits == single
        assert [limit["limit"] for limit in single] == [1]
        assert type(instance.run_launcher).__name__ == "DefaultRunLauncher"
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
        assert instance.run_monitoring_enabled
        assert not instance.telemetry_enabled
    # Dagster made its tables in the database DAGSTER_PG_DB names, on the server of the index.
    server = {k: v for k, v in conninfo_to_dict(pg_server_url).items() if v is not None}
    with psycopg.connect(**{**server, "dbname": storage_db}) as conn:
        tables = {r[0] for r in conn.execute("SELECT tablename FROM pg_tables")}
    assert {"runs", "event_logs", "jobs", "instigators"} <= tables

    # The workspace names the code server by the variables the test set.
    [location] = yaml.safe_load((DEPLOY / "workspace.yaml").read_text())["load_from"]
    assert location["grpc_server"]["host"] == {"env": "GARAGE_CODE_SERVER_HOST"}
    assert location["grpc_server"]["port"] == {"env": "GARAGE_CODE_SERVER_PORT"}


# -- the daemon, a code server, backfills --------------------------------------------------------


def _start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A process of the deployment, in a session of its own (so that it and the run workers it
    starts can be stopped together), its output in ``log``."""
    with log.open("wb") as output:
        return subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    try:  # run workers the code server started, if any outlived it
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _wait_until(condition: Callable[[], Any], timeout: float, what: str, log: Path) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
            raise AssertionError(f"timed out waiting for {what}\n{tail}")
        time.sleep(0.2)
    return found


def _backfill(env: dict[str, str], partitions: str) -> subprocess.Popen[str]:
    """`dagster job backfill` over ``partitions`` through deploy/workspace.yaml: its runs go to
    the queue, and the daemon launches them."""
    return subprocess.Popen(
        [sys.executable, "-m", "dagster", "job", "backfill", "-w", str(DEPLOY / "workspace.yaml"),
         "-j", "ingest_job", "--partitions", partitions, "--noprompt"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finished(process: subprocess.Popen[str]) -> None:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, (out + err)[-3000:]


def _runs(instance: dg.DagsterInstance, partition: str) -> list[dg.DagsterRun]:
    runs = instance.get_runs(
        filters=dg.RunsFilter(job_name="ingest_job", tags={"dagster/partition": partition})
    )
    return sorted(runs, key=lambda run: run.run_id)


def _said(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [entry.user_message for entry in instance.all_logs(run_id)]


def _interval(instance: dg.DagsterInstance, run_id: str) -> tuple[float, float]:
    [record] = instance.get_run_records(filters=dg.RunsFilter(run_ids=[run_id]))
    assert record.start_time is not None and record.end_time is not None, record.dagster_run
    return record.start_time, record.end_time


def _documents(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT s.name, count(*) FROM documents d JOIN sources s ON s.id = d.source_id"
            " GROUP BY s.name"
        ).fetchall()
    return {name: count for name, count in rows}


def test_one_backfill_runs_sources_side_by_side_and_each_source_one_run_at_a_time(
    deployment: dict[str, Any], tmp_path: Path
) -> None:
    env, home, url = deployment["env"], deployment["home"], deployment["url"]
    port = int(env["GARAGE_CODE_SERVER_PORT"])
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for name in (*SMALL, LARGE):
            register_source(instance, name)

    code_log, daemon_log = tmp_path / "code-server.log", tmp_path / "daemon.log"
    code_server = _start(
        [sys.executable, "-m", "dagster", "api", "grpc", "-m", "garage_assets.definitions",
         "-a", "defs", "--location-name", "garage", "--host", "127.0.0.1", "--port", str(port)],
        env, code_log,
    )  # fmt: skip
    daemon = None
    try:

        def answering() -> bool:
            assert code_server.poll() is None, code_log.read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False

        _wait_until(answering, 180, "the code server", code_log)
        daemon = _start(
            [sys.executable, "-m", "dagster._daemon", "run",
             "--workspace", str(DEPLOY / "workspace.yaml")],
            env, daemon_log,
        )  # fmt: skip
        with dg.DagsterInstance.from_config(str(home)) as instance:
            _side_by_side(instance, env, url, daemon_log)
            _one_at_a_time(instance, env, url, daemon_log)
        assert daemon.poll() is None, daemon_log.read_text()[-3000:]
    finally:
        if daemon is not None:
            _stop(daemon)
        _stop(code_server)


def _side_by_side(instance: dg.DagsterInstance, env: dict[str, str], url: str, log: Path) -> None:
    """One backfill over the three small sources: three runs at once, none waiting for another.

    A few files index in under a second, so whether two runs' intervals overlap would depend on
    how fast each worker process starts on a busy machine. A terminal's writer of all three
    sources (this process) holds them until every run is inside its asset waiting for its own
    source: three runs in progress at once is then a fact, and with the queue letting fewer go
    at a time the third would never start and the wait would time out."""
    with psycopg.connect(url, autocommit=True) as conn, writing(conn, SMALL, "ingest"):
        _finished(_backfill(env, ",".join(SMALL)))

        def all_waiting() -> list[dg.DagsterRun] | None:
            runs = [run for name in SMALL for run in _runs(instance, name)]
            if len(runs) != 3 or any(r.status != dg.DagsterRunStatus.STARTED for r in runs):
                return None
            for run in runs:
                name = run.tags["dagster/partition"]
                said = _said(instance, run.run_id)
                if not any(f"waiting for source '{name}'" in message for message in said):
                    return None
            return runs

        runs = _wait_until(all_waiting, 300, "three runs waiting for their sources", log)
        # Each run said who holds its source: the Dagster door takes the same lock.
        for run in runs:
            said = _said(instance, run.run_id)
            assert any(
                f"it is being written by `garage ingest` (pid {os.getpid()}," in message
                for message in said
            ), said
    # Released: every run goes on, and ends.
    _wait_until(
        lambda: all(instance.get_run_by_id(r.run_id).is_finished for r in runs),  # type: ignore[union-attr]
        300,
        "the three runs to finish",
        log,
    )
    for run in runs:
        status = instance.get_run_by_id(run.run_id).status  # type: ignore[union-attr]
        assert status == dg.DagsterRunStatus.SUCCESS, _said(instance, run.run_id)[-20:]
    intervals = [_interval(instance, run.run_id) for run in runs]
    # Every two of them were running at the same time.
    for i, (start_i, end_i) in enumerate(intervals):
        for start_j, end_j in intervals[i + 1 :]:
            assert max(start_i, start_j) < min(end_i, end_j), intervals
    assert _documents(url) == {name: 4 for name in SMALL}


def _one_at_a_time(instance: dg.DagsterInstance, env: dict[str, str], url: str, log: Path) -> None:
    """Two runs of one source queued together: the second waits in the queue, not beside the
    first. While the first holds the source, `garage ingest SOURCE --no-wait` is refused with
    the run's name."""
    first_backfill, second_backfill = _backfill(env, LARGE), _backfill(env, LARGE)
    _finished(first_backfill)
    _finished(second_backfill)
    with psycopg.connect(url, autocommit=True) as conn:

        def a_run_holds_it() -> Any:
            held = holder_of(conn, LARGE)
            by_a_run = held is not None and (held.door or "").startswith("Dagster run")
            return held if by_a_run else None

        holder = _wait_until(a_run_holds_it, 300, f"a run to hold {LARGE!r}", log)
        # Held still (the worker stopped, its session and lock kept), so the terminal below
        # meets it whatever the machine's speed; it goes on afterwards.
        os.kill(holder.pid, signal.SIGSTOP)
        try:
            runs = _runs(instance, LARGE)
            assert len(runs) == 2, runs
            [first] = [r for r in runs if r.run_id.startswith(holder.door.split()[-1])]
            [second] = [r for r in runs if r is not first]
            # max_concurrent_runs is 3: only the per-source limit keeps the second queued.
            assert first.status == dg.DagsterRunStatus.STARTED
            assert second.status == dg.DagsterRunStatus.QUEUED
            busy = subprocess.run(
                [sys.executable, "-m", "garage.cli", "ingest", LARGE, "--no-wait"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
        finally:
            os.kill(holder.pid, signal.SIGCONT)
    assert busy.returncode == EXIT_BUSY, busy.stderr[-2000:]
    assert (
        f"source {LARGE!r} is being written by `ingest` in Dagster run {first.run_id[:8]} "
        f"(pid {holder.pid}, since " in busy.stderr
    ), busy.stderr[-2000:]

    _wait_until(lambda: all(r.is_finished for r in _runs(instance, LARGE)), 600, "both runs", log)
    assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in _runs(instance, LARGE))
    first_start, first_end = _interval(instance, first.run_id)
    second_start, second_end = _interval(instance, second.run_id)
    assert first_end <= second_start, (first_start, first_end, second_start, second_end)
    documents = _documents(url)
    assert documents[LARGE] == 292 and documents == {**{n: 4 for n in SMALL}, LARGE: 292}
