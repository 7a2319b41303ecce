"""``garage db start|stop|status|url|migrate``."""

from __future__ import annotations

import click

from garage.cli.common import GarageContext, echo_json, user_errors
from garage.config import data_dir
from garage.db import connect, embedded, resolve_url
from garage.db.connect import redact
from garage.db.introspect import EXTENSIONS, server_info
from garage.db.migrate import migrate


@click.group("db")
def db_group() -> None:
    """Start, stop, inspect and migrate Garage's PostgreSQL."""


@db_group.command("start")
@click.pass_obj
def db_start(obj: GarageContext) -> None:
    """Start the embedded PostgreSQL (or reuse the running one) and print its URL."""
    config = obj.config()
    if config.database.url:
        click.echo(f"using the external server {redact(config.database.url)}; nothing to start")
        return
    with user_errors():
        click.echo(resolve_url(config))


@db_group.command("stop")
@click.pass_obj
def db_stop(obj: GarageContext) -> None:
    """Stop the embedded PostgreSQL."""
    config = obj.config()
    if config.database.url:
        raise click.ClickException("an external server is configured; Garage does not stop it")
    with user_errors():
        try:
            stopped = embedded.stop(data_dir(config))
        except embedded.EmbeddedError as error:
            raise click.ClickException(str(error)) from None
    click.echo("stopped" if stopped else "not running")


@db_group.command("url")
@click.pass_obj
def db_url(obj: GarageContext) -> None:
    """Print the URL Garage connects to (starting the embedded server if needed)."""
    with user_errors():
        click.echo(resolve_url(obj.config()))


def _status(obj: GarageContext) -> dict[str, object]:
    config = obj.config()
    external = bool(config.database.url)
    report: dict[str, object] = {"mode": "external" if external else "embedded"}
    if external:
        url = config.database.url
        report["running"] = None  # known only by connecting, below
    else:
        current = embedded.status(data_dir(config))
        url = current.url
        report["running"] = current.running
        report["pgdata"] = str(current.pgdata)
    report["url"] = redact(url) if url else None
    if url is None:
        # Not running: what the wheel ships is what the server will offer once started.
        bundled = embedded.bundled_extensions()
        report["extensions"] = {
            name: {"available": name in bundled, "version": None, "installed": None}
            for name in EXTENSIONS
        }
        report["hint"] = "run `garage db start`"
        return report
    with user_errors(), connect(url, autocommit=True) as conn:
        info = server_info(conn)
        migrated = conn.execute(
            "SELECT count(*) AS n FROM pg_tables WHERE tablename = 'schema_migrations'"
        ).fetchone()
        applied = 0
        if migrated and migrated["n"]:
            row = conn.execute("SELECT count(*) AS n FROM schema_migrations").fetchone()
            applied = row["n"] if row else 0
    report["running"] = True
    report["server_version"] = info.version
    report["extensions"] = {
        name: {
            "available": info.available[name] is not None,
            "version": info.available[name],
            "installed": info.installed[name],
        }
        for name in EXTENSIONS
    }
    report["migrations_applied"] = applied
    return report


@db_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def db_status(obj: GarageContext, as_json: bool) -> None:
    """Report the server URL, version, and whether pgvector and Apache AGE are available."""
    report = _status(obj)
    if as_json:
        echo_json(report)
        return
    click.echo(f"mode:     {report['mode']}")
    click.echo(f"running:  {report['running']}")
    click.echo(f"url:      {report['url'] or '-'}")
    if "server_version" in report:
        click.echo(f"version:  PostgreSQL {report['server_version']}")
        extensions: dict[str, dict[str, object]] = report["extensions"]  # type: ignore[assignment]
        for name, ext in extensions.items():
            state = f"available {ext['version']}" if ext["available"] else "absent"
            if ext["installed"]:
                state += f", installed {ext['installed']}"
            click.echo(f"{name + ':':<9} {state}")
        click.echo(f"migrations applied: {report['migrations_applied']}")
    elif "hint" in report:
        click.echo(report["hint"])


@db_group.command("migrate")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def db_migrate(obj: GarageContext, as_json: bool) -> None:
    """Apply pending schema migrations (and create the AGE graph where AGE exists)."""
    with user_errors():
        url = resolve_url(obj.config())
        with connect(url, autocommit=True) as conn:
            result = migrate(conn)
    if as_json:
        echo_json(result)
        return
    for name in result.applied:
        click.echo(f"applied {name}")
    click.echo(
        f"{len(result.applied)} applied, {len(result.already)} already applied; "
        f"graph: {result.graph}"
    )
