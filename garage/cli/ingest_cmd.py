"""``garage ingest [SOURCE]``: the same library pass the ``documents`` asset runs."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click
from psycopg import Connection

from garage.cli.common import (
    GarageContext,
    ProgressBars,
    echo_json,
    no_wait_option,
    user_errors,
    waiting,
)
from garage.config import SourceConfig
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated

# Exit statuses a script can act on (also in the README).
EXIT_FAILED_FILES = 4  # the walk finished, but some files failed (each printed with its reason)
EXIT_REFUSED = 3  # the deletion guard refused: run again with --force if the files are gone
EXIT_STOPPED = 143  # stopped by SIGTERM between documents (128 + 15): incomplete, nothing deleted


@click.command("ingest")
@click.argument("source", required=False)
@click.option("--limit", type=click.IntRange(min=1), help="Stop after N files (a partial run).")
@click.option("--force", is_flag=True, help="Delete even when more than 25% would go.")
@click.option("--json", "as_json", is_flag=True, help="Print the run reports as JSON.")
@no_wait_option
@click.pass_obj
def ingest_cmd(
    obj: GarageContext,
    source: str | None,
    limit: int | None,
    force: bool,
    as_json: bool,
    no_wait: bool,
) -> None:
    """Index SOURCE (default: every enabled source): new and changed files only.

    Exit status: 0 when every run completed with no failed file; 4 when a run finished but
    some files failed (each is printed with its reason, and the rest is indexed); 3 when the
    deletion guard refused; 143 when stopped by SIGTERM (the run is incomplete and nothing was
    deleted); 75 with --no-wait when another run is writing the source; 1 on an error that
    stopped the run.

    One run writes a source at a time: while another (a Dagster run, another terminal) holds
    it, this one waits, saying who holds it.
    """
    from garage.ingest import IngestError, ingest_source
    from garage.stopping import stop_on_sigterm

    config = obj.config()
    if source is not None:
        try:
            sources: list[SourceConfig] = [config.source(source)]
        except KeyError as error:
            raise click.ClickException(str(error.args[0])) from None
    else:
        sources = [s for s in config.sources if s.enabled]
        if not sources:
            raise click.ClickException(
                f"no sources in {obj.path}; add one with `garage sources add NAME FOLDER`"
            )
    reports = []
    with user_errors(), stop_on_sigterm() as stop:
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url, autocommit=True) as conn:
            for item in sources:
                if stop.requested:
                    break
                with ProgressBars(" files", quiet=as_json) as bars:
                    try:
                        report = ingest_source(
                            conn,
                            config,
                            item,
                            limit=limit,
                            force=force,
                            progress=_counting(conn, bars, item.name, limit),
                            stop=stop,
                            waiting=waiting(no_wait, stop),
                        )
                    except IngestError as error:
                        raise click.ClickException(str(error)) from None
                reports.append(report)
                if not as_json:
                    click.echo(report.summary())
                    for line in report.errors[:20]:
                        click.echo(f"  {line}", err=True)
                    if len(report.errors) > 20:
                        click.echo(f"  … and {len(report.errors) - 20} more", err=True)
    if as_json:
        echo_json([r.as_dict() for r in reports])
    if stop.requested:
        sys.exit(EXIT_STOPPED)
    if any(r.deletion_refused is not None for r in reports):
        sys.exit(EXIT_REFUSED)
    if any(r.failed for r in reports):
        sys.exit(EXIT_FAILED_FILES)


def _counting(
    conn: Connection[Any], bars: ProgressBars, source: str, limit: int | None
) -> Callable[[str, str], None] | None:
    """Count the files of a run as they are decided, on a bar that expects as many as the
    source's last complete walk saw (the first walk shows its rate only)."""
    if bars.quiet:
        return None
    from garage.status import expected_files

    stage = f"ingest {source}"
    expected = expected_files(conn, source) or 0
    bars(stage, 0, min(expected, limit) if limit is not None else expected)

    def update(event: str, path: str) -> None:
        bars(stage, 1)
        if event in ("indexed", "failed"):
            bars.note(stage, path[-40:])

    return update
