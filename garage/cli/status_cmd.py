"""``garage status [SOURCE]``: where each source stands, and how long its embedding has left."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import click

from garage.cli.common import GarageContext, echo_json, user_errors
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated

if TYPE_CHECKING:
    from garage.status import ModelStanding, SourceStatus


@click.command("status")
@click.argument("source", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def status_cmd(obj: GarageContext, source: str | None, as_json: bool) -> None:
    """Per source (default: every one): documents indexed, chunks, the last ingest run, and per
    embedding model the chunks embedded and waiting, with the time left.

    The time left is the waiting chunks at the rate `garage embed` was measured at over its
    last runs; before any run is measured, it says the rate is unknown.
    """
    from garage.status import source_status, totals

    config = obj.config()
    configured = [s.name for s in config.sources]
    with user_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url, autocommit=True) as conn:
            statuses = source_status(
                conn, None if source is None else [source], configured=configured
            )
    if source is not None and statuses[0].kind is None and source not in configured:
        known = ", ".join(configured) or "none configured"
        raise click.ClickException(f"no source named {source!r} (sources: {known})")
    # Over every source, when more than one has something to add up.
    overall = totals(statuses) if sum(1 for s in statuses if s.models) > 1 else []
    if as_json:
        echo_json(
            {
                "sources": [_as_dict(s) for s in statuses],
                "all_sources": [_model_dict(m) for m in overall],
            }
        )
        return
    if not statuses:
        click.echo("no sources; add one with `garage sources add NAME FOLDER`")
        return
    for status in statuses:
        _echo_source(status)
    if overall:
        click.echo("all sources:")
        for standing in overall:
            _echo_model(standing)


def _as_dict(status: SourceStatus) -> dict[str, Any]:
    out = asdict(status)
    out["models"] = [_model_dict(m) for m in status.models]
    return out


def _model_dict(standing: ModelStanding) -> dict[str, Any]:
    return asdict(standing) | {"estimate": standing.estimate}


def _echo_source(status: SourceStatus) -> None:
    if status.kind is None:
        click.echo(f"{status.name}: never ingested (`garage ingest {status.name}`)")
        return
    facts = (
        f"; {status.documents_with_facts} with potential facts"
        if status.documents_with_facts
        else ""
    )
    click.echo(
        f"{status.name} ({status.kind}): {_count(status.documents, 'document')} indexed{facts}, "
        f"{_count(status.chunks, 'chunk')}"
    )
    run = status.last_ingest
    if run is None:
        click.echo("  last ingest: none recorded")
    else:
        if run.completed:
            state = f"completed {run.finished_at:%Y-%m-%d %H:%M:%S %Z}"
        elif run.finished_at is None:
            state = f"started {run.started_at:%Y-%m-%d %H:%M:%S %Z}, running or killed"
        else:
            state = f"incomplete, stopped {run.finished_at:%Y-%m-%d %H:%M:%S %Z}" + (
                f" ({run.stop_reason})" if run.stop_reason else ""
            )
        failed = f", {run.failed:,} failed" if run.failed else ""
        click.echo(
            f"  last ingest: {state}; {_count(run.seen, 'file')} seen, {run.indexed:,} indexed"
            f"{failed}"
        )
    if not status.models:
        click.echo("  no embedding model registered (`garage embed` registers the configured)")
    for standing in status.models:
        _echo_model(standing)


def _echo_model(standing: ModelStanding) -> None:
    default = " (default)" if standing.is_default else ""
    click.echo(
        f"  {standing.model}{default}: {_count(standing.embedded, 'chunk')} embedded, "
        f"{standing.pending:,} waiting; {standing.estimate}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")
