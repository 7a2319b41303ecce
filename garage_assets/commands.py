"""The Dagster layer's part of the ``garage`` command: ``garage dagster`` (also ``garage up``),
``garage down``, and the ``sources`` partition kept in step when ``garage sources add`` or
``remove`` changes the config.

The library's click group names none of this: it loads what the ``garage.cli`` and
``garage.sources`` entry points (pyproject.toml) point at, so ``garage/`` imports nothing of
Dagster's layer, and Dagster itself is imported only when one of these commands runs.

``garage_assets.ui`` runs the webserver (behind the loopback guard: Host and Origin checked)
and the daemon (sensors, schedules, the run queue) with ``DAGSTER_HOME`` inside Garage's data
directory. Its storage is the index's PostgreSQL server, in a database of its own, unless
``--sqlite`` asks for files under ``DAGSTER_HOME``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import httpx

from garage.cli.common import GarageContext, echo_json, user_errors
from garage.config import GarageConfig, dagster_home
from garage.orchestrator import ensure_database, storage_of, write_instance_config

PID_FILE = "dagster-dev.pid"
LOG_FILE = "dagster-dev.log"
START_TIMEOUT_SECONDS = 240.0


def prepare_instance(config: GarageConfig, *, sqlite: bool) -> tuple[Path, str]:
    """Write the instance config and register every configured source's partition in it."""
    home = dagster_home(config)
    storage_url = None
    if not sqlite:
        from garage.db import resolve_url
        from garage.db.migrate import ensure_migrated

        url = resolve_url(config)  # starts the embedded server when no URL is configured
        ensure_migrated(url)
        storage_url = ensure_database(url, config.database.dagster_database)
    write_instance_config(home, storage_url)
    # Imported here: the rest of the CLI does not need Dagster loaded.
    from garage_assets.partitions import instance_at, register_source

    with instance_at(home) as instance:
        for source in config.sources:
            register_source(instance, source.name)
    return home, storage_of(home)


def _pid(home: Path) -> int | None:
    try:
        pid = int((home / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass
    return pid


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group, zombies left out.

    A killed process stays a zombie until its parent reaps it, and a detached session's
    parent is init, which may take its time; ``killpg(pgid, 0)`` still succeeds on those, so
    /proc is read instead where it exists.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone between the listing and the read
        # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def _answers(url: str) -> bool:
    from garage.owner_login import HEALTH_PATH

    try:
        return httpx.get(f"{url}{HEALTH_PATH}", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


@click.command("dagster")
@click.option("--sqlite", is_flag=True, help="Keep Dagster's state in SQLite under DAGSTER_HOME.")
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Loopback address the UI listens on."
)
@click.option("--port", default=3000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--detach", is_flag=True, help="Run in the background; stop with `garage down`.")
@click.option(
    "--init-only",
    is_flag=True,
    help="Write DAGSTER_HOME and register the sources' partitions, print DAGSTER_HOME, exit.",
)
@click.option("--json", "as_json", is_flag=True, help="With --detach: print what started as JSON.")
@click.option(
    "--pages/--no-pages",
    default=True,
    show_default=True,
    help="Serve Garage's pages (Search, Ask, Facts, Graph, Sources) at /garage/ too.",
)
@click.option(
    "--login", "login_only", is_flag=True,
    help="Print a new one-time login link for the running UI, and exit.",
)  # fmt: skip
@click.pass_obj
def dagster_cmd(
    obj: GarageContext,
    sqlite: bool,
    host: str,
    port: int,
    detach: bool,
    init_only: bool,
    as_json: bool,
    pages: bool,
    login_only: bool,
) -> None:
    """Start the Dagster UI and daemon (sensors, the hourly schedule, backfills).

    Only the account that runs it gets in: open the one-time login link it prints (good once,
    for ten minutes); `garage up --login` prints a new one.
    """
    from garage.loopback import NotLoopback, check_binding

    try:
        check_binding(host)
    except NotLoopback as error:
        raise click.ClickException(str(error)) from None
    config = obj.config()
    with user_errors():
        home, storage = prepare_instance(config, sqlite=sqlite)
    if init_only:
        if as_json:
            echo_json({"dagster_home": str(home), "storage": storage})
        else:
            click.echo(str(home))
        return
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    if login_only:
        link = _login_link(config, url)
        if as_json:
            echo_json({"login": link})
        else:
            click.echo(link)
        return
    env = dict(os.environ, DAGSTER_HOME=str(home), GARAGE_CONFIG=str(obj.path.resolve()))
    command = [sys.executable, "-m", "garage_assets.ui", "--host", host, "--port", str(port)]
    if not pages:
        command.append("--no-pages")
    if not detach:
        click.echo(f"Dagster UI on {url} (DAGSTER_HOME={home}, {storage} storage); Ctrl-C stops")
        if pages:
            click.echo(f"Garage's pages on {url}/garage/")
        click.echo(f"Sign in: {_login_link(config, url)} (once, within 10 minutes)")
        os.execve(sys.executable, command, env)
    running = _pid(home)
    if running is not None:
        raise click.ClickException(
            f"Dagster already runs from {home} (pid {running}); `garage down` stops it"
        )
    log_path = home / LOG_FILE
    with open(log_path, "ab") as log:
        # A session of its own: `garage down` stops the webserver, the daemon and the code
        # server together, and a terminal closing does not.
        process = subprocess.Popen(
            command, env=env, cwd=home, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    (home / PID_FILE).write_text(f"{process.pid}\n")
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _answers(url):
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log_path.read_text(errors="replace").splitlines()[-25:]
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
            (home / PID_FILE).unlink(missing_ok=True)
            raise click.ClickException(
                f"Dagster did not come up on {url}; the end of {log_path}:\n" + "\n".join(tail)
            )
        time.sleep(1.0)
    link = _login_link(config, url)
    info = {"url": url, "pid": process.pid, "dagster_home": str(home), "storage": storage,
            "log": str(log_path), "pages": f"{url}/garage/" if pages else None,
            "login": link}  # fmt: skip
    if as_json:
        echo_json(info)
    else:
        click.echo(f"Dagster UI on {url} (pid {process.pid}, {storage} storage, log {log_path})")
        if pages:
            click.echo(f"Garage's pages on {url}/garage/")
        click.echo(f"Sign in: {link} (once, within 10 minutes; `garage up --login` for another)")


def _login_link(config: GarageConfig, url: str) -> str:
    """A fresh one-time link that signs this browser in as the owner (garage.owner_login)."""
    from garage.config import data_dir
    from garage.owner_login import login_url, new_login, secrets_folder
    from garage.tokens import TokenFileError

    try:
        return login_url(url, new_login(secrets_folder(data_dir(config))))
    except (TokenFileError, OSError) as error:
        raise click.ClickException(f"cannot make a login link: {error}") from None


@click.command("down")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def down_cmd(obj: GarageContext, as_json: bool) -> None:
    """Stop the Dagster UI and daemon that `garage up --detach` started."""
    home = dagster_home(obj.config())
    pid = _pid(home)
    stopped = False
    if pid is not None:
        # The session `garage up` made, and only its processes: the webserver, the daemon and
        # the code servers they spawned. A code server can outlive its parent's SIGTERM, so the
        # whole group is waited for, and killed if it lingers.
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while _group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if _group_alive(pid):
            os.killpg(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while _group_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
        stopped = True
    (home / PID_FILE).unlink(missing_ok=True)
    if as_json:
        click.echo(json.dumps({"stopped": stopped, "pid": pid}))
    else:
        click.echo(f"stopped Dagster (pid {pid})" if stopped else "Dagster was not running")


def source_partition(config: GarageConfig, name: str, *, add: bool) -> str:
    """Add or remove source ``name``'s partition after the config changed; a note to print
    (empty when nothing needed saying). Called through the ``garage.sources`` entry point."""
    # Imported here: `garage sources` does not need Dagster loaded until now.
    from garage.orchestrator import storage_problem
    from garage_assets.partitions import instance_at, register_source, unregister_source

    home = dagster_home(config)
    verb = "registered" if add else "removed"
    later = "`garage up` or the partitions sensor will"
    problem = storage_problem(home)
    if problem:
        return f"partition not {verb} in {home} now: {problem}; {later}"
    try:
        with instance_at(home) as instance:
            changed = register_source(instance, name) if add else unregister_source(instance, name)
    except Exception as error:  # the instance's PostgreSQL is down, its file is damaged, …
        # The config is already saved, and the partitions sensor (or the next `garage up`)
        # brings the partitions in step with it: say so rather than fail the command.
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else ""
        return f"partition not {verb} in {home} now ({type(error).__name__}: {first_line}); {later}"
    return f"partition {verb} in {home}" if changed else ""


def register(cli: click.Group) -> None:
    """Add the Dagster commands to the ``garage`` group (the ``garage.cli`` entry point)."""
    cli.add_command(dagster_cmd)
    cli.add_command(dagster_cmd, name="up")
    cli.add_command(down_cmd)
