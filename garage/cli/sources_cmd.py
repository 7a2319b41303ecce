"""``garage sources add|list|remove``: the sources section of the config, and their partitions."""

from __future__ import annotations

from pathlib import Path

import click

from garage.cli.common import GarageContext, echo_json, extensions, user_errors
from garage.config import ConfigError, SourceConfig, save_config
from garage.config.model import GarageConfig


@click.group("sources")
def sources_group() -> None:
    """Add, list and remove the folders, mail stores and chat databases Garage indexes."""


def _source_changed(config: GarageConfig, name: str, *, add: bool) -> list[str]:
    """Tell the layers that keep something per source (the Dagster layer's partitions, through
    the ``garage.sources`` entry points) that ``name`` was added or removed; their notes."""
    return [note for hook in extensions("garage.sources") if (note := hook(config, name, add=add))]


@sources_group.command("add")
@click.argument("name")
@click.argument("roots", nargs=-1, required=True, type=click.Path(file_okay=True))
@click.option(
    "--kind", type=click.Choice(["files", "mail", "messages"]), default="files", show_default=True
)
@click.option(
    "--class",
    "corpus_class",
    type=click.Choice(["document", "code", "communication"]),
    help="Default corpus class (mail and messages are always communication).",
)
@click.option("--include", multiple=True, help="Glob of paths to index (repeatable).")
@click.option("--exclude", multiple=True, help="Glob of paths to skip (repeatable).")
@click.option("--no-default-excludes", is_flag=True, help="Also walk VCS folders, caches, …")
@click.option("--author", help="Who wrote this source's files when nothing else says.")
@click.pass_obj
def sources_add(
    obj: GarageContext,
    name: str,
    roots: tuple[str, ...],
    kind: str,
    corpus_class: str | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    no_default_excludes: bool,
    author: str | None,
) -> None:
    """Add source NAME reading ROOTS, and register its partition."""
    config = obj.config(overrides=False)
    if any(s.name == name for s in config.sources):
        raise click.ClickException(f"a source named {name!r} already exists in {obj.path}")
    if corpus_class is None:
        corpus_class = "communication" if kind in ("mail", "messages") else "document"
    with user_errors():
        try:
            source = SourceConfig(
                name=name,
                kind=kind,  # type: ignore[arg-type]
                roots=[str(Path(root).expanduser().resolve()) for root in roots],
                include=list(include),
                exclude=list(exclude),
                default_excludes=not no_default_excludes,
                corpus_class=corpus_class,  # type: ignore[arg-type]
                default_author=author,
            )
        except ValueError as error:
            raise ConfigError(f"source {name!r}: {error}") from None
        for root in source.root_paths():
            if not root.exists():
                raise ConfigError(f"source {name!r}: root {root} does not exist")
        updated = config.model_copy(update={"sources": [*config.sources, source]})
        updated = GarageConfig.model_validate(updated.model_dump())
        save_config(updated, obj.path)
    notes = _source_changed(updated, name, add=True)
    click.echo(f"added source {name} ({kind}, {len(source.roots)} root(s)) to {obj.path}")
    for note in notes:
        click.echo(note)


def _counts(config: GarageConfig) -> dict[str, dict[str, object]]:
    """Per-source counts from the database, when it is running and migrated; else nothing."""
    from garage.db import connect, resolve_url
    from garage.ingest.totals import all_source_totals

    try:
        url = resolve_url(config, start=False)
        with connect(url) as conn:
            return all_source_totals(conn)
    except Exception:  # no server, not migrated, unreachable: the counts are optional
        return {}


@sources_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_obj
def sources_list(obj: GarageContext, as_json: bool) -> None:
    """List the configured sources, with their document and chunk counts."""
    config = obj.config()
    counts = _counts(config) if config.sources else {}
    if as_json:
        echo_json(
            [
                source.model_dump(mode="json") | {"counts": counts.get(source.name)}
                for source in config.sources
            ]
        )
        return
    if not config.sources:
        click.echo(f"no sources in {obj.path}; add one with `garage sources add NAME FOLDER`")
        return
    for source in config.sources:
        state = "" if source.enabled else " (disabled)"
        known = counts.get(source.name)
        tally = (
            f"\t{known['documents']} documents, {known['chunks']} chunks, "
            f"last ingest {known['last_ingest'] or 'never'}"
            if known
            else "\tnot ingested yet"
        )
        click.echo(f"{source.name}\t{source.kind}\t{source.corpus_class}{state}{tally}")
        for root in source.roots:
            click.echo(f"  {root}")


@sources_group.command("remove")
@click.argument("name")
@click.pass_obj
def sources_remove(obj: GarageContext, name: str) -> None:
    """Remove source NAME from the config and its partition. Indexed rows stay until purged."""
    config = obj.config(overrides=False)
    if not any(s.name == name for s in config.sources):
        raise click.ClickException(f"no source named {name!r} in {obj.path}")
    updated = config.model_copy(update={"sources": [s for s in config.sources if s.name != name]})
    with user_errors():
        save_config(updated, obj.path)
    notes = _source_changed(updated, name, add=False)
    click.echo(f"removed source {name} from {obj.path}")
    for note in notes:
        click.echo(note)
