"""``garage ingest [SOURCE]``: the same library pass the ``documents`` asset runs."""

from __future__ import annotations

import sys

import click

from garage.cli.common import GarageContext, echo_json, user_errors
from garage.config import SourceConfig
from garage.db import connect, resolve_url
from garage.db.migrate import ensure_migrated


@click.command("ingest")
@click.argument("source", required=False)
@click.option("--limit", type=click.IntRange(min=1), help="Stop after N files (a partial run).")
@click.option("--force", is_flag=True, help="Delete even when more than 25% would go.")
@click.option("--json", "as_json", is_flag=True, help="Print the run reports as JSON.")
@click.pass_obj
def ingest_cmd(
    obj: GarageContext, source: str | None, limit: int | None, force: bool, as_json: bool
) -> None:
    """Index SOURCE (default: every enabled source): new and changed files only."""
    from garage.ingest import IngestError, ingest_source

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
    refused = False
    with user_errors():
        url = resolve_url(config)
        ensure_migrated(url)
        with connect(url, autocommit=True) as conn:
            for item in sources:
                with _progress(item.name, quiet=as_json) as progress:
                    try:
                        report = ingest_source(
                            conn, config, item, limit=limit, force=force, progress=progress
                        )
                    except IngestError as error:
                        raise click.ClickException(str(error)) from None
                reports.append(report)
                refused = refused or report.deletion_refused is not None
                if not as_json:
                    click.echo(report.summary())
                    for line in report.errors[:20]:
                        click.echo(f"  {line}", err=True)
                    if len(report.errors) > 20:
                        click.echo(f"  … and {len(report.errors) - 20} more", err=True)
    if as_json:
        echo_json([r.as_dict() for r in reports])
    if refused:
        sys.exit(3)


class _progress:
    """A progress bar on stderr, counting files as they are decided."""

    def __init__(self, name: str, *, quiet: bool):
        self.name = name
        self.quiet = quiet or not sys.stderr.isatty()
        self.bar = None

    def __enter__(self):  # type: ignore[no-untyped-def]
        if self.quiet:
            return lambda event, path: None
        from tqdm import tqdm

        self.bar = tqdm(desc=f"ingest {self.name}", unit=" files", leave=False)

        def update(event: str, path: str) -> None:
            assert self.bar is not None
            self.bar.update(1)
            if event in ("indexed", "failed"):
                self.bar.set_postfix_str(path[-40:], refresh=False)

        return update

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()
